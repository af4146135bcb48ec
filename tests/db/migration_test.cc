// Files written by older fusetune upgrade and keep their data. Each older file is made as that
// version made it: its schema by migrating a fresh file to that version only, its rows by plain
// SQL in that version's columns (the code of today cannot write yesterday's columns).
#include <cmath>
#include <limits>

#include "db/schema.h"
#include "db_test_util.h"
#include "raw_sql.h"

namespace fusetune::db {
namespace {

using testing::RawExec;
using testing::RawInt;
using testing::TempDir;

constexpr const char* kZen = "x86_64-zen5-avx512";

// One row of each cache table in the columns every version since v1 has.
constexpr const char* kCacheRowsV1 = R"sql(
INSERT INTO targets VALUES ('x86_64-zen5-avx512', 'znver5', 'x86_64-pc-linux-gnu', '+avx2', 2,
                            201.5, 91.25, 1700000000000);
INSERT INTO measurements VALUES ('g1', 'tile_m=8', 'x86_64-zen5-avx512', 1, 'ok', '', 7.0, 6.5,
                                 0.1, 100, 5, 1e-6, 12.0, 'exp(p0)', 1700000000001);
INSERT INTO best_plans VALUES ('r1', 'x86_64-zen5-avx512', 1, 1,
                               '{"groups":[{"nodes":[0,1],"schedule":""}]}', 9.0, 12.0, 15.0,
                               'tuned', 'region text', '["exp","negative"]', 1700000000002);
)sql";

void ExpectCacheRows(const Cache& cache) {
  EXPECT_EQ(cache.FindTarget(kZen)->peak_gflops, 201.5);
  EXPECT_EQ(cache.FindMeasurement({"g1", "tile_m=8", kZen, 1})->median_us, 7.0);
  std::optional<BestPlanRecord> plan = cache.FindBestPlan({"r1", kZen, 1, 1});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->tuned_us, 9.0);
  EXPECT_EQ(plan->groups, (std::vector<StoredGroup>{{{0, 1}, ""}}));
  EXPECT_EQ(plan->ops, (std::vector<std::string>{"exp", "negative"}));
  EXPECT_EQ(plan->created_at, 1700000000002);
  // The columns v4 added read as "not recorded".
  EXPECT_EQ(plan->family_key, "");
  EXPECT_FALSE(plan->margin.has_value());
  EXPECT_EQ(plan->decision, "");
  EXPECT_FALSE(plan->rounds.has_value());
}

TEST(Migration, VersionOneFileUpgradesAndKeepsItsCache) {
  TempDir dir;
  std::string path = dir.File("v1.db");
  { Database v1(path, DatabaseOptions{.schema_version = 1}); }
  RawExec(path, kCacheRowsV1);

  testing::OpenFile file(path);
  EXPECT_EQ(file.db.schema_version(), kLatestSchemaVersion);
  ExpectCacheRows(file.cache);
  TaskRecord task;
  task.graph_text = "g";
  task.target = "any";
  EXPECT_GT(file.queue.CreateTask(task), 0) << "the queue tables exist now";
}

// A v3 file as a server left it: the cache, two tasks, and jobs keyed ("job:<hash>", "") in the
// measurement-key columns, one of them done with its answer on the row, one leased, one left
// from v2's measurement-keyed jobs, and one deleted (its id must not be handed out again).
constexpr const char* kQueueRowsV3 = R"sql(
INSERT INTO tasks VALUES (1, 'running', 'fn () { }', '{}', 'x86_64-zen5-avx512', 'alice', 1, 3,
                          '', '', 1700000000100, 1700000000100);
INSERT INTO tasks VALUES (2, 'done', 'fn () { }', '{}', 'x86_64-zen5-avx512', 'bob', 1, 1, '',
                          '{"regions":[]}', 1700000000200, 1700000000200);
