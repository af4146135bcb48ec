#pragma once
// The Store: fusetune's SQLite file (cache of targets, measurements and best plans; the service's
// durable task and job queue; the worker registry). Every SQL statement of fusetune lives in db/.
//
// Opening. A missing file is created (with its parent directories). A file is refused with a
// UserError, and never written to, when it is not SQLite, is corrupt, belongs to another
// application, or was written by a newer fusetune schema. Otherwise pending migrations run, each in
// its own transaction. The file runs in WAL mode with a busy timeout and foreign keys on.
//
// Threads and processes. A Store holds one connection guarded by a mutex: any number of threads
// may share one Store, and calls are serialised (each call is a few prepared statements, so the
// mutex is held for microseconds). Several processes (or several Stores) may open the same file at
// once: WAL lets readers proceed while one writer writes, and writers wait up to the busy timeout.
//
// Transactions. Every public call that writes runs in one write transaction: a call that throws
// leaves nothing of itself behind.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "db/records.h"
#include "db/store_error.h"

namespace fusetune::db {

class Connection;
class Statement;

struct StoreOptions {
  int busy_timeout_ms = 5000;
  // Stop migrating at this version (tests build older files with it); 0 = the latest.
  int schema_version = 0;
};

// ---- filters (an empty string / nullopt / 0 matches everything) ----

struct MeasurementFilter {
  std::string group_signature_prefix;
  std::string target_fingerprint;
  std::optional<int32_t> threads;
  std::optional<MeasurementStatus> status;
  int64_t limit = 0;
};

struct BestPlanFilter {
  std::string region_signature_prefix;
  std::string target_fingerprint;
  std::optional<int32_t> threads;
  std::optional<int32_t> search_version;
  std::string op;  // plans whose region holds this op
  int64_t limit = 0;
  bool newest_first = false;  // order by created_at, newest first, instead of by key
};

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

struct StoreStats {
  int schema_version = 0;
  int64_t targets = 0;
  int64_t measurements_ok = 0;
  int64_t measurements_invalid = 0;
  int64_t best_plans = 0;
  int64_t tasks = 0;
  int64_t jobs_queued = 0;
  int64_t jobs_leased = 0;
  int64_t jobs_done = 0;
  int64_t jobs_failed = 0;
  int64_t workers_online = 0;
};

// ---- results of queue operations ----

struct EnqueueOutcome {
  enum class Kind {
    kAlreadyMeasured,  // a measurement exists: nothing queued, job_id = 0
    kQueued,           // a new job
    kJoined,           // an existing job (any state but failed) now also serves this task
    kRetried,          // an existing failed job, queued again with fresh attempts for this task
  };
  Kind kind = Kind::kQueued;
  int64_t job_id = 0;
};

enum class ReportOutcome {
  kCompleted,  // the result was stored and the job is done
  kDuplicate,  // the job was already done (a late or repeated report): nothing changed
  kUnknownJob,
};

struct RequeueStats {
  int64_t requeued = 0;
  int64_t failed = 0;  // out of attempts
};

struct TaskCounts {
  int64_t queued = 0, running = 0, done = 0, failed = 0, cancelled = 0;
};

struct JobCounts {
  int64_t queued = 0, leased = 0, done = 0, failed = 0;
  int64_t total() const { return queued + leased + done + failed; }
};

struct ImportStats {
  int64_t added = 0;
  int64_t replaced = 0;
  int64_t kept = 0;  // an existing record was better or equal
};

class Store {
 public:
  explicit Store(const std::string& path, StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  int schema_version() const;
  StoreStats Stats() const;
  // Stats() without the measurement counts, which scan the largest table: every count here runs
  // on an index, cheap enough for each metrics scrape and status page (measurements_* stay 0).
  StoreStats QuickStats() const;

  // ---- targets ----
  // Inserts or replaces the figures of one target (a re-measurement supersedes the old one).
  void PutTarget(const TargetRecord& target);
  std::optional<TargetRecord> FindTarget(const std::string& fingerprint) const;
  std::vector<TargetRecord> ListTargets() const;

  // ---- measurements ----
  std::optional<MeasurementRecord> FindMeasurement(const MeasurementKey& key) const;
  // Every schedule measured for one group on one target and thread count.
  std::vector<MeasurementRecord> FindMeasurementsForGroup(const std::string& group_signature,
                                                          const std::string& target_fingerprint,
                                                          int32_t threads) const;
  // Stores a measurement unless one is already there. The one exception: an invalid record is
  // replaced by an ok one. An ok record is never replaced. Returns whether `record` was written.
  bool PutMeasurement(const MeasurementRecord& record);
  // PutMeasurement for each record, in one transaction: another reader sees all of them or none
  // (a search that finds half of a job's schedules measured would queue the other half again).
  // Returns how many were written.
  int64_t PutMeasurements(const std::vector<MeasurementRecord>& records);
  std::vector<MeasurementRecord> ListMeasurements(const MeasurementFilter& filter = {}) const;
  int64_t DeleteMeasurements(const MeasurementFilter& filter);

  // ---- best plans ----
  std::optional<BestPlanRecord> FindBestPlan(const BestPlanKey& key) const;
  // Inserts or replaces: a region is re-tuned only on purpose, and the newest validation wins.
  void PutBestPlan(const BestPlanRecord& record);
  std::vector<BestPlanRecord> ListBestPlans(const BestPlanFilter& filter = {}) const;
  int64_t DeleteBestPlans(const BestPlanFilter& filter);

  // ---- export / import (JSON lines; see db/export.cc for the format) ----
  // Writes targets, measurements and best plans (a header line first). Returns the record count.
  int64_t ExportJsonLines(std::ostream& out) const;
  // Merges in one transaction; any malformed line throws UserError naming the line and nothing is
  // imported. Merge rule, per record kind:
  //   target       added when absent; an existing one is kept (it describes the same CPU)
  //   measurement  added when absent; replaces an invalid one with an ok one; otherwise kept
  //   best plan    added when absent; replaces an existing one only when its chosen time is
  //                strictly lower; an equal or slower one is kept
  ImportStats ImportJsonLines(std::istream& in);

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
  // restart may find every job already measured and never report progress).
  bool FinishTask(int64_t id, const std::string& result_json);
  // Cancels a task that is not terminal and drops its queued jobs that no other live task needs.
  bool CancelTask(int64_t id);

  // ---- jobs (the durable queue) ----
  // Enqueues what `task_id` needs, deduplicated by measurement key, in one transaction.
  std::vector<EnqueueOutcome> EnqueueJobs(int64_t task_id, const std::vector<JobSpec>& jobs);
  // Atomically leases the oldest queued job for `target_fingerprint` (or for "any"), counting an
  // attempt and setting the deadline now + lease_ms.
  std::optional<JobRecord> LeaseJob(const std::string& worker_id,
                                    const std::string& target_fingerprint, int64_t lease_ms,
                                    int64_t now_ms = 0);
  // Stores the result and completes the job, in one transaction. Accepted from any worker while
  // the job is not done (a late report after a requeue still counts once). The result's key must
  // be the job's (for an "any" job, any target fingerprint); otherwise UserError.
  ReportOutcome CompleteJob(int64_t job_id, const MeasurementRecord& result);
  // Completes a job whose answer is kept on the job row instead of as a measurement (the
  // service's jobs that time several plans at once), in one transaction. Same acceptance rules as
  // CompleteJob: from any worker while the job is not done; `result_target` must be the job's
  // target unless the job's is "any" (then it is recorded as the job's result_target).
  ReportOutcome CompleteJobWithResult(int64_t job_id, const std::string& result_target,
                                      const std::vector<uint8_t>& result);
  // The worker holding the lease could not measure (not an invalid kernel: that is a result).
  // The job is queued again, or failed when out of attempts. False when `worker_id` holds no
  // lease on the job.
  bool FailJobAttempt(int64_t job_id, const std::string& worker_id, const std::string& reason,
                      int64_t now_ms = 0);
  // Leases past their deadline go back to the queue (or fail when out of attempts).
  RequeueStats RequeueExpiredLeases(int64_t now_ms = 0);
  // Every lease of one worker goes back to the queue (a worker that died or re-registered).
  RequeueStats ReleaseWorkerLeases(const std::string& worker_id, const std::string& reason,
                                   int64_t now_ms = 0);
  std::optional<JobRecord> FindJob(int64_t id) const;
  // Id and state of every job linked to `task_id`, by id (no payloads or results: cheap to poll).
  std::vector<JobStatus> ListJobStates(int64_t task_id) const;
  std::vector<JobRecord> ListJobs(const JobFilter& filter = {}) const;
  JobCounts CountJobs(std::optional<int64_t> task_id = std::nullopt,
                      const std::string& target = "") const;

  // ---- workers ----
  // Inserts or updates by id (a reconnecting worker stays one row), online, heartbeat now.
  void RegisterWorker(const WorkerRecord& worker);
  // Records a heartbeat and extends the worker's leases to now + lease_ms. False when the worker
  // is unknown (it should register again).
  bool Heartbeat(const std::string& worker_id, int64_t lease_ms, int64_t now_ms = 0);
  // Records a heartbeat and extends the lease of `current_job_id` only (0: the worker is idle).
  // Other leases the worker holds are left to expire: a worker runs one job at a time, so they
  // are leases whose answer never reached it (lost when the server restarted). False when the
  // worker is unknown.
  bool HeartbeatRunning(const std::string& worker_id, int64_t current_job_id, int64_t lease_ms,
                        int64_t now_ms = 0);
  // Workers silent since before `cutoff_ms` are marked offline; returns how many.
  int64_t MarkWorkersOffline(int64_t cutoff_ms);
  std::optional<WorkerRecord> FindWorker(const std::string& id) const;
  std::vector<WorkerRecord> ListWorkers() const;

 private:
  void RequireVersion(int version, const char* what) const;
  StoreStats CountStats(bool measurements) const;
  bool PutMeasurementLocked(const MeasurementRecord& record, bool* replaced);
  bool MergeBestPlanLocked(const BestPlanRecord& record, bool* replaced);
  bool MergeTargetLocked(const TargetRecord& record);
  RequeueStats RequeueWhere(const char* where_sql,
                            const std::function<void(Statement&)>& bind_where,
                            const std::string& reason, int64_t now_ms);

  std::string path_;
  int schema_version_ = 0;
  mutable std::mutex mutex_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace fusetune::db
