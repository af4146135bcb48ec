// Tasks, the job queue and workers: dedup, atomic leases, completion, requeue with bounded
// attempts, idempotent late reports, cancellation, and all-or-nothing writes.
#include <atomic>
#include <set>
#include <thread>

#include "db/store.h"
#include "db_test_util.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

using testing::Key;
using testing::TempDir;

constexpr const char* kZen = "x86_64-zen5-avx512";

int64_t NewTask(Store& store, const std::string& client = "alice") {
  TaskRecord task;
  task.graph_text = "fn (%x: Tensor[(4), float32]) { exp(%x) }";
  task.options_json = R"({"budget":16})";
  task.target = kZen;
  task.client = client;
  return store.CreateTask(task);
}

JobSpec Spec(const std::string& group, const std::string& target = kZen, int max_attempts = 3) {
  JobSpec spec;
  spec.key = Key(group, "", target);
  spec.payload = {static_cast<uint8_t>(group.size()), 0xff, 0x00};
  spec.max_attempts = max_attempts;
  return spec;
}

MeasurementRecord ResultFor(const JobRecord& job, double us, const std::string& target = kZen) {
  MeasurementKey key = job.key;
  key.target_fingerprint = target;
  return testing::OkMeasurement(key, us);
}

TEST(Tasks, RoundTripStatesAndProgress) {
  TempDir dir;
  Store store(dir.File("q.db"));
  int64_t id = NewTask(store);
  TaskRecord t = *store.FindTask(id);
  EXPECT_EQ(t.state, TaskState::kQueued);
  EXPECT_EQ(t.options_json, R"({"budget":16})");
  EXPECT_EQ(t.client, "alice");
  EXPECT_GT(t.created_at, 0);

  EXPECT_TRUE(store.SetTaskState(id, TaskState::kRunning));
  EXPECT_TRUE(store.SetTaskProgress(id, 3, 10));
  EXPECT_TRUE(store.FinishTask(id, R"({"regions":[]})"));
  t = *store.FindTask(id);
  EXPECT_EQ(t.state, TaskState::kDone);
  EXPECT_EQ(t.progress_done, 10);  // a finished task is complete, even if resumed with all measured
  EXPECT_EQ(t.progress_total, 10);
  EXPECT_EQ(t.result_json, R"({"regions":[]})");
  // Terminal is final.
  EXPECT_FALSE(store.SetTaskState(id, TaskState::kFailed, "late"));
  EXPECT_FALSE(store.CancelTask(id));
  EXPECT_EQ(store.FindTask(id)->state, TaskState::kDone);
  EXPECT_FALSE(store.SetTaskState(9999, TaskState::kRunning));
  EXPECT_FALSE(store.FindTask(9999));
}

TEST(Tasks, ListByStateAndClient) {
  TempDir dir;
  Store store(dir.File("q.db"));
  int64_t a = NewTask(store, "alice");
  int64_t b = NewTask(store, "bob");
  int64_t c = NewTask(store, "alice");
  store.SetTaskState(b, TaskState::kRunning);
  store.SetTaskState(c, TaskState::kFailed, "no workers");
  EXPECT_EQ(store.ListTasks().size(), 3u);
  std::vector<TaskRecord> unfinished =
      store.ListTasks({.states = {TaskState::kQueued, TaskState::kRunning}});
  ASSERT_EQ(unfinished.size(), 2u);
  EXPECT_EQ(unfinished[0].id, a);
  EXPECT_EQ(unfinished[1].id, b);
  EXPECT_EQ(store.ListTasks({.client = "alice"}).size(), 2u);
  std::vector<TaskRecord> newest = store.ListTasks({.limit = 1});
  ASSERT_EQ(newest.size(), 1u);
  EXPECT_EQ(newest[0].id, c);
  EXPECT_EQ(newest[0].error, "no workers");
}