INSERT INTO jobs (id, group_signature, schedule, target, threads, state, attempts, max_attempts,
                  lease_owner, lease_deadline, errors, result_target, payload, created_at,
                  updated_at, result)
VALUES (1, 'job:aaa', '', 'x86_64-zen5-avx512', 1, 'done', 1, 3, NULL, NULL, '',
        'x86_64-zen5-avx512', x'01', 1700000000300, 1700000000300, x'7b7d'),
       (2, 'job:bbb', '', 'x86_64-zen5-avx512', 2, 'leased', 1, 3, 'w1', 1700000009000,
        '', NULL, x'02', 1700000000300, 1700000000300, NULL),
       (5, 'grp', 'tile_m=4', 'any', 1, 'queued', 0, 3, NULL, NULL, 'attempt 1: lost', NULL,
        x'05', 1700000000300, 1700000000300, NULL),
       (7, 'job:gone', '', 'x86_64-zen5-avx512', 1, 'queued', 0, 3, NULL, NULL, '', NULL, x'07',
        1700000000300, 1700000000300, NULL);
DELETE FROM jobs WHERE id = 7;
INSERT INTO task_jobs VALUES (1, 1), (1, 2), (1, 5), (2, 1);
INSERT INTO workers VALUES ('w1', 'x86_64-zen5-avx512', 2, '0.1.0', 'online', 1700000000000,
                            1700000000400);
)sql";

TEST(Migration, VersionThreeFileUpgradesAndKeepsItsQueue) {
  TempDir dir;
  std::string path = dir.File("v3.db");
  { Database v3(path, DatabaseOptions{.schema_version = 3}); }
  RawExec(path, std::string(kCacheRowsV1) + kQueueRowsV3);
  ASSERT_EQ(RawInt(path, "SELECT seq FROM sqlite_sequence WHERE name = 'jobs'"), 7);

  {
    testing::OpenFile file(path);
    EXPECT_EQ(file.db.schema_version(), kLatestSchemaVersion);
    ExpectCacheRows(file.cache);
  }
  // Everything again from a second open: what the migration wrote was committed.
  testing::OpenFile file(path);
  ExpectCacheRows(file.cache);
  JobQueue& queue = file.queue;
  EXPECT_EQ(queue.FindTask(1)->client, "alice");
  EXPECT_EQ(queue.FindTask(2)->result_json, R"({"regions":[]})");

  // The job key names what it holds: the hash, without the placeholder prefix and schedule.
  JobRecord done = *queue.FindJob(1);
  EXPECT_EQ(done.job_key, "aaa");
  EXPECT_EQ(done.target, kZen);
  EXPECT_EQ(done.threads, 1);
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.result, (std::vector<uint8_t>{'{', '}'}));
  EXPECT_EQ(done.result_target, kZen);
  EXPECT_EQ(done.payload, (std::vector<uint8_t>{1}));
  JobRecord leased = *queue.FindJob(2);
  EXPECT_EQ(leased.job_key, "bbb");
  EXPECT_EQ(leased.threads, 2);
  EXPECT_EQ(leased.lease_owner, "w1");
  EXPECT_EQ(leased.lease_deadline, 1700000009000);
  JobRecord old_style = *queue.FindJob(5);
  EXPECT_EQ(old_style.job_key, "grp tile_m=4");
  EXPECT_EQ(old_style.target, "any");
  EXPECT_EQ(old_style.errors, "attempt 1: lost");
  EXPECT_FALSE(queue.FindJob(7));

  // The links survived the table's rebuild.
  std::vector<JobStatus> first = queue.ListJobStates(1);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].id, 1);
  EXPECT_EQ(first[1].id, 2);
  EXPECT_EQ(first[2].id, 5);
  EXPECT_EQ(queue.ListJobStates(2).size(), 1u);
  EXPECT_EQ(RawInt(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);

  // A task resumed after the upgrade joins the done job by its key and reads the answer back; a
  // new job gets an id past every id ever handed out.
  TaskRecord task;
  task.graph_text = "g";
  task.target = kZen;
  int64_t resumed = queue.CreateTask(task);
  JobSpec same{"aaa", kZen, 1, {1}, 3};
  JobSpec fresh{"ccc", kZen, 1, {3}, 3};
  std::vector<EnqueueOutcome> outcomes = queue.EnqueueJobs(resumed, {same, fresh});
  EXPECT_EQ(outcomes[0].kind, EnqueueOutcome::Kind::kJoined);
  EXPECT_EQ(outcomes[0].job_id, 1);
  EXPECT_EQ(outcomes[1].kind, EnqueueOutcome::Kind::kQueued);
  EXPECT_EQ(outcomes[1].job_id, 8);
  // The leased job can still be answered by its worker, and the queue's other rules hold.
  EXPECT_EQ(queue.CompleteJob(2, kZen, {'o', 'k'}), ReportOutcome::kCompleted);
  EXPECT_EQ(queue.LeaseJob("w2", kZen, 1000)->id, 5) << "the oldest queued job, an 'any' one";
  EXPECT_THROW(queue.EnqueueJobs(999, {fresh}), StoreError) << "foreign keys are on again";
  EXPECT_TRUE(queue.Heartbeat("w1", 0, 1000));

  // The new tables and indexes exist.
  EXPECT_EQ(RawInt(path,
                   "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN "
                   "('jobs_queue', 'jobs_leases', 'jobs_by_owner', 'best_plans_by_family', "
                   "'best_plans_by_created', 'replaced_plans_by_key')"),
            6);
  EXPECT_EQ(file.cache.Stats().replaced_plans, 0);
}

