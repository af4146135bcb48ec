// Tasks, the job queue and workers: dedup, atomic leases, completion, requeue with bounded
// attempts, idempotent late reports, cancellation, and all-or-nothing writes.
#include <atomic>
#include <set>
#include <thread>

#include "db_test_util.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

using testing::TempDir;

constexpr const char* kZen = "x86_64-zen5-avx512";

int64_t NewTask(JobQueue& store, const std::string& client = "alice") {
  TaskRecord task;
  task.graph_text = "fn (%x: Tensor[(4), float32]) { exp(%x) }";
  task.options_json = R"({"budget":16})";
  task.target = kZen;
  task.client = client;
  return store.CreateTask(task);
}

JobSpec Spec(const std::string& job_key, const std::string& target = kZen, int max_attempts = 3,
             int threads = 1) {
  JobSpec spec;
  spec.job_key = job_key;
  spec.target = target;
  spec.threads = threads;
  spec.payload = {static_cast<uint8_t>(job_key.size()), 0xff, 0x00};
  spec.max_attempts = max_attempts;
  return spec;
}

std::vector<uint8_t> Answer(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

TEST(Tasks, RoundTripStatesAndProgress) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
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
  Database db(dir.File("q.db"));
  JobQueue store(db);
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

TEST(Jobs, EnqueueDeduplicatesByJobKeyTargetAndThreads) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  int64_t t1 = NewTask(store);
  int64_t t2 = NewTask(store);
  std::vector<EnqueueOutcome> first = store.EnqueueJobs(
      t1, {Spec("g1"), Spec("g2"), Spec("g1", "other"), Spec("g1", kZen, 3, /*threads=*/2)});
  ASSERT_EQ(first.size(), 4u);
  for (const EnqueueOutcome& o : first) EXPECT_EQ(o.kind, EnqueueOutcome::Kind::kQueued);
  // Another target or thread count is another job.
  EXPECT_EQ(std::set<int64_t>({first[0].job_id, first[1].job_id, first[2].job_id, first[3].job_id})
                .size(),
            4u);
  std::vector<EnqueueOutcome> second = store.EnqueueJobs(t2, {Spec("g1"), Spec("g3")});
  EXPECT_EQ(second[0].kind, EnqueueOutcome::Kind::kJoined);
  EXPECT_EQ(second[0].job_id, first[0].job_id);
  EXPECT_EQ(second[1].kind, EnqueueOutcome::Kind::kQueued);
  // The same task asking twice is one link.
  EXPECT_EQ(store.EnqueueJobs(t1, {Spec("g1")})[0].kind, EnqueueOutcome::Kind::kJoined);

  EXPECT_EQ(store.ListJobs().size(), 5u);
  EXPECT_EQ(store.ListJobs({.task_id = t1}).size(), 4u);
  EXPECT_EQ(store.ListJobs({.task_id = t2}).size(), 2u);
  EXPECT_EQ(store.CountJobs(t1).queued, 4);
  EXPECT_EQ(store.CountJobs(std::nullopt, kZen).queued, 4);
  EXPECT_EQ(store.CountJobs(std::nullopt, "other").queued, 1);
  JobRecord two_threads = *store.FindJob(first[3].job_id);
  EXPECT_EQ(two_threads.job_key, "g1");
  EXPECT_EQ(two_threads.target, kZen);
  EXPECT_EQ(two_threads.threads, 2);
}