TEST(Jobs, EnqueueDeduplicatesByMeasurementKey) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.PutMeasurement(testing::OkMeasurement(Key("measured", "", kZen), 5));
  int64_t t1 = NewTask(store);
  int64_t t2 = NewTask(store);
  std::vector<EnqueueOutcome> first =
      store.EnqueueJobs(t1, {Spec("g1"), Spec("g2"), Spec("measured"), Spec("g1", "other")});
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0].kind, EnqueueOutcome::Kind::kQueued);
  EXPECT_EQ(first[1].kind, EnqueueOutcome::Kind::kQueued);
  EXPECT_EQ(first[2].kind, EnqueueOutcome::Kind::kAlreadyMeasured);
  EXPECT_EQ(first[2].job_id, 0);
  EXPECT_EQ(first[3].kind, EnqueueOutcome::Kind::kQueued);  // another target is another key
  std::vector<EnqueueOutcome> second = store.EnqueueJobs(t2, {Spec("g1"), Spec("g3")});
  EXPECT_EQ(second[0].kind, EnqueueOutcome::Kind::kJoined);
  EXPECT_EQ(second[0].job_id, first[0].job_id);
  EXPECT_EQ(second[1].kind, EnqueueOutcome::Kind::kQueued);
  // The same task asking twice is one link.
  EXPECT_EQ(store.EnqueueJobs(t1, {Spec("g1")})[0].kind, EnqueueOutcome::Kind::kJoined);

  EXPECT_EQ(store.ListJobs().size(), 4u);
  EXPECT_EQ(store.ListJobs({.task_id = t1}).size(), 3u);
  EXPECT_EQ(store.ListJobs({.task_id = t2}).size(), 2u);
  EXPECT_EQ(store.CountJobs(t1).queued, 3);
  EXPECT_EQ(store.CountJobs(std::nullopt, kZen).queued, 3);
  EXPECT_EQ(store.CountJobs(std::nullopt, "other").queued, 1);
}

TEST(Jobs, LeaseIsOldestFirstPerTargetAndSetsDeadline) {
  TempDir dir;
  Store store(dir.File("q.db"));
  int64_t task = NewTask(store);
  store.EnqueueJobs(task, {Spec("a"), Spec("b", "arm"), Spec("c"), Spec("d", "any")});
  std::optional<JobRecord> j1 = store.LeaseJob("w1", kZen, 30000, 1000);
  ASSERT_TRUE(j1);
  EXPECT_EQ(j1->key.group_signature, "a");
  EXPECT_EQ(j1->state, JobState::kLeased);
  EXPECT_EQ(j1->lease_owner, "w1");
  EXPECT_EQ(j1->lease_deadline, 31000);
  EXPECT_EQ(j1->attempts, 1);
  EXPECT_EQ(j1->payload, (std::vector<uint8_t>{1, 0xff, 0x00}));
  EXPECT_EQ(store.LeaseJob("w2", kZen, 30000, 1000)->key.group_signature, "c");
  EXPECT_EQ(store.LeaseJob("w3", kZen, 30000, 1000)->key.group_signature, "d");  // "any"
  EXPECT_FALSE(store.LeaseJob("w4", kZen, 30000, 1000));  // b is for arm only
  EXPECT_EQ(store.LeaseJob("w5", "arm", 30000, 1000)->key.group_signature, "b");
  EXPECT_EQ(store.CountJobs().leased, 4);
  EXPECT_THROW(store.LeaseJob("", kZen, 1, 1), UserError);
}

