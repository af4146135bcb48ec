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

// v4, three changes in one step.
//
// 1. Jobs are keyed by what they hold. Until v3 the service put a hash of each job into the
//    measurement-key columns as ("job:<hash>", schedule ""), so a job looked like a measurement it
//    never was (and the queue's "already measured" check could never match). The table is rebuilt
//    (SQLite cannot drop a column that a UNIQUE constraint names) with:
//      job_key  a hash of the job's work: the graph it times, its plans, inputs and timing
//               options, without the job's id. Equal work is one row, shared by every task
//               (task_jobs) and answered once. Old keys lose their "job:" prefix; a v2 row keyed
//               by a real measurement key keeps group signature and schedule, joined by a space.
//    Ids and the AUTOINCREMENT sequence are kept, so task_jobs rows and leases held by workers
//    still name the same jobs.
//
// 2. best_plans gain what the noise and shape issues record:
//      family_key  a shape-free structure key of the region (ops, attributes, ranks, dtypes, with
//                  sizes abstracted to symbols that keep their equalities): regions that differ
//                  only in sizes share it. '' until the code that computes it stores one.
//      margin      the chosen plan's time over the runner-up baseline's (0.93 = 7% faster than the
//                  better of the other two); NULL when not recorded.
//      decision    what the validation concluded, in words ("tuned 1.02x, within noise: greedy
//                  kept"); NULL when not recorded.
//      rounds      how many paired timing rounds the decision rests on; NULL when not recorded.
//    best_plans_by_family serves "the tuned members of this family for this target, thread count
//    and search version"; best_plans_by_created serves the status page's newest plans without
//    reading the whole table.
//
// 3. replaced_plans: when a plan replaces an existing plan of the same key (a re-tune, an import
//    of a faster plan, a re-validation that found it slower than a baseline), the old row is
//    copied here with when and why, so its figures stay on record. Columns as in best_plans, plus
//      replaced_at  Unix ms of the replacement
//      reason       why it was replaced ("tuned again", "import: a faster plan", ...)
//    Rows are only ever added; `fusetune cache rm` deletes plans, not this history.
constexpr const char* kStepV4 = R"sql(
CREATE TABLE jobs_v4 (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  job_key        TEXT NOT NULL CHECK (length(job_key) > 0),
  target         TEXT NOT NULL CHECK (length(target) > 0),
  threads        INTEGER NOT NULL CHECK (threads >= 1),
  state          TEXT NOT NULL CHECK (state IN ('queued', 'leased', 'done', 'failed')),
  attempts       INTEGER NOT NULL CHECK (attempts >= 0),
  max_attempts   INTEGER NOT NULL CHECK (max_attempts >= 1),
  lease_owner    TEXT,
  lease_deadline INTEGER,
  errors         TEXT NOT NULL,
  result_target  TEXT,
  payload        BLOB NOT NULL,
  result         BLOB,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  UNIQUE (job_key, target, threads),
  CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_deadline IS NOT NULL))
) STRICT;
INSERT INTO jobs_v4 (id, job_key, target, threads, state, attempts, max_attempts, lease_owner,
                     lease_deadline, errors, result_target, payload, result, created_at, updated_at)
  SELECT id,
         CASE WHEN schedule <> '' THEN group_signature || ' ' || schedule
              WHEN substr(group_signature, 1, 4) = 'job:' THEN substr(group_signature, 5)
              ELSE group_signature END,
         target, threads, state, attempts, max_attempts, lease_owner, lease_deadline, errors,
         result_target, payload, result, created_at, updated_at
  FROM jobs;
DELETE FROM sqlite_sequence WHERE name = 'jobs_v4';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'jobs_v4', seq FROM sqlite_sequence WHERE name = 'jobs';
DROP TABLE jobs;
ALTER TABLE jobs_v4 RENAME TO jobs;
CREATE INDEX jobs_queue ON jobs (target, state, id);
CREATE INDEX jobs_leases ON jobs (state, lease_deadline);
CREATE INDEX jobs_by_owner ON jobs (lease_owner) WHERE lease_owner IS NOT NULL;

ALTER TABLE best_plans ADD COLUMN family_key TEXT NOT NULL DEFAULT '';
ALTER TABLE best_plans ADD COLUMN margin REAL CHECK (margin > 0);
ALTER TABLE best_plans ADD COLUMN decision TEXT;
ALTER TABLE best_plans ADD COLUMN rounds INTEGER CHECK (rounds >= 0);
CREATE INDEX best_plans_by_family ON best_plans (family_key, target_fingerprint, threads,
                                                 search_version);
