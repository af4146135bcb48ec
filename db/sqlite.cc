#include "db/sqlite.h"

#include <sqlite3.h>

#include <fmt/format.h>

namespace fusetune::db {

// ---- Statement ----

Statement::Statement(Connection* conn, sqlite3_stmt* stmt, bool* in_use)
    : conn_(conn), stmt_(stmt), in_use_(in_use) {}

Statement::Statement(Statement&& other) noexcept
    : conn_(other.conn_), stmt_(other.stmt_), in_use_(other.in_use_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  if (in_use_ == nullptr) {
    sqlite3_finalize(stmt_);
  } else {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *in_use_ = false;
  }
}

Statement& Statement::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) conn_->Fail(rc, "bind");
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) conn_->Fail(rc, "bind");
  return *this;
}

Statement& Statement::Bind(int index, std::string_view text) {
  int rc =
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) conn_->Fail(rc, "bind");
  return *this;
}

Statement& Statement::BindBlob(int index, const std::vector<uint8_t>& blob) {
  // A zero-length blob (not NULL) is stored as an empty blob.
  static const uint8_t kEmpty = 0;
  const void* data = blob.empty() ? &kEmpty : blob.data();
  int rc = sqlite3_bind_blob64(stmt_, index, data, blob.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) conn_->Fail(rc, "bind");
  return *this;
}

Statement& Statement::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) conn_->Fail(rc, "bind");
  return *this;
}

bool Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  conn_->Fail(rc, sqlite3_sql(stmt_));
}

void Statement::Run() {
  while (Step()) {
  }
}

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::Double(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  int n = sqlite3_column_bytes(stmt_, column);
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(n));
}

std::vector<uint8_t> Statement::Blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  int n = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || n <= 0) return {};
  const auto* bytes = static_cast<const uint8_t*>(data);
  return std::vector<uint8_t>(bytes, bytes + n);
}

std::optional<int64_t> Statement::OptInt(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Int(column);
}

// ---- Connection ----

Connection::Connection(const std::string& path, bool read_only, bool create) : path_(path) {
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
  // NOMUTEX: the Store serialises all use of a connection with its own mutex.
  flags |= SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(fmt::format("cannot open database {}: {}", path, message), rc);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close(db_);
}

Statement Connection::Prepare(std::string_view sql) {
  auto it = cache_.find(std::string(sql));
  if (it != cache_.end() && !it->second.in_use) {
    it->second.in_use = true;
    return Statement(this, it->second.stmt, &it->second.in_use);
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) Fail(rc, sql);
  if (it == cache_.end()) {
    // Element references of an unordered_map survive rehashing, so the flag pointer stays valid.
    auto& slot = cache_.emplace(std::string(sql), Cached{stmt, true}).first->second;
    return Statement(this, stmt, &slot.in_use);
  }
  return Statement(this, stmt, nullptr);  // the cached one is busy (nested use): owned copy
}

void Connection::Exec(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    throw StoreError(fmt::format("{}: {} (while running: {})", path_, message, text.substr(0, 200)),
                     rc);
  }
}

int64_t Connection::Changes() const { return sqlite3_changes64(db_); }

int64_t Connection::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

void Connection::Fail(int code, std::string_view what) const {
  throw StoreError(fmt::format("{}: {} (while running: {})", path_, sqlite3_errmsg(db_),
                               std::string(what.substr(0, 200))),
                   code);
}

// ---- Transaction ----

Transaction::Transaction(Connection& conn, Mode mode) : conn_(conn) {
  conn_.Exec(mode == Mode::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

Transaction::~Transaction() {
  if (!done_) {
    // Never throws from a destructor: a failed rollback leaves SQLite to roll back on close.
    sqlite3_exec(conn_.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Transaction::Commit() {
  conn_.Exec("COMMIT");
  done_ = true;
}

}  // namespace fusetune::db