TEST(Jobs, CompleteStoresTheResultOnceAndLateReportsAreDuplicates) {
  TempDir dir;
  Store store(dir.File("q.db"));
  int64_t task = NewTask(store);
  store.EnqueueJobs(task, {Spec("g")});
  JobRecord job = *store.LeaseJob("w1", kZen, 1000, 1);
  // w1's lease expires and w2 takes the job over.
  EXPECT_EQ(store.RequeueExpiredLeases(5000).requeued, 1);
  JobRecord again = *store.LeaseJob("w2", kZen, 1000, 5000);
  EXPECT_EQ(again.id, job.id);
  EXPECT_EQ(again.attempts, 2);
  // The late report of w1 still counts (the measurement is good) and completes the job...
  EXPECT_EQ(store.CompleteJob(job.id, ResultFor(job, 10)), ReportOutcome::kCompleted);
  // ...so w2's report is a duplicate and changes nothing.
  EXPECT_EQ(store.CompleteJob(job.id, ResultFor(job, 99)), ReportOutcome::kDuplicate);
  EXPECT_EQ(store.FindMeasurement(job.key)->median_us, 10);
  JobRecord done = *store.FindJob(job.id);
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.lease_owner, "");
  EXPECT_EQ(done.result_target, kZen);
  EXPECT_EQ(store.CompleteJob(4242, ResultFor(job, 1)), ReportOutcome::kUnknownJob);
  // A finished measurement is never queued again.
  int64_t later = NewTask(store);
  EXPECT_EQ(store.EnqueueJobs(later, {Spec("g")})[0].kind, EnqueueOutcome::Kind::kAlreadyMeasured);
}

TEST(Jobs, AnInvalidResultCompletesTheJob) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.EnqueueJobs(NewTask(store), {Spec("g")});
  JobRecord job = *store.LeaseJob("w1", kZen, 1000);
  EXPECT_EQ(store.CompleteJob(job.id, testing::InvalidMeasurement(job.key, "crash: SIGSEGV")),
            ReportOutcome::kCompleted);
  EXPECT_EQ(store.FindMeasurement(job.key)->status, MeasurementStatus::kInvalid);
  EXPECT_EQ(store.FindJob(job.id)->state, JobState::kDone);
}

TEST(Jobs, AResultForAnotherKeyIsRefusedAndChangesNothing) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.EnqueueJobs(NewTask(store), {Spec("g")});
  JobRecord job = *store.LeaseJob("w1", kZen, 1000);
  MeasurementRecord wrong = ResultFor(job, 1);
  wrong.key.schedule = "tile_m=4";
  EXPECT_THROW(store.CompleteJob(job.id, wrong), UserError);
  EXPECT_THROW(store.CompleteJob(job.id, ResultFor(job, 1, "arm")), UserError);
  EXPECT_EQ(store.FindJob(job.id)->state, JobState::kLeased);
  EXPECT_EQ(store.ListMeasurements().size(), 0u);
}

TEST(Jobs, AnyTargetJobRecordsTheWorkersFingerprint) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.EnqueueJobs(NewTask(store), {Spec("g", "any")});
  JobRecord job = *store.LeaseJob("w1", "arm-neoverse", 1000);
  EXPECT_EQ(store.CompleteJob(job.id, ResultFor(job, 3, "arm-neoverse")),
            ReportOutcome::kCompleted);
  EXPECT_EQ(store.FindJob(job.id)->result_target, "arm-neoverse");
  EXPECT_EQ(store.FindMeasurement(Key("g", "", "arm-neoverse"))->median_us, 3);
}