TEST(Jobs, LeaseIsOldestFirstPerTargetAndSetsDeadline) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  int64_t task = NewTask(store);
  store.EnqueueJobs(task, {Spec("a"), Spec("b", "arm"), Spec("c"), Spec("d", "any")});
  std::optional<JobRecord> j1 = store.LeaseJob("w1", kZen, 30000, 1000);
  ASSERT_TRUE(j1);
  EXPECT_EQ(j1->job_key, "a");
  EXPECT_EQ(j1->state, JobState::kLeased);
  EXPECT_EQ(j1->lease_owner, "w1");
  EXPECT_EQ(j1->lease_deadline, 31000);
  EXPECT_EQ(j1->attempts, 1);
  EXPECT_EQ(j1->payload, (std::vector<uint8_t>{1, 0xff, 0x00}));
  EXPECT_EQ(store.LeaseJob("w2", kZen, 30000, 1000)->job_key, "c");
  EXPECT_EQ(store.LeaseJob("w3", kZen, 30000, 1000)->job_key, "d");  // "any"
  EXPECT_FALSE(store.LeaseJob("w4", kZen, 30000, 1000));             // b is for arm only
  EXPECT_EQ(store.LeaseJob("w5", "arm", 30000, 1000)->job_key, "b");
  EXPECT_EQ(store.CountJobs().leased, 4);
  EXPECT_THROW(store.LeaseJob("", kZen, 1, 1), UserError);
}

TEST(Jobs, CompleteKeepsTheAnswerOnceAndLateReportsAreDuplicates) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  int64_t task = NewTask(store);
  store.EnqueueJobs(task, {Spec("g")});
  JobRecord job = *store.LeaseJob("w1", kZen, 1000, 1);
  // w1's lease expires and w2 takes the job over.
  EXPECT_EQ(store.RequeueExpiredLeases(5000).requeued, 1);
  JobRecord again = *store.LeaseJob("w2", kZen, 1000, 5000);
  EXPECT_EQ(again.id, job.id);
  EXPECT_EQ(again.attempts, 2);
  // The late report of w1 still counts (the answer is good) and completes the job...
  EXPECT_EQ(store.CompleteJob(job.id, kZen, Answer("w1")), ReportOutcome::kCompleted);
  // ...so w2's report is a duplicate and changes nothing.
  EXPECT_EQ(store.CompleteJob(job.id, kZen, Answer("w2")), ReportOutcome::kDuplicate);
  JobRecord done = *store.FindJob(job.id);
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.result, Answer("w1"));
  EXPECT_EQ(done.lease_owner, "");
  EXPECT_EQ(done.result_target, kZen);
  EXPECT_EQ(store.CompleteJob(4242, kZen, Answer("x")), ReportOutcome::kUnknownJob);
  // A task that needs the same job later joins the done row and reads the answer back.
  int64_t later = NewTask(store);
  EnqueueOutcome joined = store.EnqueueJobs(later, {Spec("g")})[0];
  EXPECT_EQ(joined.kind, EnqueueOutcome::Kind::kJoined);
  EXPECT_EQ(store.FindJob(joined.job_id)->result, Answer("w1"));
}

TEST(Jobs, ExpiredLeasesRequeueUntilAttemptsRunOut) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
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

  // A new task that needs the job gives it fresh attempts.
  std::vector<EnqueueOutcome> retry = store.EnqueueJobs(NewTask(store), {Spec("g")});
  EXPECT_EQ(retry[0].kind, EnqueueOutcome::Kind::kRetried);
  EXPECT_EQ(retry[0].job_id, job.id);
  JobRecord leased = *store.LeaseJob("w3", kZen, 100, 2000);
  EXPECT_EQ(leased.attempts, 1);
}

TEST(Jobs, FailJobAttemptOnlyByTheLeaseHolder) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  store.EnqueueJobs(NewTask(store), {Spec("g", kZen, 1)});
  JobRecord job = *store.LeaseJob("w1", kZen, 1000);
  EXPECT_EQ(store.FailJobAttempt(job.id, "w2", "sandbox could not fork"), std::nullopt);
  // max_attempts = 1: the job fails for good, and the caller learns it without another read.
  EXPECT_EQ(store.FailJobAttempt(job.id, "w1", "sandbox could not fork"), JobState::kFailed);
  JobRecord failed = *store.FindJob(job.id);
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_EQ(failed.errors, "attempt 1: sandbox could not fork (worker w1)");
  EXPECT_EQ(store.FailJobAttempt(job.id, "w1", "again"), std::nullopt);

  // With attempts left, the job goes back to the queue.
  store.EnqueueJobs(NewTask(store), {Spec("h", kZen, 2)});
  JobRecord h = *store.LeaseJob("w1", kZen, 1000);
  EXPECT_EQ(store.FailJobAttempt(h.id, "w1", "out of memory"), JobState::kQueued);
  EXPECT_EQ(store.FindJob(h.id)->state, JobState::kQueued);
}

