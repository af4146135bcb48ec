#pragma once
// The JobQueue: the service's durable state. Tasks (one tune request each), the job queue the
// worker farm leases from (one queue per target), and the worker registry. It is the state of one
// server, not knowledge to share: nothing of it is exported.
//
// Job life cycle:
//
//   EnqueueJobs ──▶ queued ──LeaseJob──▶ leased ──CompleteJob──▶ done
//                     ▲                    │
//                     └── FailJobAttempt / RequeueExpiredLeases / ReleaseWorkerLeases
//                                          │  (attempts == max_attempts)
//                                          ▼
//                                        failed ──(a new task needs it: EnqueueJobs)──▶ queued
//
// `attempts` counts leases handed out; a lease that ends without a result puts the job back in the
// queue unless it has used all its attempts. A report is accepted while the job is not done, from
// whichever worker sends it, so a late report after a requeue counts once and the second is a
// duplicate. In the service, server/service/work_queue.h makes each transition and wakes whoever
// waits for it.
//
// A JobQueue is a view on a Database (db/database.h) and shares its connection with the Cache;
// both may be used from any number of threads. Every call that writes is one transaction.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/database.h"
#include "db/records.h"

namespace fusetune::db {

// ---- filters (an empty string / nullopt / 0 matches everything) ----

struct TaskFilter {
  std::vector<TaskState> states;  // empty = any state
  std::string client;
  int64_t limit = 0;  // keeps the newest `limit`; results are oldest first
};

struct JobFilter {
  std::optional<int64_t> task_id;
  std::string target;
  std::optional<JobState> state;
  int64_t limit = 0;
};

// ---- results ----

struct EnqueueOutcome {
  enum class Kind {
    kQueued,   // a new job
    kJoined,   // an existing job (any state but failed) now also serves this task
    kRetried,  // an existing failed job, queued again with fresh attempts for this task
  };
  Kind kind = Kind::kQueued;
  int64_t job_id = 0;
};

enum class ReportOutcome {
  kCompleted,  // the answer was stored and the job is done
  kDuplicate,  // the job was already done (a late or repeated report): nothing changed
  kUnknownJob,
};

struct RequeueStats {
  int64_t requeued = 0;
  int64_t failed = 0;  // out of attempts
};

struct TaskCounts {
  int64_t queued = 0, running = 0, done = 0, failed = 0, cancelled = 0;
  int64_t total() const { return queued + running + done + failed + cancelled; }
};

struct JobCounts {
  int64_t queued = 0, leased = 0, done = 0, failed = 0;
  int64_t total() const { return queued + leased + done + failed; }
};

class JobQueue {
 public:
  // UserError unless `db` is at the latest schema version.
  explicit JobQueue(Database& db);

  // ---- tasks ----
  // Assigns and returns the id; the record's state, progress and times are taken as given
  // (times 0 = now).
  int64_t CreateTask(const TaskRecord& task);
  std::optional<TaskRecord> FindTask(int64_t id) const;
  std::vector<TaskRecord> ListTasks(const TaskFilter& filter = {}) const;
  // Tasks per state, from one GROUP BY (no task rows are read: cheap for a metrics scrape).
  TaskCounts CountTasks() const;
  // Terminal states (done, failed, cancelled) are final: returns false, and changes nothing, when
  // the task is unknown or already terminal.
  bool SetTaskState(int64_t id, TaskState state, const std::string& error = "");
  bool SetTaskProgress(int64_t id, int64_t done, int64_t total);
  // Marks the task done with its result, and its progress complete (a task resumed after a
  // restart may find every job already answered and never report progress).
  bool FinishTask(int64_t id, const std::string& result_json);
  // Cancels a task that is not terminal and drops its queued jobs that no other live task needs.
  bool CancelTask(int64_t id);

  // ---- jobs ----
  // Enqueues what `task_id` needs, deduplicated by (job_key, target, threads), in one transaction.
  // Task id 0 links the jobs to no task (work the server does for itself).
  std::vector<EnqueueOutcome> EnqueueJobs(int64_t task_id, const std::vector<JobSpec>& jobs);
  // Atomically leases the oldest queued job for `target_fingerprint` (or for "any"), counting an
  // attempt and setting the deadline now + lease_ms.
  std::optional<JobRecord> LeaseJob(const std::string& worker_id,
                                    const std::string& target_fingerprint, int64_t lease_ms,
                                    int64_t now_ms = 0);
  // Keeps the worker's answer on the job row and marks the job done. Accepted from any worker
  // while the job is not done (a late report after a requeue still counts once).
  // `result_target` must be the job's target unless the job's is "any" (then it is recorded as
  // the job's result_target); otherwise UserError.
  ReportOutcome CompleteJob(int64_t job_id, const std::string& result_target,
                            const std::vector<uint8_t>& result);
  // The worker holding the lease could not measure (not an invalid kernel: that is a result).
  // The job is queued again, or failed when out of attempts; returns that new state. nullopt
  // when `worker_id` holds no lease on the job.
  std::optional<JobState> FailJobAttempt(int64_t job_id, const std::string& worker_id,
                                         const std::string& reason, int64_t now_ms = 0);
  // Leases past their deadline go back to the queue (or fail when out of attempts).
  RequeueStats RequeueExpiredLeases(int64_t now_ms = 0);
  // Every lease of one worker goes back to the queue (a worker that died or re-registered).
  RequeueStats ReleaseWorkerLeases(const std::string& worker_id, const std::string& reason,
                                   int64_t now_ms = 0);
  std::optional<JobRecord> FindJob(int64_t id) const;
  // Id and state of every job linked to `task_id`, by id (no payloads or results: cheap to poll).
  std::vector<JobStatus> ListJobStates(int64_t task_id) const;
  std::vector<JobRecord> ListJobs(const JobFilter& filter = {}) const;
  // Jobs per state, from one GROUP BY on an index.
  JobCounts CountJobs(std::optional<int64_t> task_id = std::nullopt,
                      const std::string& target = "") const;

  // ---- workers ----
  // Inserts or updates by id (a reconnecting worker stays one row), online, heartbeat now.
  void RegisterWorker(const WorkerRecord& worker);
  // Records a heartbeat and extends the lease of `current_job_id` only (0: the worker is idle) to
  // now + lease_ms. Other leases the worker holds are left to expire: a worker runs one job at a
  // time, so they are leases whose answer never reached it (lost when the server restarted).
  // False when the worker is unknown (it should register again).
  bool Heartbeat(const std::string& worker_id, int64_t current_job_id, int64_t lease_ms,
                 int64_t now_ms = 0);
  // Workers silent since before `cutoff_ms` are marked offline; returns how many.
  int64_t MarkWorkersOffline(int64_t cutoff_ms);
  std::optional<WorkerRecord> FindWorker(const std::string& id) const;
  std::vector<WorkerRecord> ListWorkers() const;

 private:
  Database& db_;
};

}  // namespace fusetune::db