CREATE INDEX best_plans_by_created ON best_plans (created_at);

CREATE TABLE replaced_plans (
  id                 INTEGER PRIMARY KEY,
  region_signature   TEXT NOT NULL CHECK (length(region_signature) > 0),
  target_fingerprint TEXT NOT NULL CHECK (length(target_fingerprint) > 0),
  threads            INTEGER NOT NULL CHECK (threads >= 1),
  search_version     INTEGER NOT NULL CHECK (search_version >= 1),
  family_key         TEXT NOT NULL,
  plan_json          TEXT NOT NULL CHECK (json_valid(plan_json)),
  tuned_us           REAL NOT NULL,
  greedy_us          REAL NOT NULL,
  unfused_us         REAL NOT NULL,
  chosen             TEXT NOT NULL CHECK (chosen IN ('tuned', 'greedy', 'unfused')),
  region_text        TEXT NOT NULL,
  ops_json           TEXT NOT NULL CHECK (json_valid(ops_json)),
  margin             REAL,
  decision           TEXT,
  rounds             INTEGER,
  created_at         INTEGER NOT NULL,
  replaced_at        INTEGER NOT NULL,
  reason             TEXT NOT NULL CHECK (length(reason) > 0)
) STRICT;
CREATE INDEX replaced_plans_by_key ON replaced_plans (region_signature, target_fingerprint,
                                                      threads, search_version);
)sql";

// v5: when a plan was last re-validated (`fusetune cache verify`, or an idle farm with `serve
// --verify-idle`, server/plan_verification.h):
//   verified_at  Unix ms of the last re-validation that kept the plan, or of the one that stored
//                it as a replacement; NULL = never re-validated. An idle farm re-checks plans never
//                verified first, then those verified longest ago.
// replaced_plans gains the same column, so an archived row keeps every column of best_plans.
constexpr const char* kStepV5 = R"sql(
ALTER TABLE best_plans ADD COLUMN verified_at INTEGER;
ALTER TABLE replaced_plans ADD COLUMN verified_at INTEGER;
)sql";

// v6: a task keeps which of its graph's parameters carry weights (`tune --server --params`, an
// ONNX model's initialisers), so a task resumed after a restart tunes them as constants again:
//   bound_params_json  a JSON array of the parameters' names, without '%'; graph_text holds their
//                      types (the weights stay with the client: no part of a tune computes with
//                      them). '[]' for the tasks stored before, which were tuned without weights.
constexpr const char* kStepV6 = R"sql(
ALTER TABLE tasks ADD COLUMN bound_params_json TEXT NOT NULL DEFAULT '[]'
  CHECK (json_valid(bound_params_json));
)sql";

// v7: a plan's unfused figure may be NULL, "not timed": a warm-only tune (server/warm_start.h)
// times the transferred plan against greedy only. Until v7 every plan had one (or infinity when
// the unfused plan failed). SQLite cannot drop a NOT NULL, so both tables are rebuilt (its own
// recipe: new table, copy, drop, rename, indexes), columns in the same order.
constexpr const char* kStepV7 = R"sql(
CREATE TABLE best_plans_v7 (
  region_signature   TEXT NOT NULL CHECK (length(region_signature) > 0),
  target_fingerprint TEXT NOT NULL CHECK (length(target_fingerprint) > 0),
  threads            INTEGER NOT NULL CHECK (threads >= 1),
  search_version     INTEGER NOT NULL CHECK (search_version >= 1),
  plan_json          TEXT NOT NULL CHECK (json_valid(plan_json)),
  tuned_us           REAL NOT NULL CHECK (tuned_us >= 0),
  greedy_us          REAL NOT NULL CHECK (greedy_us >= 0),
  unfused_us         REAL CHECK (unfused_us >= 0),
  chosen             TEXT NOT NULL CHECK (chosen IN ('tuned', 'greedy', 'unfused')),
  region_text        TEXT NOT NULL,
  ops_json           TEXT NOT NULL CHECK (json_valid(ops_json)),
  created_at         INTEGER NOT NULL,
  family_key         TEXT NOT NULL DEFAULT '',
  margin             REAL CHECK (margin > 0),
  decision           TEXT,
  rounds             INTEGER CHECK (rounds >= 0),
  verified_at        INTEGER,
  PRIMARY KEY (region_signature, target_fingerprint, threads, search_version),
  CHECK (chosen <> 'unfused' OR unfused_us IS NOT NULL)
) STRICT, WITHOUT ROWID;
INSERT INTO best_plans_v7 SELECT * FROM best_plans;
DROP TABLE best_plans;
ALTER TABLE best_plans_v7 RENAME TO best_plans;
CREATE INDEX best_plans_by_target ON best_plans (target_fingerprint, threads, search_version);
CREATE INDEX best_plans_by_family ON best_plans (family_key, target_fingerprint, threads,
                                                 search_version);