TEST(Jobs, ExpiredLeasesRequeueUntilAttemptsRunOut) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.EnqueueJobs(NewTask(store), {Spec("g", kZen, /*max_attempts=*/2)});
  JobRecord job = *store.LeaseJob("w1", kZen, 100, 1);
  EXPECT_EQ(store.RequeueExpiredLeases(101).requeued, 0);  // deadline not passed yet
  RequeueStats first = store.RequeueExpiredLeases(102);
  EXPECT_EQ(first.requeued, 1);
  EXPECT_EQ(first.failed, 0);
  JobRecord queued = *store.FindJob(job.id);
  EXPECT_EQ(queued.state, JobState::kQueued);
  EXPECT_EQ(queued.lease_owner, "");
  EXPECT_EQ(queued.errors, "attempt 1: lease expired (worker w1)");

  store.LeaseJob("w2", kZen, 100, 200);
  RequeueStats second = store.RequeueExpiredLeases(1000);
  EXPECT_EQ(second.requeued, 0);
  EXPECT_EQ(second.failed, 1);
  JobRecord failed = *store.FindJob(job.id);
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_EQ(failed.attempts, 2);
  EXPECT_EQ(failed.errors,
            "attempt 1: lease expired (worker w1); attempt 2: lease expired (worker w2)");
  EXPECT_FALSE(store.LeaseJob("w3", kZen, 100, 1000));

  // A new task that needs the measurement gives it fresh attempts.
  std::vector<EnqueueOutcome> retry = store.EnqueueJobs(NewTask(store), {Spec("g")});
  EXPECT_EQ(retry[0].kind, EnqueueOutcome::Kind::kRetried);
  EXPECT_EQ(retry[0].job_id, job.id);
  JobRecord leased = *store.LeaseJob("w3", kZen, 100, 2000);
  EXPECT_EQ(leased.attempts, 1);
}

TEST(Jobs, FailJobAttemptOnlyByTheLeaseHolder) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.EnqueueJobs(NewTask(store), {Spec("g", kZen, 1)});
  JobRecord job = *store.LeaseJob("w1", kZen, 1000);
  EXPECT_FALSE(store.FailJobAttempt(job.id, "w2", "sandbox could not fork"));
  EXPECT_TRUE(store.FailJobAttempt(job.id, "w1", "sandbox could not fork"));
  JobRecord failed = *store.FindJob(job.id);
  EXPECT_EQ(failed.state, JobState::kFailed);  // max_attempts = 1
  EXPECT_EQ(failed.errors, "attempt 1: sandbox could not fork (worker w1)");
  EXPECT_FALSE(store.FailJobAttempt(job.id, "w1", "again"));
}

TEST(Workers, RegisterHeartbeatReleaseAndOffline) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.RegisterWorker(WorkerRecord{"w1", kZen, 2, "0.1.0"});
  store.RegisterWorker(WorkerRecord{"w2", kZen, 8, "0.1.0"});
  // A reconnect is the same row, updated.
  store.RegisterWorker(WorkerRecord{"w1", kZen, 4, "0.2.0"});
  std::vector<WorkerRecord> workers = store.ListWorkers();
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0].cores, 4);
  EXPECT_EQ(workers[0].version, "0.2.0");
  EXPECT_EQ(workers[0].state, WorkerState::kOnline);

  store.EnqueueJobs(NewTask(store), {Spec("a"), Spec("b")});
  JobRecord a = *store.LeaseJob("w1", kZen, 1000, 1);
  // A heartbeat extends the worker's leases past the deadline that would have expired them.
  EXPECT_TRUE(store.Heartbeat("w1", 1000, 900));
  EXPECT_EQ(store.FindJob(a.id)->lease_deadline, 1900);
  EXPECT_EQ(store.RequeueExpiredLeases(1500).requeued, 0);
  EXPECT_FALSE(store.Heartbeat("ghost", 1000, 900));

  // A worker that died: its leases go back at once.
  RequeueStats released = store.ReleaseWorkerLeases("w1", "worker re-registered", 1000);
  EXPECT_EQ(released.requeued, 1);
  EXPECT_EQ(store.FindJob(a.id)->errors, "attempt 1: worker re-registered (worker w1)");

  EXPECT_EQ(store.MarkWorkersOffline(NowMs() + 1), 2);
  EXPECT_EQ(store.FindWorker("w2")->state, WorkerState::kOffline);
  EXPECT_EQ(store.Stats().workers_online, 0);
  EXPECT_TRUE(store.Heartbeat("w2", 1000));
  EXPECT_EQ(store.FindWorker("w2")->state, WorkerState::kOnline);
  EXPECT_THROW(store.RegisterWorker(WorkerRecord{}), UserError);
}

