#pragma once
// The service's MeasurementBackend: Tune() runs unchanged, and its jobs go through the durable
// queue in the store to the worker farm.
//
// Keys. A tuner job may time several plans (the schedules of one group, a region's validation,
// the whole graph), so each job is keyed by a hash of its own JSON (without its id): (job_key,
// target, threads). Equal jobs from any task are one queue row, and the worker's answer is kept on
// that row (db::JobQueue::CompleteJob). That gives, with no code of its own:
//   - 16 clients submitting one graph at once: one row per job, measured once, every task reads
//     the same answer (EnqueueJobs deduplicates in one transaction, under the database's lock);
//   - a task resumed after a restart re-runs Tune(): measurements it wrote are found in the store,
//     and jobs finished after its last write are found done on the queue and read back.
// Tune() writes the measurements from the answers exactly as in local mode: one code path.
#include <atomic>
#include <map>
#include <stdexcept>
#include <string>

#include "db/job_queue.h"
#include "server/service/work_queue.h"
#include "server/tuner.h"

namespace fusetune::service {

// Thrown out of RunJobs, and so out of Tune(), when the task must stop waiting.
class TaskInterrupted : public std::runtime_error {
 public:
  enum class Why { kCancelled, kServerStopping };
  explicit TaskInterrupted(Why why)
      : std::runtime_error(why == Why::kCancelled ? "cancelled" : "the server is stopping"),
        why_(why) {}
  Why why() const { return why_; }

 private:
  Why why_;
};

// Values of a task's interrupt flag.
enum InterruptFlag : int { kRun = 0, kCancel = 1, kStop = 2 };

// The queue row of a job: key and payload. `repeat_tag` makes the key of one more measurement of
// work already asked for (a validation's later round of the same plans): "" for the first.
db::JobSpec QueueSpecFor(const MeasureJob& job, const std::string& target, int max_attempts,
                         const std::string& repeat_tag = "");

// Repeated work. A validation times the same plans in several rounds, and two rounds may be the
// same job (the plans' order rotates with the round number, so round 3 of three plans is round 0
// again). Each is a measurement of its own: the n-th time one backend asks for the same work its
// key is tagged "#n", so it is not answered with the first round's figures. A task asks in the
// same order every time, so a resumed task and an identical task still find the same rows.
class QueueBackend : public MeasurementBackend {
 public:
  // `interrupt` is polled while waiting (InterruptFlag values). Task id 0: jobs of no task (the
  // idle verification), found by their ids alone. A non-empty `key_salt` makes every key this
  // backend asks for its own (fresh measurements of work the queue answered before).
  QueueBackend(WorkQueue& work, int64_t task_id, std::string target, int max_attempts,
               const std::atomic<int>& interrupt, std::string key_salt = "");
  std::string TargetFingerprint() override { return target_; }
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t finished)>& on_done) override;

 private:
  WorkQueue& work_;
  int64_t task_id_;
  std::string target_;
  int max_attempts_;
  const std::atomic<int>& interrupt_;
  std::string key_salt_;
  std::map<std::string, int> asked_;  // job key -> how many times this backend asked for it
};

}  // namespace fusetune::service
