#include "db/schema.h"

#include <fmt/format.h>

#include "db/sqlite.h"

namespace fusetune::db {
namespace {

// Every table is STRICT (types enforced) and every invariant the store relies on is a CHECK, so a
// bad record fails its whole transaction instead of being stored half right. Times are Unix ms.
constexpr const char* kStepV1 = R"sql(
CREATE TABLE targets (
  fingerprint   TEXT PRIMARY KEY CHECK (length(fingerprint) > 0),
  cpu           TEXT NOT NULL,
  triple        TEXT NOT NULL,
  features      TEXT NOT NULL,
  cores         INTEGER NOT NULL CHECK (cores >= 0),
  peak_gflops   REAL NOT NULL CHECK (peak_gflops >= 0),
  bandwidth_gbs REAL NOT NULL CHECK (bandwidth_gbs >= 0),
  measured_at   INTEGER NOT NULL
) STRICT;

-- Each (group, schedule, target, threads) is measured at most once, ever.
CREATE TABLE measurements (
  group_signature    TEXT NOT NULL CHECK (length(group_signature) > 0),
  schedule           TEXT NOT NULL,
  target_fingerprint TEXT NOT NULL CHECK (length(target_fingerprint) > 0),
  threads            INTEGER NOT NULL CHECK (threads >= 1),
  status             TEXT NOT NULL CHECK (status IN ('ok', 'invalid')),
  reason             TEXT NOT NULL,
  median_us          REAL NOT NULL,
  min_us             REAL NOT NULL,
  stddev_us          REAL NOT NULL,
  number             INTEGER NOT NULL,
  repeat             INTEGER NOT NULL,
  max_abs_error      REAL NOT NULL,
  compile_ms         REAL NOT NULL,
  group_text         TEXT NOT NULL,
  created_at         INTEGER NOT NULL,
  PRIMARY KEY (group_signature, schedule, target_fingerprint, threads),
  -- An ok record has a real time; an invalid one says why.
  CHECK (status = 'invalid' OR (median_us > 0 AND min_us > 0 AND number >= 1 AND repeat >= 1)),
  CHECK (status = 'ok' OR length(reason) > 0)
) STRICT, WITHOUT ROWID;
CREATE INDEX measurements_by_target ON measurements (target_fingerprint, threads);

-- The best plan per region: groups are positions in the region's canonical node order.
CREATE TABLE best_plans (
  region_signature   TEXT NOT NULL CHECK (length(region_signature) > 0),
  target_fingerprint TEXT NOT NULL CHECK (length(target_fingerprint) > 0),
  threads            INTEGER NOT NULL CHECK (threads >= 1),
  search_version     INTEGER NOT NULL CHECK (search_version >= 1),
  plan_json          TEXT NOT NULL CHECK (json_valid(plan_json)),
  tuned_us           REAL NOT NULL CHECK (tuned_us >= 0),
  greedy_us          REAL NOT NULL CHECK (greedy_us >= 0),
  unfused_us         REAL NOT NULL CHECK (unfused_us >= 0),
  chosen             TEXT NOT NULL CHECK (chosen IN ('tuned', 'greedy', 'unfused')),
  region_text        TEXT NOT NULL,
  ops_json           TEXT NOT NULL CHECK (json_valid(ops_json)),
  created_at         INTEGER NOT NULL,
  PRIMARY KEY (region_signature, target_fingerprint, threads, search_version)
) STRICT, WITHOUT ROWID;
CREATE INDEX best_plans_by_target ON best_plans (target_fingerprint, threads, search_version);
)sql";

constexpr const char* kStepV2 = R"sql(
CREATE TABLE tasks (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  state          TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  graph_text     TEXT NOT NULL,
  options_json   TEXT NOT NULL CHECK (json_valid(options_json)),
  target         TEXT NOT NULL CHECK (length(target) > 0),
  client         TEXT NOT NULL,
  progress_done  INTEGER NOT NULL CHECK (progress_done >= 0),
  progress_total INTEGER NOT NULL CHECK (progress_total >= 0),
  error          TEXT NOT NULL,
  result_json    TEXT NOT NULL,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX tasks_by_state ON tasks (state);
CREATE INDEX tasks_by_client ON tasks (client, state);

-- The durable measurement queue, one per target (the jobs_queue index). A job is unique per
-- measurement key and shared by every task that needs it (task_jobs).
CREATE TABLE jobs (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  group_signature TEXT NOT NULL CHECK (length(group_signature) > 0),
  schedule        TEXT NOT NULL,
  target          TEXT NOT NULL CHECK (length(target) > 0),
  threads         INTEGER NOT NULL CHECK (threads >= 1),
  state           TEXT NOT NULL CHECK (state IN ('queued', 'leased', 'done', 'failed')),
  attempts        INTEGER NOT NULL CHECK (attempts >= 0),
  max_attempts    INTEGER NOT NULL CHECK (max_attempts >= 1),
  lease_owner     TEXT,
  lease_deadline  INTEGER,
  errors          TEXT NOT NULL,
  result_target   TEXT,
  payload         BLOB NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  UNIQUE (group_signature, schedule, target, threads),
  CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_deadline IS NOT NULL))
) STRICT;
CREATE INDEX jobs_queue ON jobs (target, state, id);
CREATE INDEX jobs_leases ON jobs (state, lease_deadline);
CREATE INDEX jobs_by_owner ON jobs (lease_owner) WHERE lease_owner IS NOT NULL;

CREATE TABLE task_jobs (
  task_id INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  job_id  INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  PRIMARY KEY (task_id, job_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX task_jobs_by_job ON task_jobs (job_id);

CREATE TABLE workers (
  id                 TEXT PRIMARY KEY CHECK (length(id) > 0),
  target_fingerprint TEXT NOT NULL CHECK (length(target_fingerprint) > 0),
  cores              INTEGER NOT NULL CHECK (cores >= 0),
  version            TEXT NOT NULL,
  state              TEXT NOT NULL CHECK (state IN ('online', 'offline')),
  registered_at      INTEGER NOT NULL,
  last_heartbeat     INTEGER NOT NULL
) STRICT;
CREATE INDEX workers_by_target ON workers (target_fingerprint, state);
)sql";

// The service keys jobs that are not single measurements (a group under several schedules, a
// region's validation, a whole graph's timing) by a hash of the job itself and keeps the worker's
// answer on the job row: a task that asks again, or a task resumed after a restart, reads it back
// instead of measuring again.
constexpr const char* kStepV3 = R"sql(
ALTER TABLE jobs ADD COLUMN result BLOB;
)sql";

constexpr const char* kSteps[] = {kStepV1, kStepV2, kStepV3};
static_assert(std::size(kSteps) == kLatestSchemaVersion);

}  // namespace

int ReadSchemaVersion(Connection& conn) {
  Statement st = conn.Prepare("PRAGMA user_version");
  st.Step();
  return static_cast<int>(st.Int(0));
}

void Migrate(Connection& conn, int target_version) {
  for (int version = 1; version <= target_version; ++version) {
    if (ReadSchemaVersion(conn) >= version) continue;
    Transaction tx(conn);
    // Another process may have applied this step while we waited for the write lock.
    if (ReadSchemaVersion(conn) >= version) continue;
    conn.Exec(kSteps[version - 1]);
    if (version == 1) conn.Exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
    conn.Exec(fmt::format("PRAGMA user_version = {}", version));
    tx.Commit();
  }
}

}  // namespace fusetune::db