// A v4 file: a plan with its decision, margin and rounds, and one it replaced. v5 adds when a
// plan was last re-validated: neither has been, and both keep every figure.
constexpr const char* kPlanRowsV4 = R"sql(
INSERT INTO best_plans (region_signature, target_fingerprint, threads, search_version, plan_json,
                        tuned_us, greedy_us, unfused_us, chosen, region_text, ops_json, created_at,
                        family_key, margin, decision, rounds)
VALUES ('r4', 'x86_64-zen5-avx512', 1, 1, '{"groups":[{"nodes":[0],"schedule":""}]}', 8.0, 9.0,
        12.0, 'tuned', 'region four', '["exp"]', 1700000000004, 'fam', 0.89,
        'tuned 1.12x vs greedy, beyond noise (5 of 5 rounds): tuned chosen', 5);
INSERT INTO replaced_plans (region_signature, target_fingerprint, threads, search_version,
                            family_key, plan_json, tuned_us, greedy_us, unfused_us, chosen,
                            region_text, ops_json, margin, decision, rounds, created_at,
                            replaced_at, reason)
VALUES ('r4', 'x86_64-zen5-avx512', 1, 1, 'fam', '{"groups":[]}', 10.0, 9.0, 12.0, 'greedy',
        'region four', '["exp"]', NULL, NULL, NULL, 1600000000000, 1700000000003, 'tuned again');
)sql";

