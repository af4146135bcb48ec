#include "server/service/queue_backend.h"

#include <map>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/text/signature.h"

namespace fusetune::service {
namespace {

// How often a waiting task polls the store even without a notification: the safety net for a
// state change nobody announced (another server process on the same file, for one).
constexpr std::chrono::milliseconds kPollInterval{1000};

void ThrowIfInterrupted(const std::atomic<int>& interrupt) {
  switch (interrupt.load()) {
    case kCancel:
      throw TaskInterrupted(TaskInterrupted::Why::kCancelled);
    case kStop:
      throw TaskInterrupted(TaskInterrupted::Why::kServerStopping);
    default:
      return;
  }
}

}  // namespace

db::JobSpec QueueSpecFor(const MeasureJob& job, const std::string& target, int max_attempts,
                         const std::string& repeat_tag) {
  MeasureJob anonymous = job;
  anonymous.id = 0;  // the tuner numbers jobs per call; equal work must hash equal
  std::string payload = JobToJson(anonymous);
  db::JobSpec spec;
  spec.job_key = Hash128Hex(payload);
  if (!repeat_tag.empty()) spec.job_key = Hash128Hex(spec.job_key + "#" + repeat_tag);
  spec.target = target;
  spec.threads = job.threads;
  spec.payload.assign(payload.begin(), payload.end());
  spec.max_attempts = max_attempts;
  return spec;
}

QueueBackend::QueueBackend(WorkQueue& work, int64_t task_id, std::string target, int max_attempts,
                           const std::atomic<int>& interrupt, std::string key_salt)
    : work_(work),
      task_id_(task_id),
      target_(std::move(target)),
      max_attempts_(max_attempts),
      interrupt_(interrupt),
      key_salt_(std::move(key_salt)) {}

std::vector<JobResult> QueueBackend::RunJobs(const std::vector<MeasureJob>& jobs,
                                             const std::function<void(size_t)>& on_done) {
  ThrowIfInterrupted(interrupt_);
  std::vector<db::JobSpec> specs;
  specs.reserve(jobs.size());
  for (const MeasureJob& job : jobs) {
    db::JobSpec spec = QueueSpecFor(job, target_, max_attempts_);
    const int n = asked_[spec.job_key]++;
    if (n > 0 || !key_salt_.empty())
      spec =
          QueueSpecFor(job, target_, max_attempts_,
                       key_salt_.empty() ? std::to_string(n) : fmt::format("{}/{}", key_salt_, n));
    specs.push_back(std::move(spec));
  }
  // Subscribe before enqueueing: a worker may finish a job before EnqueueJobs returns.
  JobBoard::Cursor cursor = work_.Subscribe();
  std::vector<db::EnqueueOutcome> outcomes = work_.Enqueue(task_id_, specs);

  std::vector<JobResult> results(jobs.size());
  std::map<int64_t, std::vector<size_t>> pending;  // queue id -> indices into `jobs`
  for (size_t i = 0; i < jobs.size(); ++i) pending[outcomes[i].job_id].push_back(i);
  size_t finished = 0;
  // Reads the answer of a job that has ended; false while it has not.
  auto collect = [&](int64_t job_id) {
    auto it = pending.find(job_id);
    if (it == pending.end()) return;
    std::optional<db::JobRecord> row = work_.store().FindJob(job_id);
    if (row && row->state != db::JobState::kDone && row->state != db::JobState::kFailed) return;
    for (size_t i : it->second) {
      const MeasureJob& job = jobs[i];
      JobResult& out = results[i];
      if (!row) {
        out = FailedResult(job, fmt::format("queue job {} disappeared", job_id));
      } else if (row->state == db::JobState::kFailed) {
        out = FailedResult(job, fmt::format("the farm gave up on this job after {} attempts: {}",
                                            row->attempts, row->errors));
      } else {
        try {
          out = ResultFromJson(std::string(row->result.begin(), row->result.end()));
        } catch (const UserError& e) {
          out = FailedResult(
              job, fmt::format("queue job {} has no readable result: {}", job_id, e.what()));
        }
      }
      out.id = job.id;
      if (out.target.empty()) out.target = row ? row->result_target : target_;
      ++finished;
      if (on_done) on_done(finished);
    }
    pending.erase(it);
  };
  auto poll_store = [&] {
    if (task_id_ == 0) {  // no task links its jobs: each by its id (collect skips unfinished ones)
      std::vector<int64_t> ids;
      for (const auto& [id, unused] : pending) ids.push_back(id);
      for (int64_t id : ids) collect(id);
      return;
    }
    for (const db::JobStatus& s : work_.store().ListJobStates(task_id_))
      if (s.state == db::JobState::kDone || s.state == db::JobState::kFailed) collect(s.id);
  };

  poll_store();  // jobs another task (or this task before a restart) already finished
  auto last_poll = std::chrono::steady_clock::now();
  while (!pending.empty()) {
    ThrowIfInterrupted(interrupt_);
    if (work_.stopped()) throw TaskInterrupted(TaskInterrupted::Why::kServerStopping);
    bool poll = false;
    for (int64_t id : work_.WaitFinished(cursor, std::chrono::milliseconds(200), &poll))
      collect(id);
    if (poll || std::chrono::steady_clock::now() - last_poll >= kPollInterval) {
      poll_store();
      last_poll = std::chrono::steady_clock::now();
    }
  }
  return results;
}

}  // namespace fusetune::service
