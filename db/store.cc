// Opening a Store: refuse anything that is not a fusetune file we can read, before a single byte is
// written (WAL mode and migrations both write), then configure and migrate.
#include "db/store.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "db/schema.h"
#include "db/sqlite.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

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

Store::Store(const std::string& path, StoreOptions options) : path_(path) {
  if (options.schema_version < 0 || options.schema_version > kLatestSchemaVersion) {
    throw std::invalid_argument("StoreOptions::schema_version out of range");
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
  conn_->Exec("PRAGMA journal_mode = WAL");
  conn_->Exec("PRAGMA synchronous = NORMAL");
  conn_->Exec("PRAGMA foreign_keys = ON");
  int target = options.schema_version == 0 ? kLatestSchemaVersion : options.schema_version;
  Migrate(*conn_, target);
  schema_version_ = ReadSchemaVersion(*conn_);
}

Store::~Store() = default;

int Store::schema_version() const {
  std::lock_guard lock(mutex_);
  return schema_version_;
}

void Store::RequireVersion(int version, const char* what) const {
  if (schema_version_ < version) {
    throw UserError(fmt::format("{}: {} needs schema v{}, the file is opened at v{}", path_, what,
                                version, schema_version_));
  }
}

StoreStats Store::Stats() const { return CountStats(/*measurements=*/true); }

StoreStats Store::QuickStats() const { return CountStats(/*measurements=*/false); }

StoreStats Store::CountStats(bool measurements) const {
  std::lock_guard lock(mutex_);
  StoreStats stats;
  stats.schema_version = schema_version_;
  Transaction tx(*conn_, Transaction::Mode::kRead);
  auto count = [&](const char* sql) {
    Statement st = conn_->Prepare(sql);
    st.Step();
    return st.Int(0);
  };
  stats.targets = count("SELECT count(*) FROM targets");
  if (measurements) {
    stats.measurements_ok = count("SELECT count(*) FROM measurements WHERE status = 'ok'");
    stats.measurements_invalid =
        count("SELECT count(*) FROM measurements WHERE status = 'invalid'");
  }
  stats.best_plans = count("SELECT count(*) FROM best_plans");
  if (schema_version_ >= 2) {
    stats.tasks = count("SELECT count(*) FROM tasks");
    stats.jobs_queued = count("SELECT count(*) FROM jobs WHERE state = 'queued'");
    stats.jobs_leased = count("SELECT count(*) FROM jobs WHERE state = 'leased'");
    stats.jobs_done = count("SELECT count(*) FROM jobs WHERE state = 'done'");
    stats.jobs_failed = count("SELECT count(*) FROM jobs WHERE state = 'failed'");
    stats.workers_online = count("SELECT count(*) FROM workers WHERE state = 'online'");
  }
  tx.Commit();
  return stats;
}

}  // namespace fusetune::db