TEST(Jobs, CancelDropsQueuedJobsNoLiveTaskNeeds) {
  TempDir dir;
  Store store(dir.File("q.db"));
  int64_t t1 = NewTask(store);
  int64_t t2 = NewTask(store);
  store.EnqueueJobs(t1, {Spec("leased"), Spec("shared"), Spec("queued_for_t1")});
  store.EnqueueJobs(t2, {Spec("shared")});
  JobRecord leased = *store.LeaseJob("w1", kZen, 1000);
  ASSERT_EQ(leased.key.group_signature, "leased");
  EXPECT_TRUE(store.CancelTask(t1));
  EXPECT_EQ(store.FindTask(t1)->state, TaskState::kCancelled);
  std::set<std::string> left;
  for (const JobRecord& j : store.ListJobs()) left.insert(j.key.group_signature);
  // queued_for_t1 is dropped; the leased one finishes (its measurement is worth keeping) and t2
  // still needs the shared one.
  EXPECT_EQ(left, (std::set<std::string>{"leased", "shared"}));
  EXPECT_FALSE(store.CancelTask(t1));
}

// A rejected request leaves nothing: the third job (an empty signature) fails its CHECK after two
// good ones were inserted, and the two go too.
TEST(Atomicity, AFailingMultiStatementWriteLeavesNothing) {
  TempDir dir;
  Store store(dir.File("q.db"));
  int64_t task = NewTask(store);
  std::vector<JobSpec> specs = {Spec("g1"), Spec("g2"), Spec("")};
  EXPECT_THROW(store.EnqueueJobs(task, specs), StoreError);
  EXPECT_EQ(store.ListJobs().size(), 0u);
  EXPECT_EQ(store.CountJobs(task).total(), 0);
  // A task that does not exist violates the task_jobs foreign key: nothing either.
  EXPECT_THROW(store.EnqueueJobs(task + 100, {Spec("g1")}), StoreError);
  EXPECT_EQ(store.ListJobs().size(), 0u);
  // The store is still usable afterwards.
  EXPECT_EQ(store.EnqueueJobs(task, {Spec("g1")})[0].kind, EnqueueOutcome::Kind::kQueued);
}

// Many threads, two Stores on one file: every job is leased exactly once.
TEST(Jobs, ConcurrentLeasesNeverHandOutAJobTwice) {
  TempDir dir;
  std::string path = dir.File("q.db");
  Store a(path);
  Store b(path);
  std::vector<JobSpec> specs;
  for (int i = 0; i < 200; ++i) specs.push_back(Spec("g" + std::to_string(i)));
  a.EnqueueJobs(NewTask(a), specs);
  std::mutex mu;
  std::vector<int64_t> leased;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      Store& store = t % 2 == 0 ? a : b;
      std::string worker = "w" + std::to_string(t);
      while (std::optional<JobRecord> job = store.LeaseJob(worker, kZen, 60000)) {
        std::lock_guard lock(mu);
        leased.push_back(job->id);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(leased.size(), 200u);
  EXPECT_EQ(std::set<int64_t>(leased.begin(), leased.end()).size(), 200u);
  EXPECT_EQ(a.CountJobs().leased, 200);
}

// Jobs that time several plans keep the worker's answer on the job row: a second task that needs
// the same job joins it and reads the answer back, and a late report is a duplicate.
TEST(Jobs, CompleteWithResultKeepsTheAnswerOnTheRow) {
  TempDir dir;
  Store store(dir.File("q.db"));
  int64_t first = NewTask(store);
  auto queued = store.EnqueueJobs(first, {Spec("job:abc"), Spec("job:def")});
  ASSERT_EQ(queued.size(), 2u);
  std::optional<JobRecord> job = store.LeaseJob("w1", kZen, 60000);
  ASSERT_TRUE(job);
  const std::vector<uint8_t> answer = {'{', '}', 0x00, 0x7f};
  EXPECT_EQ(store.CompleteJobWithResult(job->id, kZen, answer), ReportOutcome::kCompleted);
  EXPECT_EQ(store.CompleteJobWithResult(job->id, kZen, {'x'}), ReportOutcome::kDuplicate);
  EXPECT_EQ(store.CompleteJobWithResult(999, kZen, answer), ReportOutcome::kUnknownJob);
  JobRecord done = *store.FindJob(job->id);
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.result, answer);
  EXPECT_EQ(done.result_target, kZen);
  EXPECT_EQ(store.Stats().measurements_ok, 0) << "no measurement row for a job: key";

  int64_t second = NewTask(store, "bob");
  auto joined = store.EnqueueJobs(second, {Spec("job:abc")});
  EXPECT_EQ(joined[0].kind, EnqueueOutcome::Kind::kJoined);
  EXPECT_EQ(joined[0].job_id, job->id);
  std::vector<JobStatus> states = store.ListJobStates(second);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].id, job->id);
  EXPECT_EQ(states[0].state, JobState::kDone);
  std::vector<JobStatus> first_states = store.ListJobStates(first);
  ASSERT_EQ(first_states.size(), 2u);
  EXPECT_EQ(first_states[1].state, JobState::kQueued);
}