TEST(Migration, VersionFourFileUpgradesWithNoPlanReVerified) {
  TempDir dir;
  std::string path = dir.File("v4.db");
  { Database v4(path, DatabaseOptions{.schema_version = 4}); }
  RawExec(path, kPlanRowsV4);

  testing::OpenFile file(path);
  EXPECT_EQ(file.db.schema_version(), kLatestSchemaVersion);
  const BestPlanKey key{"r4", kZen, 1, 1};
  std::optional<BestPlanRecord> plan = file.cache.FindBestPlan(key);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->margin, 0.89);
  EXPECT_EQ(plan->rounds, 5);
  EXPECT_EQ(plan->family_key, "fam");
  EXPECT_EQ(plan->decision.rfind("tuned 1.12x", 0), 0u);
  EXPECT_FALSE(plan->verified_at.has_value()) << "never re-validated";
  std::vector<ReplacedPlanRecord> old = file.cache.ListReplacedPlans();
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].reason, "tuned again");
  EXPECT_EQ(old[0].plan.tuned_us, 10.0);
  EXPECT_FALSE(old[0].plan.verified_at.has_value());

  // A re-validation that keeps the plan sets verified_at and nothing else.
  EXPECT_TRUE(file.cache.MarkBestPlanVerified(key, 1800000000000));
  EXPECT_FALSE(file.cache.MarkBestPlanVerified({"nope", kZen, 1, 1}, 1800000000000));
  std::optional<BestPlanRecord> kept = file.cache.FindBestPlan(key);
  EXPECT_EQ(kept->verified_at, 1800000000000);
  EXPECT_EQ(kept->created_at, plan->created_at);
  EXPECT_EQ(kept->tuned_us, 8.0);
  EXPECT_EQ(file.cache.ListReplacedPlans().size(), 1u);
  // Replaced, the verified row is archived with its verified_at.
  BestPlanRecord next = *kept;
  next.chosen = "greedy";
  next.verified_at.reset();
  file.cache.PutBestPlan(next, "verify: greedy 1.20x faster");
  old = file.cache.ListReplacedPlans();
  ASSERT_EQ(old.size(), 2u);
  EXPECT_EQ(old[0].plan.verified_at, 1800000000000);
  EXPECT_EQ(old[0].reason, "verify: greedy 1.20x faster");
  EXPECT_FALSE(file.cache.FindBestPlan(key)->verified_at.has_value());
}

// A v5 file's tasks were tuned without weights: they read back binding none, and a new task
// keeps the names of its bound parameters.
TEST(Migration, VersionFiveTasksReadBackWithNoBoundParameters) {
  TempDir dir;
  std::string path = dir.File("v5.db");
  { Database v5(path, DatabaseOptions{.schema_version = 5}); }
  RawExec(path,
          "INSERT INTO tasks VALUES (1, 'queued', 'fn () { }', '{}', 'any', 'alice', 0, 0, '', "
          "'', 1700000000100, 1700000000100);");

  testing::OpenFile file(path);
  EXPECT_EQ(file.db.schema_version(), kLatestSchemaVersion);
  EXPECT_EQ(file.queue.FindTask(1)->bound_params_json, "[]");
  TaskRecord task;
  task.graph_text = "g";
  task.target = "any";
  task.bound_params_json = R"(["w","b"])";
  EXPECT_EQ(file.queue.FindTask(file.queue.CreateTask(task))->bound_params_json, R"(["w","b"])");
}