CREATE INDEX best_plans_by_created ON best_plans (created_at);

CREATE TABLE replaced_plans_v7 (
  id                 INTEGER PRIMARY KEY,
  region_signature   TEXT NOT NULL CHECK (length(region_signature) > 0),
  target_fingerprint TEXT NOT NULL CHECK (length(target_fingerprint) > 0),
  threads            INTEGER NOT NULL CHECK (threads >= 1),
  search_version     INTEGER NOT NULL CHECK (search_version >= 1),
  family_key         TEXT NOT NULL,
  plan_json          TEXT NOT NULL CHECK (json_valid(plan_json)),
  tuned_us           REAL NOT NULL,
  greedy_us          REAL NOT NULL,
  unfused_us         REAL,
  chosen             TEXT NOT NULL CHECK (chosen IN ('tuned', 'greedy', 'unfused')),
  region_text        TEXT NOT NULL,
  ops_json           TEXT NOT NULL CHECK (json_valid(ops_json)),
  margin             REAL,
  decision           TEXT,
  rounds             INTEGER,
  created_at         INTEGER NOT NULL,
  replaced_at        INTEGER NOT NULL,
  reason             TEXT NOT NULL CHECK (length(reason) > 0),
  verified_at        INTEGER
) STRICT;
INSERT INTO replaced_plans_v7 SELECT * FROM replaced_plans;
DROP TABLE replaced_plans;
ALTER TABLE replaced_plans_v7 RENAME TO replaced_plans;
CREATE INDEX replaced_plans_by_key ON replaced_plans (region_signature, target_fingerprint,
                                                      threads, search_version);
)sql";

// v8: whether a plan's tune offered weights packed once (wpack): some matmul of the region had a
// constant B (a weight bound with --params, an ONNX initialiser, a remote tune's bound_params),
// so its schedule space held wpack schedules (ir/schedule_space.h, MatmulWeightsConstant).
//   weights_bound  1: offered; 0: not, or not known. A tune whose region has constant B treats a
//                  stored plan with 0 as a miss and searches the region again (the stored
//                  measurements still count), so a plan tuned with weights as inputs does not
//                  stand for one that could pack them. Rows stored before v8 read 0, although
//                  an ONNX tune's did offer wpack: 0 costs such a region one search more, while
//                  1 would keep answering Relay tunes without --params that never offered it.
// replaced_plans gains the same column, so an archived row keeps every column of best_plans.
constexpr const char* kStepV8 = R"sql(
ALTER TABLE best_plans ADD COLUMN weights_bound INTEGER NOT NULL DEFAULT 0
  CHECK (weights_bound IN (0, 1));
ALTER TABLE replaced_plans ADD COLUMN weights_bound INTEGER NOT NULL DEFAULT 0
  CHECK (weights_bound IN (0, 1));
)sql";

constexpr const char* kSteps[] = {kStepV1, kStepV2, kStepV3, kStepV4,
                                  kStepV5, kStepV6, kStepV7, kStepV8};
static_assert(std::size(kSteps) == kLatestSchemaVersion);

}  // namespace

int ReadSchemaVersion(Connection& conn) {
  Statement st = conn.Prepare("PRAGMA user_version");
  st.Step();
  return static_cast<int>(st.Int(0));
}

void Migrate(Connection& conn, int target_version) {
  // A no-op inside a transaction, so set here: with foreign keys on, dropping a table that others
  // reference would cascade into them.
  conn.Exec("PRAGMA foreign_keys = OFF");
  for (int version = 1; version <= target_version; ++version) {
    if (ReadSchemaVersion(conn) >= version) continue;
    Transaction tx(conn);
    // Another process may have applied this step while we waited for the write lock.
    if (ReadSchemaVersion(conn) >= version) continue;
    conn.Exec(kSteps[version - 1]);
    {
      Statement check = conn.Prepare("PRAGMA foreign_key_check");
      if (check.Step()) {
        throw StoreError(fmt::format("{}: migration to schema v{} broke a reference from table {}",
                                     conn.path(), version, check.Text(0)),
                         0);
      }
    }
    if (version == 1) conn.Exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
    conn.Exec(fmt::format("PRAGMA user_version = {}", version));
    tx.Commit();
  }
}

}  // namespace fusetune::db
