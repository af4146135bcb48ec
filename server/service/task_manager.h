#pragma once
// Task lifecycle. A task is a row in the store (graph, options, target, state, progress, result)
// and, while it runs, a thread that calls Tune() with a QueueBackend:
//
//   Submit ──▶ queued ──(a running slot)──▶ running ──Tune()──▶ done | failed
//                 │                            │
//                 └──────── Cancel ────────────┴──▶ cancelled (queued jobs nobody else needs
//                                                   leave the queue)
//
// Durability: every state change is written to the store first. A server that stops (or dies)
// leaves its tasks queued/running there; the next start calls ResumeUnfinished(), which runs
// Tune() again for each: measurements already stored are reused and jobs already on the queue are
// joined, so nothing finished is measured again.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "db/cache.h"
#include "db/job_queue.h"
#include "server/service/request_checks.h"
#include "server/service/service_options.h"
#include "server/service/work_queue.h"

namespace fusetune::service {

struct TaskView {
  db::TaskRecord record;
  std::string phase;     // "queued", "waiting for a worker", "measuring", ..., or the final state
  uint64_t version = 0;  // for WaitForChange
};

class TaskManager {
 public:
  // Tasks search with `cache` and queue their jobs on `work`.
  TaskManager(db::Cache& cache, WorkQueue& work, const ServiceOptions& options);
  ~TaskManager();  // Stop()
  TaskManager(const TaskManager&) = delete;
  TaskManager& operator=(const TaskManager&) = delete;

  // Starts every task the store holds queued or running.
  void ResumeUnfinished();
  // Stores the task and starts it. Throws StatusError(RESOURCE_EXHAUSTED) when `client` already
  // has the most unfinished tasks allowed.
  int64_t Submit(const Submission& submission, const std::string& client);
  // False when the task is unknown or already finished.
  bool Cancel(int64_t id);
  std::optional<TaskView> View(int64_t id) const;
  // Returns when any task changed after `version` was read, after `timeout`, or on Stop().
  void WaitForChange(uint64_t version, std::chrono::milliseconds timeout) const;
  // Interrupts every task (they stay unfinished in the store) and waits for their threads.
  void Stop();
  bool stopping() const;

 private:
  struct Live {
    std::atomic<int> interrupt{0};  // InterruptFlag
    std::string phase = "queued";
    int64_t done = 0, total = 0;
    std::chrono::steady_clock::time_point last_write{};
  };
  void Start(int64_t id);
  void Run(int64_t id, Live& live);
  void RunTune(int64_t id, Live& live);
  std::string ResolveTarget(const std::string& target, Live& live);
  void SetPhase(Live& live, const std::string& phase);
  void Progress(int64_t id, Live& live, const std::string& phase, int64_t done, int64_t total);
  void Changed();

  db::Cache& cache_;
  WorkQueue& work_;
  db::JobQueue& tasks_;  // work_.store(): the task rows
  const ServiceOptions& options_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::map<int64_t, std::shared_ptr<Live>> live_;
  uint64_t version_ = 0;
  int running_ = 0;  // tasks holding a running slot
  int threads_ = 0;  // task threads alive
  bool stopping_ = false;
  std::mutex submit_mutex_;  // the per-client count and the insert are one step
};

// Decodes a task row's options_json: the request's TuneOptions and the graph's display name.
v1::TuneOptions TaskOptions(const db::TaskRecord& task, std::string* graph_name);

}  // namespace fusetune::service
