// WorkQueue in-process, on a real SQLite file: each job transition wakes exactly whom it should
// (workers waiting for work, tasks waiting for their jobs), and a transition that changed nothing
// wakes nobody.
#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <thread>

#include "db/database.h"
#include "db/job_queue.h"
#include "server/service/work_queue.h"

namespace fusetune::service {
namespace {

using std::chrono::milliseconds;
constexpr const char* kZen = "x86_64-zen5-avx512";

class WorkQueueTest : public ::testing::Test {
 protected:
  WorkQueueTest()
      : path_(std::filesystem::temp_directory_path() /
              ("fusetune_work_queue_" +
               std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
               std::to_string(::getpid()) + ".db")),
        db_(Fresh(path_)),
        queue_(db_),
        work_(queue_) {
    db::TaskRecord task;
    task.graph_text = "g";
    task.target = kZen;
    task_ = queue_.CreateTask(task);
  }
  ~WorkQueueTest() override {
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path_.string() + suffix);
  }
  static std::string Fresh(const std::filesystem::path& path) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
    return path.string();
  }
  static db::JobSpec Spec(const std::string& key, int max_attempts = 3) {
    return db::JobSpec{key, kZen, 1, {1}, max_attempts};
  }
  std::vector<int64_t> Finished(JobBoard::Cursor& cursor, bool* poll) {
    return work_.WaitFinished(cursor, milliseconds(20), poll);
  }

  std::filesystem::path path_;
  db::Database db_;
  db::JobQueue queue_;
  WorkQueue work_;
  int64_t task_ = 0;
};

TEST_F(WorkQueueTest, EnqueueWakesAWaitingWorkerAndCompleteWakesTheTask) {
  uint64_t seen = work_.WorkVersion();
  JobBoard::Cursor cursor = work_.Subscribe();
  bool woke = false;
  std::thread worker([&] {
    woke = work_.WaitForWork(seen, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  });
  auto started = std::chrono::steady_clock::now();
  work_.Enqueue(task_, {Spec("a")});
  worker.join();
  EXPECT_TRUE(woke);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));

  std::optional<db::JobRecord> job = work_.Lease("w1", kZen, 60000);
  ASSERT_TRUE(job);
  bool poll = false;
  EXPECT_TRUE(Finished(cursor, &poll).empty()) << "a lease finishes nothing";
  EXPECT_EQ(work_.Complete(job->id, kZen, {'o', 'k'}), db::ReportOutcome::kCompleted);
  EXPECT_EQ(Finished(cursor, &poll), std::vector<int64_t>{job->id});
  EXPECT_FALSE(poll);
  // A late duplicate report changes nothing and wakes nobody.
  EXPECT_EQ(work_.Complete(job->id, kZen, {'x'}), db::ReportOutcome::kDuplicate);
  EXPECT_TRUE(Finished(cursor, &poll).empty());
}

TEST_F(WorkQueueTest, AFailedAttemptWakesWorkersWhileAttemptsLastThenTheTask) {
  work_.Enqueue(task_, {Spec("a", /*max_attempts=*/2)});
  JobBoard::Cursor cursor = work_.Subscribe();
  int64_t id = work_.Lease("w1", kZen, 60000)->id;

  uint64_t before = work_.WorkVersion();
  EXPECT_EQ(work_.FailAttempt(id, "w2", "not mine"), std::nullopt);
  EXPECT_EQ(work_.WorkVersion(), before) << "nothing changed: no wake-up";

  EXPECT_EQ(work_.FailAttempt(id, "w1", "sandbox died"), db::JobState::kQueued);
  EXPECT_NE(work_.WorkVersion(), before) << "the job is back: workers are woken";
  bool poll = false;
  EXPECT_TRUE(Finished(cursor, &poll).empty()) << "the task still waits";

  ASSERT_EQ(work_.Lease("w1", kZen, 60000)->id, id);
  EXPECT_EQ(work_.FailAttempt(id, "w1", "sandbox died again"), db::JobState::kFailed);
  EXPECT_EQ(Finished(cursor, &poll), std::vector<int64_t>{id}) << "failed for good: the task";
}

TEST_F(WorkQueueTest, ExpiredLeasesRequeueAndAskTasksToPollForThoseOutOfAttempts) {
  work_.Enqueue(task_, {Spec("again", 3), Spec("last", 1)});
  ASSERT_TRUE(work_.Lease("w1", kZen, -1000));  // leased with a deadline already past
  ASSERT_TRUE(work_.Lease("w1", kZen, -1000));
  JobBoard::Cursor cursor = work_.Subscribe();
  uint64_t before = work_.WorkVersion();
  db::RequeueStats stats = work_.RequeueExpiredLeases();
  EXPECT_EQ(stats.requeued, 1);
  EXPECT_EQ(stats.failed, 1);
  EXPECT_NE(work_.WorkVersion(), before);
  bool poll = false;
  Finished(cursor, &poll);
  EXPECT_TRUE(poll) << "which job failed is unknown here: every waiting task polls";

  // Nothing expired: nobody is woken.
  before = work_.WorkVersion();
  EXPECT_EQ(work_.RequeueExpiredLeases().requeued, 0);
  EXPECT_EQ(work_.WorkVersion(), before);
  Finished(cursor, &poll);
  EXPECT_FALSE(poll);
}

TEST_F(WorkQueueTest, AWorkerThatRegistersAgainLosesItsLeases) {
  db::WorkerRecord w;
  w.id = "w1";
  w.target_fingerprint = kZen;
  EXPECT_EQ(work_.RegisterWorker(w).requeued, 0);
  work_.Enqueue(task_, {Spec("a")});
  int64_t id = work_.Lease("w1", kZen, 60000)->id;
  uint64_t before = work_.WorkVersion();
  db::RequeueStats released = work_.RegisterWorker(w);
  EXPECT_EQ(released.requeued, 1);
  EXPECT_NE(work_.WorkVersion(), before);
  db::JobRecord job = *queue_.FindJob(id);
  EXPECT_EQ(job.state, db::JobState::kQueued);
  EXPECT_EQ(job.errors, "attempt 1: the worker registered again (worker w1)");
}

TEST_F(WorkQueueTest, CancelDropsQueuedJobsAndStopEndsEveryWait) {
  work_.Enqueue(task_, {Spec("a"), Spec("b")});
  EXPECT_TRUE(work_.CancelTask(task_));
  EXPECT_EQ(queue_.CountJobs().total(), 0);
  EXPECT_FALSE(work_.CancelTask(task_));

  uint64_t seen = work_.WorkVersion();
  bool woke = true;
  std::thread worker([&] {
    woke = work_.WaitForWork(seen, std::chrono::steady_clock::now() + std::chrono::seconds(30));
  });
  std::this_thread::sleep_for(milliseconds(50));
  work_.Stop();
  worker.join();
  EXPECT_FALSE(woke) << "a stopped queue has no work";
  EXPECT_TRUE(work_.stopped());
}

}  // namespace
}  // namespace fusetune::service