TEST(Jobs, CompleteWithResultRefusesAnotherTarget) {
  TempDir dir;
  Store store(dir.File("q.db"));
  store.EnqueueJobs(NewTask(store), {Spec("job:abc"), Spec("job:any", "any")});
  std::optional<JobRecord> job = store.LeaseJob("w1", kZen, 60000);
  ASSERT_TRUE(job);
  EXPECT_THROW(store.CompleteJobWithResult(job->id, "arm64-m1", {'x'}), UserError);
  EXPECT_THROW(store.CompleteJobWithResult(job->id, "any", {'x'}), UserError);
  EXPECT_EQ(store.FindJob(job->id)->state, JobState::kLeased);
  std::optional<JobRecord> any = store.LeaseJob("w2", "arm64-m1", 60000);
  ASSERT_TRUE(any);
  EXPECT_EQ(any->key.group_signature, "job:any");
  EXPECT_EQ(store.CompleteJobWithResult(any->id, "arm64-m1", {'y'}), ReportOutcome::kCompleted);
  EXPECT_EQ(store.FindJob(any->id)->result_target, "arm64-m1");
}

// A heartbeat extends the job the worker says it runs, not a lease whose answer it never got.
TEST(Workers, HeartbeatRunningExtendsOnlyTheCurrentJob) {
  TempDir dir;
  Store store(dir.File("q.db"));
  WorkerRecord w;
  w.id = "w1";
  w.target_fingerprint = kZen;
  store.RegisterWorker(w);
  store.EnqueueJobs(NewTask(store), {Spec("a"), Spec("b")});
  std::optional<JobRecord> lost = store.LeaseJob("w1", kZen, 1000, 10000);
  std::optional<JobRecord> running = store.LeaseJob("w1", kZen, 1000, 10000);
  ASSERT_TRUE(lost && running);
  EXPECT_TRUE(store.HeartbeatRunning("w1", running->id, 1000, 10500));
  EXPECT_FALSE(store.HeartbeatRunning("nobody", running->id, 1000, 10500));
  EXPECT_EQ(store.FindJob(running->id)->lease_deadline, 11500);
  EXPECT_EQ(store.FindJob(lost->id)->lease_deadline, 11000);
  RequeueStats stats = store.RequeueExpiredLeases(11200);
  EXPECT_EQ(stats.requeued, 1);
  EXPECT_EQ(store.FindJob(lost->id)->state, JobState::kQueued);
  EXPECT_EQ(store.FindJob(running->id)->state, JobState::kLeased);
  EXPECT_TRUE(store.HeartbeatRunning("w1", 0, 1000, 11300));
  EXPECT_EQ(store.FindJob(running->id)->lease_deadline, 11500) << "idle: nothing extended";
}

}  // namespace
}  // namespace fusetune::db
