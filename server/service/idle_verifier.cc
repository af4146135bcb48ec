#include "server/service/idle_verifier.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/plan_verification.h"
#include "server/service/queue_backend.h"
#include "server/validation.h"

namespace fusetune::service {
namespace {

// How often an idle farm looks for a plan to re-check when it found none (new plans come with
// tasks, which end the idle spell anyway), and for a worker when none is online.
constexpr std::chrono::milliseconds kNothingToDoPause{10000};
constexpr std::chrono::milliseconds kNoWorkerPause{1000};
constexpr std::chrono::milliseconds kIdlePoll{200};

// The re-check's jobs, one at a time and each only while the farm is idle, through the queue.
class IdleBackend : public MeasurementBackend {
 public:
  IdleBackend(QueueBackend& queue, std::function<void()> wait_until_idle)
      : queue_(queue), wait_until_idle_(std::move(wait_until_idle)) {}
  std::string TargetFingerprint() override { return queue_.TargetFingerprint(); }
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t)>& on_done) override {
    std::vector<JobResult> out;
    out.reserve(jobs.size());
    for (const MeasureJob& job : jobs) {
      wait_until_idle_();
      out.push_back(std::move(queue_.RunJobs({job}, {}).at(0)));
      if (on_done) on_done(out.size());
    }
    return out;
  }

 private:
  QueueBackend& queue_;
  std::function<void()> wait_until_idle_;
};

}  // namespace

IdleVerifier::IdleVerifier(db::Cache& cache, WorkQueue& work, const ServiceOptions& options)
    : cache_(cache), work_(work), options_(options) {}

IdleVerifier::~IdleVerifier() { Stop(); }

void IdleVerifier::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void IdleVerifier::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  interrupt_ = kStop;
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool IdleVerifier::Sleep(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return stop_cv_.wait_for(lock, d, [&] { return stopping_; });
}

bool IdleVerifier::FarmIdle() const {
  const db::TaskCounts tasks = work_.store().CountTasks();
  return tasks.queued + tasks.running == 0;
}

void IdleVerifier::WaitUntilIdle() {
  bool announced = false;
  while (!FarmIdle()) {
    if (!announced) spdlog::info("idle verification: paused while tasks run");
    announced = true;
    if (Sleep(kIdlePoll)) throw TaskInterrupted(TaskInterrupted::Why::kServerStopping);
  }
  if (announced) spdlog::info("idle verification: resumed");
}

std::optional<db::BestPlanRecord> IdleVerifier::NextPlan(std::chrono::milliseconds* pause) {
  std::set<std::string> online;
  for (const db::WorkerRecord& w : work_.store().ListWorkers())
    if (w.state == db::WorkerState::kOnline) online.insert(w.target_fingerprint);
  *pause = online.empty() ? kNoWorkerPause : kNothingToDoPause;
  if (online.empty()) return std::nullopt;
  const int64_t now = db::NowMs();
  std::vector<db::BestPlanRecord> plans;
  for (db::BestPlanRecord& p : cache_.ListBestPlans()) {
    const Key key{p.key.region_signature, p.key.target_fingerprint, p.key.threads,
                  p.key.search_version};
    if (!online.count(p.key.target_fingerprint) || unverifiable_.count(key)) continue;
    if (p.verified_at && now - *p.verified_at < options_.verify_idle_every_ms) continue;
    plans.push_back(std::move(p));
  }
  if (plans.empty()) return std::nullopt;
  return LeastCertainFirst(std::move(plans)).front();
}

void IdleVerifier::Recheck(const db::BestPlanRecord& plan) {
  const std::string region = plan.key.region_signature.substr(0, 12);
  spdlog::info("idle verification: region {} ({} threads, stored {}, {})", region, plan.key.threads,
               plan.chosen, plan.verified_at ? "re-checked before" : "never re-checked");
  // Fresh keys: the queue answers equal work once, and this work may have been timed before.
  QueueBackend queue(work_, 0, plan.key.target_fingerprint, options_.max_attempts, interrupt_,
                     fmt::format("verify {}", db::NowMs()));
  IdleBackend backend(queue, [this] { WaitUntilIdle(); });
  const VerifiedPlan v = VerifyStoredPlans({plan}, cache_, backend, TuneOptions{})[0];
  if (!v.skipped.empty()) {
    unverifiable_.insert({plan.key.region_signature, plan.key.target_fingerprint, plan.key.threads,
                          plan.key.search_version});
    spdlog::warn("idle verification: region {} skipped: {}", region, v.skipped);
  } else if (v.replaced) {
    spdlog::info("idle verification: region {} replaced by {}: {} ({})", region, v.kept, v.decision,
                 RoundsText(v.rounds));
  } else {
    spdlog::info("idle verification: region {} kept: {} ({})", region, v.decision,
                 RoundsText(v.rounds));
  }
}

void IdleVerifier::Loop() {
  spdlog::info(
      "idle verification on: stored plans are re-checked while no task runs (each at most every "
      "{:.3g} h)",
      options_.verify_idle_every_ms / 3.6e6);
  auto idle_since = std::chrono::steady_clock::now();
  const auto quiet = std::chrono::milliseconds(options_.verify_idle_quiet_ms);
  while (!Sleep(kIdlePoll)) {
    try {
      if (!FarmIdle()) {
        idle_since = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::steady_clock::now() - idle_since < quiet) continue;
      std::chrono::milliseconds pause{};
      std::optional<db::BestPlanRecord> plan = NextPlan(&pause);
      if (!plan) {
        if (Sleep(pause)) return;
        continue;
      }
      Recheck(*plan);
    } catch (const TaskInterrupted&) {
      return;  // stopping: the plan stays as stored
    } catch (const std::exception& e) {
      spdlog::error("idle verification: {}", e.what());
      if (Sleep(kNothingToDoPause)) return;
    }
  }
}

}  // namespace fusetune::service
