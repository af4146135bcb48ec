// Opening the Database: refuse anything that is not a fusetune file we can read, before a single
// byte is written (WAL mode and migrations both write), then configure and migrate.
#include "db/database.h"

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <sqlite3.h>

#include "db/schema.h"
#include "db/sqlite.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

// Switching a file to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once, without
// calling the busy handler, while another connection holds a lock on it: several processes (or a
// server's threads) opening one fresh file. Retried until the busy timeout, as other statements
// wait.
void SetWalMode(Connection& conn, int busy_timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  for (;;) {
    try {
      conn.Exec("PRAGMA journal_mode = WAL");
      return;
    } catch (const StoreError& e) {
      if ((e.sqlite_code() & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline)
        throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

namespace fs = std::filesystem;

constexpr char kSqliteMagic[16] = "SQLite format 3";  // 15 chars + NUL, as in the file header

// A non-empty file must start with SQLite's header; SQLite itself would only find out lazily.
void CheckHeader(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  if (!fs::is_regular_file(path, ec)) {
    throw UserError(fmt::format("{} is not a regular file; give --db a file path", path));
  }
  if (fs::file_size(path, ec) == 0) return;  // SQLite treats an empty file as a new database
  std::ifstream in(path, std::ios::binary);
  std::array<char, 16> header{};
  in.read(header.data(), header.size());
  if (!in || std::memcmp(header.data(), kSqliteMagic, sizeof kSqliteMagic) != 0) {
    throw UserError(fmt::format(
        "{} is not a SQLite database (its header is wrong): fusetune will not touch it; "
        "move it away or give another --db",
        path));
  }
}

int64_t PragmaInt(Connection& conn, const char* pragma) {
  Statement st = conn.Prepare(fmt::format("PRAGMA {}", pragma));
  st.Step();
  return st.Int(0);
}

}  // namespace

Database::Database(const std::string& path, DatabaseOptions options) : path_(path) {
  if (options.schema_version < 0 || options.schema_version > kLatestSchemaVersion) {
    throw std::invalid_argument("DatabaseOptions::schema_version out of range");
  }
  if (path.empty()) throw UserError("the database path is empty");
  CheckHeader(path);
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw UserError(fmt::format("cannot create the directory {} for the database: {}",
                                  parent.string(), ec.message()));
    }
  }
  try {
    conn_ = std::make_unique<Connection>(path, /*read_only=*/false, /*create=*/true);
  } catch (const StoreError& e) {
    throw UserError(e.what());
  }
  conn_->Exec(fmt::format("PRAGMA busy_timeout = {}", options.busy_timeout_ms));

  // Reads only, so a refused file stays byte-identical.
  int64_t app_id = 0, version = 0, tables = 0;
  try {
    // One read transaction: the three figures come from one state of the file, even while
    // another process is creating it (else a fresh file's application_id could be read before
    // that process's first migration commits and its table count after).
    Transaction snapshot(*conn_, Transaction::Mode::kRead);
    app_id = PragmaInt(*conn_, "application_id");
    version = PragmaInt(*conn_, "user_version");
    {
      Statement st = conn_->Prepare("SELECT count(*) FROM sqlite_schema");
      st.Step();
      tables = st.Int(0);
    }
    snapshot.Commit();
  } catch (const StoreError& e) {
    throw UserError(
        fmt::format("{} is corrupt or not a SQLite database ({}): fusetune will not "
                    "touch it; move it away or give another --db",
                    path, e.what()));
  }
  if (app_id != kApplicationId && !(app_id == 0 && version == 0 && tables == 0)) {
    throw UserError(
        fmt::format("{} is a SQLite database of another application (application_id {}, {} schema "
                    "objects): fusetune will not modify it; give another --db",
                    path, app_id, tables));
  }
  if (version > kLatestSchemaVersion) {
    throw UserError(fmt::format(
        "{}: this database was written by fusetune schema v{}, this binary knows up to v{}; "
        "upgrade fusetune",
        path, version, kLatestSchemaVersion));
  }

  // WAL lets readers in other processes run beside one writer; NORMAL sync is durable in WAL
  // mode except for the last transactions on power loss (never corruption).
  SetWalMode(*conn_, options.busy_timeout_ms);
  conn_->Exec("PRAGMA synchronous = NORMAL");
  int target = options.schema_version == 0 ? kLatestSchemaVersion : options.schema_version;
  Migrate(*conn_, target);  // turns foreign keys off while it runs (a step may rebuild a table)
  conn_->Exec("PRAGMA foreign_keys = ON");
  schema_version_ = ReadSchemaVersion(*conn_);
}

Database::~Database() = default;

void Database::RequireLatest(const char* who) const {
  if (schema_version_ != kLatestSchemaVersion) {
    throw UserError(fmt::format("{}: {} needs schema v{}, the file is opened at v{}", path_, who,
                                kLatestSchemaVersion, schema_version_));
  }
}

void Database::Run(Mode mode, const std::function<void(Connection&)>& fn) const {
  std::lock_guard lock(mutex_);
  if (mode == Mode::kNone) {
    fn(*conn_);
    return;
  }
  Transaction tx(*conn_,
                 mode == Mode::kWrite ? Transaction::Mode::kWrite : Transaction::Mode::kRead);
  fn(*conn_);  // a throw rolls back in ~Transaction
  tx.Commit();
}

}  // namespace fusetune::db
