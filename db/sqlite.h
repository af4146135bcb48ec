#pragma once
// A thin RAII layer over the SQLite C API: a connection with a cache of prepared statements, a
// statement handle that binds and reads columns, and a transaction guard that rolls back unless
// committed. Internal to db/: nothing outside db/ includes this header.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "db/store_error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace fusetune::db {

class Connection;

// A prepared statement borrowed from the connection's cache (or owned, when the cached one is in
// use). Destruction resets it and clears its bindings so the next user starts clean.
class Statement {
 public:
  // `in_use` is the cache slot's busy flag (cleared on destruction); null means the statement is
  // owned and finalized on destruction.
  Statement(Connection* conn, sqlite3_stmt* stmt, bool* in_use);
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view text);
  Statement& Bind(int index, const std::string& text) {
    return Bind(index, std::string_view(text));
  }
  Statement& Bind(int index, const char* text) { return Bind(index, std::string_view(text)); }
  Statement& BindBlob(int index, const std::vector<uint8_t>& blob);
  Statement& BindNull(int index);
  template <typename T>
  Statement& Bind(int index, const std::optional<T>& value) {
    return value ? Bind(index, *value) : BindNull(index);
  }
  // Binds every argument in order, starting at parameter 1.
  template <typename... Args>
  Statement& BindAll(const Args&... args) {
    int index = 1;
    (Bind(index++, args), ...);
    return *this;
  }

  // Advances one row: true when a row is available, false when the statement is done.
  bool Step();
  // Runs a statement that returns no rows (or whose rows are not needed).
  void Run();

  // Columns are 0-based, as in SQLite.
  bool IsNull(int column) const;
  int64_t Int(int column) const;
  double Double(int column) const;
  std::string Text(int column) const;
  std::vector<uint8_t> Blob(int column) const;
  std::optional<int64_t> OptInt(int column) const;

 private:
  Connection* conn_;
  sqlite3_stmt* stmt_;
  bool* in_use_;
};

class Connection {
 public:
  // Opens (and with `create`, creates) the file; throws StoreError when SQLite cannot.
  Connection(const std::string& path, bool read_only, bool create);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  Statement Prepare(std::string_view sql);
  // Runs one or more statements without results (schema scripts, pragmas).
  void Exec(std::string_view sql);
  int64_t Changes() const;
  int64_t LastInsertRowId() const;
  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }

  [[noreturn]] void Fail(int code, std::string_view what) const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  std::unordered_map<std::string, Cached> cache_;
};

// BEGIN IMMEDIATE (takes the write lock up front, so two writers never deadlock upgrading a read
// lock) or a plain deferred BEGIN for read snapshots; rolls back on destruction unless Commit().
class Transaction {
 public:
  enum class Mode { kRead, kWrite };
  explicit Transaction(Connection& conn, Mode mode = Mode::kWrite);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void Commit();

 private:
  Connection& conn_;
  bool done_ = false;
};

}  // namespace fusetune::db
