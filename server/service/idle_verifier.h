#pragma once
// `serve --verify-idle`: while no task is queued or running, the farm's workers re-check stored
// plans, the least certain first (server/plan_verification.h: LeastCertainFirst), so a plan stored
// after a disturbed measurement does not stay wrong for ever. A plan found slower than its greedy
// or unfused baseline beyond noise is replaced by it (the old row kept in replaced_plans); a plan
// kept records when (verified_at).
//
// Users first. The re-check's jobs are ordinary queue jobs for workers of the plan's target, sent
// one at a time and only while the farm is idle: a task submitted meanwhile waits at most for the
// one re-check job a worker is running (a validation round, well under a second), and the re-check
// resumes once the farm is idle again. Its jobs belong to no task and are keyed afresh each time
// (the queue answers equal work once; a re-check must measure again).
//
// Which plans: those of a target with a worker online; never re-checked first, then those checked
// longest ago; one checked within `verify_idle_every_ms` is left alone. A plan that cannot be
// re-checked (its text does not rebuild the region) is skipped for the life of the server.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "db/cache.h"
#include "server/service/service_options.h"
#include "server/service/work_queue.h"

namespace fusetune::service {

class IdleVerifier {
 public:
  IdleVerifier(db::Cache& cache, WorkQueue& work, const ServiceOptions& options);
  ~IdleVerifier();  // Stop()
  IdleVerifier(const IdleVerifier&) = delete;
  IdleVerifier& operator=(const IdleVerifier&) = delete;

  void Start();
  // Interrupts a re-check in progress (its plan stays as stored) and joins the thread.
  void Stop();

 private:
  using Key = std::tuple<std::string, std::string, int32_t, int32_t>;
  void Loop();
  // No task queued or running.
  bool FarmIdle() const;
  // Returns once the farm is idle; throws TaskInterrupted when stopping.
  void WaitUntilIdle();
  // The plan to re-check now, if any; else how long to wait before looking again.
  std::optional<db::BestPlanRecord> NextPlan(std::chrono::milliseconds* pause);
  void Recheck(const db::BestPlanRecord& plan);
  // Waits `d` or until Stop(); true when stopping.
  bool Sleep(std::chrono::milliseconds d);

  db::Cache& cache_;
  WorkQueue& work_;
  const ServiceOptions& options_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::atomic<int> interrupt_{0};  // InterruptFlag, for the queue backend's waits
  std::set<Key> unverifiable_;
};

}  // namespace fusetune::service