TEST(Workers, RegisterHeartbeatReleaseAndOffline) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
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
  // A heartbeat extends the running job's lease past the deadline that would have expired it.
  EXPECT_TRUE(store.Heartbeat("w1", a.id, 1000, 900));
  EXPECT_EQ(store.FindJob(a.id)->lease_deadline, 1900);
  EXPECT_EQ(store.RequeueExpiredLeases(1500).requeued, 0);
  EXPECT_FALSE(store.Heartbeat("ghost", a.id, 1000, 900));

  // A worker that died: its leases go back at once.
  RequeueStats released = store.ReleaseWorkerLeases("w1", "worker re-registered", 1000);
  EXPECT_EQ(released.requeued, 1);
  EXPECT_EQ(store.FindJob(a.id)->errors, "attempt 1: worker re-registered (worker w1)");

  EXPECT_EQ(store.MarkWorkersOffline(NowMs() + 1), 2);
  EXPECT_EQ(store.FindWorker("w2")->state, WorkerState::kOffline);
  for (const WorkerRecord& w : store.ListWorkers()) EXPECT_EQ(w.state, WorkerState::kOffline);
  EXPECT_TRUE(store.Heartbeat("w2", 0, 1000));
  EXPECT_EQ(store.FindWorker("w2")->state, WorkerState::kOnline);
  EXPECT_THROW(store.RegisterWorker(WorkerRecord{}), UserError);
}

TEST(Jobs, CancelDropsQueuedJobsNoLiveTaskNeeds) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  int64_t t1 = NewTask(store);
  int64_t t2 = NewTask(store);
  store.EnqueueJobs(t1, {Spec("leased"), Spec("shared"), Spec("queued_for_t1")});
  store.EnqueueJobs(t2, {Spec("shared")});
  JobRecord leased = *store.LeaseJob("w1", kZen, 1000);
  ASSERT_EQ(leased.job_key, "leased");
  EXPECT_TRUE(store.CancelTask(t1));
  EXPECT_EQ(store.FindTask(t1)->state, TaskState::kCancelled);
  std::set<std::string> left;
  for (const JobRecord& j : store.ListJobs()) left.insert(j.job_key);
  // queued_for_t1 is dropped; the leased one finishes (its measurement is worth keeping) and t2
  // still needs the shared one.
  EXPECT_EQ(left, (std::set<std::string>{"leased", "shared"}));
  EXPECT_FALSE(store.CancelTask(t1));
}

// A rejected request leaves nothing: the third job (an empty signature) fails its CHECK after two
// good ones were inserted, and the two go too.
TEST(Atomicity, AFailingMultiStatementWriteLeavesNothing) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
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

