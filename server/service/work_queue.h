#pragma once
// The farm's job queue as the service sees it: every job transition (queue, lease, complete, fail,
// requeue, release, cancel) is made here, together with the wake-up of whoever waits for it, so
// no caller can change a job and forget to tell the waiting workers or tasks.
//
//   tasks (QueueBackend)   ── Enqueue ───────────▶ workers' long polls (WaitForWork)
//   workers (WorkerHub)    ── Complete ──────────▶ tasks waiting for those jobs (WaitFinished)
//                          ── FailAttempt ───────▶ workers (requeued) or tasks (failed for good)
//                          ── RegisterWorker ────▶ workers (released leases), tasks waiting for
//                                                  a worker of a target
//   lease reaper (Server)  ── RequeueExpired ────▶ workers (requeued) and tasks (failed: poll)
//
// The store (db::JobQueue) stays the truth; the in-memory JobBoard only says when to look again.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/job_queue.h"
#include "server/service/job_board.h"

namespace fusetune::service {

class WorkQueue {
 public:
  explicit WorkQueue(db::JobQueue& queue) : queue_(queue) {}
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Tasks, workers and reads of jobs. A job's transitions go through the methods below.
  db::JobQueue& store() { return queue_; }
  const db::JobQueue& store() const { return queue_; }

  // ---- transitions, each with its wake-up ----
  // Queues what a task needs and wakes the workers.
  std::vector<db::EnqueueOutcome> Enqueue(int64_t task_id, const std::vector<db::JobSpec>& jobs);
  // Leases the oldest job for `target` (none waits on a lease being taken).
  std::optional<db::JobRecord> Lease(const std::string& worker_id, const std::string& target,
                                     int64_t lease_ms);
  // Stores a worker's answer and wakes the tasks waiting for the job.
  db::ReportOutcome Complete(int64_t job_id, const std::string& result_target,
                             const std::vector<uint8_t>& result);
  // A worker could not run the job: it goes back to the queue (workers are woken) or, out of
  // attempts, fails (its tasks are woken). nullopt when the worker held no lease on it.
  std::optional<db::JobState> FailAttempt(int64_t job_id, const std::string& worker_id,
                                          const std::string& reason);
  // Expired leases back to the queue; those out of attempts fail and every task polls.
  db::RequeueStats RequeueExpiredLeases();
  // Registers (or re-registers) a worker. A worker that registers again lost whatever it was
  // running (it restarted, or the server forgot it): its leases go back to the queue now rather
  // than at their deadline. Wakes the workers, and the tasks waiting for a worker of a target.
  db::RequeueStats RegisterWorker(const db::WorkerRecord& worker);
  // Cancels a task and drops the queued jobs no other live task needs. Wakes nobody: a dropped
  // job is one no task waits for, and no worker waits for fewer jobs.
  bool CancelTask(int64_t task_id);

  // ---- waiting ----
  uint64_t WorkVersion() const { return board_.WorkVersion(); }
  // Until the work version moves past `seen`, `deadline` passes or Stop(); true when work may be
  // there.
  bool WaitForWork(uint64_t seen, std::chrono::steady_clock::time_point deadline) {
    return board_.WaitForWork(seen, deadline);
  }
  JobBoard::Cursor Subscribe() const { return board_.Subscribe(); }
  // Finished job ids after `cursor` (see JobBoard::WaitFinished).
  std::vector<int64_t> WaitFinished(JobBoard::Cursor& cursor, std::chrono::milliseconds timeout,
                                    bool* poll) {
    return board_.WaitFinished(cursor, timeout, poll);
  }
  // Wakes every waiter for good (server shutdown).
  void Stop() { board_.Stop(); }
  bool stopped() const { return board_.stopped(); }

 private:
  void Announce(const db::RequeueStats& stats);

  db::JobQueue& queue_;
  JobBoard board_;
};

}  // namespace fusetune::service