// A v6 file's plans keep their figures through v7's rebuild of the plan tables, history too; a
// plan whose unfused plan was not timed (a warm-only tune) is stored as NULL and reads as NaN.
TEST(Migration, VersionSixPlansKeepTheirFiguresAndUnfusedMayBeNotTimed) {
  TempDir dir;
  std::string path = dir.File("v6.db");
  { Database v6(path, DatabaseOptions{.schema_version = 6}); }
  RawExec(path, kPlanRowsV4);
  RawExec(path, "UPDATE best_plans SET verified_at = 1750000000000");

  testing::OpenFile file(path);
  EXPECT_EQ(file.db.schema_version(), kLatestSchemaVersion);
  const BestPlanKey key{"r4", kZen, 1, 1};
  std::optional<BestPlanRecord> plan = file.cache.FindBestPlan(key);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->unfused_us, 12.0);
  EXPECT_EQ(plan->greedy_us, 9.0);
  EXPECT_EQ(plan->margin, 0.89);
  EXPECT_EQ(plan->verified_at, 1750000000000);
  EXPECT_EQ(plan->family_key, "fam");
  EXPECT_EQ(file.cache.FindBestPlansByFamily("fam", kZen, 1, 1).size(), 1u);
  ASSERT_EQ(file.cache.ListReplacedPlans().size(), 1u);
  EXPECT_EQ(file.cache.ListReplacedPlans()[0].plan.unfused_us, 12.0);
  EXPECT_EQ(RawInt(path,
                   "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN "
                   "('best_plans_by_target', 'best_plans_by_family', 'best_plans_by_created', "
                   "'replaced_plans_by_key')"),
            4);

  // Not timed: NULL in the file, NaN in the record, and archived as such when replaced.
  BestPlanRecord warm = *plan;
  warm.chosen = "greedy";
  warm.unfused_us = std::numeric_limits<double>::quiet_NaN();
  file.cache.PutBestPlan(warm, "tuned again");
  EXPECT_EQ(RawInt(path, "SELECT count(*) FROM best_plans WHERE unfused_us IS NULL"), 1);
  EXPECT_TRUE(std::isnan(file.cache.FindBestPlan(key)->unfused_us));
  BestPlanRecord next = warm;
  next.unfused_us = 11.0;
  file.cache.PutBestPlan(next, "tuned again");
  EXPECT_TRUE(std::isnan(file.cache.ListReplacedPlans()[0].plan.unfused_us));
  // Only a plan that is not the unfused one may lack the unfused figure.
  BestPlanRecord wrong = warm;
  wrong.chosen = "unfused";
  EXPECT_ANY_THROW(file.cache.PutBestPlan(wrong, "tuned again"));
}

// A v7 file's plans, ONNX tunes' among them, did not record whether their tune offered wpack: they
// read as tuned without bound weights (a tune with bound weights searches them once more, never
// answering less searched than the store could), history too; new rows keep the flag, and a
// replaced flagged row is archived with it.
TEST(Migration, VersionSevenPlansReadAsTunedWithoutBoundWeights) {
  TempDir dir;
  std::string path = dir.File("v7.db");
  { Database v7(path, DatabaseOptions{.schema_version = 7}); }
  RawExec(path, kPlanRowsV4);
  RawExec(path, "UPDATE best_plans SET verified_at = 1750000000000");

  testing::OpenFile file(path);
  EXPECT_EQ(file.db.schema_version(), kLatestSchemaVersion);
  const BestPlanKey key{"r4", kZen, 1, 1};
  std::optional<BestPlanRecord> plan = file.cache.FindBestPlan(key);
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->weights_bound);
  EXPECT_EQ(plan->tuned_us, 8.0);
  EXPECT_EQ(plan->margin, 0.89);
  EXPECT_EQ(plan->verified_at, 1750000000000);
  ASSERT_EQ(file.cache.ListReplacedPlans().size(), 1u);
  EXPECT_FALSE(file.cache.ListReplacedPlans()[0].plan.weights_bound);
  EXPECT_EQ(file.cache.ListReplacedPlans()[0].reason, "tuned again");
  EXPECT_EQ(RawInt(path, "SELECT count(*) FROM best_plans WHERE weights_bound = 0"), 1);

  BestPlanRecord bound = *plan;
  bound.weights_bound = true;
  file.cache.PutBestPlan(bound, "tuned again");
  EXPECT_TRUE(file.cache.FindBestPlan(key)->weights_bound);
  BestPlanRecord next = bound;
  next.tuned_us = 7.0;
  file.cache.PutBestPlan(next, "tuned again");
  std::vector<ReplacedPlanRecord> history = file.cache.ListReplacedPlans();
  ASSERT_EQ(history.size(), 3u);
  EXPECT_TRUE(history[0].plan.weights_bound) << "archived with its flag";
  EXPECT_EQ(history[0].plan.tuned_us, 8.0);
  EXPECT_EQ(history[0].reason, "tuned again");
  // The column takes 0 or 1 only.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(raw, "UPDATE best_plans SET weights_bound = 2", nullptr, nullptr, nullptr),
            SQLITE_CONSTRAINT);
  sqlite3_close(raw);
}

}  // namespace
}  // namespace fusetune::db
