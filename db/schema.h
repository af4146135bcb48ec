#pragma once
// The schema as a list of numbered migrations. PRAGMA user_version holds the number of the last
// one applied; each step runs in its own write transaction together with the version bump, so a
// file is always at exactly one version. A step is never edited once released: changes are new
// steps appended at the end.
//
//   v1  the cache: targets, measurements, best_plans
//   v2  the service queue: tasks, jobs, task_jobs, workers
//   v3  jobs.result: the answer of a job whose result is kept on the job row
//   v4  jobs keyed by job_key (no more measurement-key placeholders); best_plans gain family_key,
//       margin, decision, rounds and indexes on family and created_at; replaced_plans archives
//       the figures of every plan a newer one replaced
//   v5  verified_at on both plan tables
//   v6  tasks.bound_params_json
//   v7  unfused_us may be NULL (not timed: a warm-only tune)
//   v8  weights_bound on both plan tables: the plan's tune offered wpack (constant B)
#include <cstdint>

namespace fusetune::db {

class Connection;

// Written to PRAGMA application_id so a fusetune file is told apart from any other SQLite file
// ("FTUN").
inline constexpr int32_t kApplicationId = 0x4654554e;
inline constexpr int kLatestSchemaVersion = 8;

// Applies the steps after the file's version up to `target_version` (<= kLatestSchemaVersion).
// Safe against another process migrating the same file at the same time. Runs with foreign keys
// off (a step may rebuild a table that others reference; SQLite's own recipe) and checks them
// before each step commits; the caller turns them on afterwards.
void Migrate(Connection& conn, int target_version);

// PRAGMA user_version of the open file.
int ReadSchemaVersion(Connection& conn);

}  // namespace fusetune::db
