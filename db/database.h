#pragma once
// The Database: fusetune's SQLite file, opened, checked and migrated, and the one connection that
// the cache (db/cache.h) and the job queue (db/job_queue.h) share. Every SQL statement of
// fusetune lives in db/.
//
// Opening. A missing file is created (with its parent directories). A file is refused with a
// UserError, and never written to, when it is not SQLite, is corrupt, belongs to another
// application, or was written by a newer fusetune schema. Otherwise pending migrations run, each in
// its own transaction (db/schema.h). The file runs in WAL mode with a busy timeout and foreign
// keys on.
//
// Threads and processes. One connection guarded by a mutex: any number of threads may share one
// Database (and the Cache and JobQueue over it), and calls are serialised (each call is a few
// prepared statements, so the mutex is held for microseconds). Several processes (or several
// Databases) may open the same file at once: WAL lets readers proceed while one writer writes, and
// writers wait up to the busy timeout.
//
// Transactions. Every public call of the Cache and the JobQueue that writes runs in one
// WriteTransaction: a call that throws leaves nothing of itself behind.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "db/store_error.h"

namespace fusetune::db {

class Connection;

struct DatabaseOptions {
  int busy_timeout_ms = 5000;
  // Stop migrating at this version (tests build older files with it); 0 = the latest. The Cache
  // and the JobQueue refuse a Database that is not at the latest version.
  int schema_version = 0;
};

class Database {
 public:
  explicit Database(const std::string& path, DatabaseOptions options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  // Fixed once the file is open.
  int schema_version() const { return schema_version_; }
  // UserError naming the file unless it is at the latest schema version (`who` needs it).
  void RequireLatest(const char* who) const;

  // Runs fn(Connection&) under the connection's lock in one write transaction (BEGIN IMMEDIATE):
  // it commits when fn returns and rolls back when fn throws, so a call that throws leaves
  // nothing behind. Returns what fn returns. fn must not call back into a Cache or JobQueue of
  // this Database (the lock is not recursive).
  template <typename Fn>
  auto WriteTransaction(Fn&& fn) {
    return Invoke(Mode::kWrite, std::forward<Fn>(fn));
  }
  // fn(Connection&) under the lock in one read transaction: its statements see one state of the
  // file even while another process writes.
  template <typename Fn>
  auto ReadTransaction(Fn&& fn) const {
    return Invoke(Mode::kRead, std::forward<Fn>(fn));
  }
  // fn(Connection&) under the lock without a transaction of its own: for one statement, which
  // SQLite runs atomically anyway.
  template <typename Fn>
  auto Read(Fn&& fn) const {
    return Invoke(Mode::kNone, std::forward<Fn>(fn));
  }

 private:
  enum class Mode { kNone, kRead, kWrite };
  void Run(Mode mode, const std::function<void(Connection&)>& fn) const;

  template <typename Fn>
  auto Invoke(Mode mode, Fn&& fn) const {
    using Result = std::invoke_result_t<Fn&, Connection&>;
    if constexpr (std::is_void_v<Result>) {
      Run(mode, [&](Connection& conn) { fn(conn); });
    } else {
      std::optional<Result> out;
      Run(mode, [&](Connection& conn) { out.emplace(fn(conn)); });
      return std::move(*out);
    }
  }

  std::string path_;
  int schema_version_ = 0;
  mutable std::mutex mutex_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace fusetune::db
