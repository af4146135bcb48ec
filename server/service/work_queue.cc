#include "server/service/work_queue.h"

namespace fusetune::service {

std::vector<db::EnqueueOutcome> WorkQueue::Enqueue(int64_t task_id,
                                                   const std::vector<db::JobSpec>& jobs) {
  std::vector<db::EnqueueOutcome> outcomes = queue_.EnqueueJobs(task_id, jobs);
  board_.NotifyWork();
  return outcomes;
}

std::optional<db::JobRecord> WorkQueue::Lease(const std::string& worker_id,
                                              const std::string& target, int64_t lease_ms) {
  return queue_.LeaseJob(worker_id, target, lease_ms);
}

db::ReportOutcome WorkQueue::Complete(int64_t job_id, const std::string& result_target,
                                      const std::vector<uint8_t>& result) {
  db::ReportOutcome outcome = queue_.CompleteJob(job_id, result_target, result);
  if (outcome == db::ReportOutcome::kCompleted) board_.JobsFinished({job_id});
  return outcome;
}

std::optional<db::JobState> WorkQueue::FailAttempt(int64_t job_id, const std::string& worker_id,
                                                   const std::string& reason) {
  std::optional<db::JobState> state = queue_.FailJobAttempt(job_id, worker_id, reason);
  if (state == db::JobState::kFailed) {
    board_.JobsFinished({job_id});
  } else if (state) {
    board_.NotifyWork();
  }
  return state;
}

void WorkQueue::Announce(const db::RequeueStats& stats) {
  if (stats.requeued > 0) board_.NotifyWork();
  // Which jobs failed is not known here; the tasks waiting for them find out by polling.
  if (stats.failed > 0) board_.RequestPoll();
}

db::RequeueStats WorkQueue::RequeueExpiredLeases() {
  db::RequeueStats stats = queue_.RequeueExpiredLeases();
  Announce(stats);
  return stats;
}

db::RequeueStats WorkQueue::RegisterWorker(const db::WorkerRecord& worker) {
  queue_.RegisterWorker(worker);
  db::RequeueStats released = queue_.ReleaseWorkerLeases(worker.id, "the worker registered again");
  Announce(released);
  board_.NotifyWork();  // a task waiting for a worker of this target may start
  return released;
}

bool WorkQueue::CancelTask(int64_t task_id) { return queue_.CancelTask(task_id); }

}  // namespace fusetune::service