// Many threads, two Databases on one file: every job is leased exactly once.
TEST(Jobs, ConcurrentLeasesNeverHandOutAJobTwice) {
  TempDir dir;
  std::string path = dir.File("q.db");
  Database db_a(path);
  Database db_b(path);
  JobQueue a(db_a);
  JobQueue b(db_b);
  std::vector<JobSpec> specs;
  for (int i = 0; i < 200; ++i) specs.push_back(Spec("g" + std::to_string(i)));
  a.EnqueueJobs(NewTask(a), specs);
  std::mutex mu;
  std::vector<int64_t> leased;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      JobQueue& store = t % 2 == 0 ? a : b;
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

// The worker's answer is kept on the job row: a second task that needs the same job joins it and
// reads the answer back, and a late report is a duplicate.
TEST(Jobs, CompleteKeepsTheAnswerOnTheRow) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  int64_t first = NewTask(store);
  auto queued = store.EnqueueJobs(first, {Spec("abc"), Spec("def")});
  ASSERT_EQ(queued.size(), 2u);
  std::optional<JobRecord> job = store.LeaseJob("w1", kZen, 60000);
  ASSERT_TRUE(job);
  const std::vector<uint8_t> answer = {'{', '}', 0x00, 0x7f};
  EXPECT_EQ(store.CompleteJob(job->id, kZen, answer), ReportOutcome::kCompleted);
  EXPECT_EQ(store.CompleteJob(job->id, kZen, {'x'}), ReportOutcome::kDuplicate);
  EXPECT_EQ(store.CompleteJob(999, kZen, answer), ReportOutcome::kUnknownJob);
  JobRecord done = *store.FindJob(job->id);
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.result, answer);
  EXPECT_EQ(done.result_target, kZen);

  int64_t second = NewTask(store, "bob");
  auto joined = store.EnqueueJobs(second, {Spec("abc")});
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

TEST(Jobs, CompleteRefusesAnotherTarget) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  store.EnqueueJobs(NewTask(store), {Spec("abc"), Spec("any-job", "any")});
  std::optional<JobRecord> job = store.LeaseJob("w1", kZen, 60000);
  ASSERT_TRUE(job);
  EXPECT_THROW(store.CompleteJob(job->id, "arm64-m1", {'x'}), UserError);
  EXPECT_THROW(store.CompleteJob(job->id, "any", {'x'}), UserError);
  EXPECT_EQ(store.FindJob(job->id)->state, JobState::kLeased);
  std::optional<JobRecord> any = store.LeaseJob("w2", "arm64-m1", 60000);
  ASSERT_TRUE(any);
  EXPECT_EQ(any->job_key, "any-job");
  EXPECT_EQ(store.CompleteJob(any->id, "arm64-m1", {'y'}), ReportOutcome::kCompleted);
  EXPECT_EQ(store.FindJob(any->id)->result_target, "arm64-m1");
}

// A heartbeat extends the job the worker says it runs, not a lease whose answer it never got.
TEST(Workers, HeartbeatExtendsOnlyTheCurrentJob) {
  TempDir dir;
  Database db(dir.File("q.db"));
  JobQueue store(db);
  WorkerRecord w;
  w.id = "w1";
  w.target_fingerprint = kZen;
  store.RegisterWorker(w);
  store.EnqueueJobs(NewTask(store), {Spec("a"), Spec("b")});
  std::optional<JobRecord> lost = store.LeaseJob("w1", kZen, 1000, 10000);
  std::optional<JobRecord> running = store.LeaseJob("w1", kZen, 1000, 10000);
  ASSERT_TRUE(lost && running);
  EXPECT_TRUE(store.Heartbeat("w1", running->id, 1000, 10500));
  EXPECT_FALSE(store.Heartbeat("nobody", running->id, 1000, 10500));
  EXPECT_EQ(store.FindJob(running->id)->lease_deadline, 11500);
  EXPECT_EQ(store.FindJob(lost->id)->lease_deadline, 11000);
  RequeueStats stats = store.RequeueExpiredLeases(11200);
  EXPECT_EQ(stats.requeued, 1);
  EXPECT_EQ(store.FindJob(lost->id)->state, JobState::kQueued);
  EXPECT_EQ(store.FindJob(running->id)->state, JobState::kLeased);
  EXPECT_TRUE(store.Heartbeat("w1", 0, 1000, 11300));
  EXPECT_EQ(store.FindJob(running->id)->lease_deadline, 11500) << "idle: nothing extended";
}

}  // namespace
}  // namespace fusetune::db
