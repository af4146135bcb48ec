#pragma once
// What the status page and /api/status show, read from the store (and the task manager, for the
// live progress of running tasks) in one go: workers, the newest tasks, the newest best plans and
// the counts. No graph text, region text or token is copied in.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "db/cache.h"
#include "db/job_queue.h"
#include "db/records.h"

namespace fusetune::service {

class TaskManager;

struct WorkerRow {
  db::WorkerRecord worker;
  int64_t current_job_id = 0;  // the job it holds a lease on, 0 when idle
};

struct TaskRow {
  int64_t id = 0;
  db::TaskState state = db::TaskState::kQueued;
  std::string phase;  // "waiting for a worker", "measuring", ... or the final state
  std::string client;
  std::string graph_name;  // the name the client gave (a file name), never the graph
  std::string target;
  int64_t done = 0, total = 0;
  std::string error;
  int64_t created_at = 0, updated_at = 0;
};

struct StatusSnapshot {
  std::string version;
  int64_t now_ms = 0;
  int row_limit = 0;
  db::CacheStats cache;  // Cache::QuickStats(): measurements_* are not counted
  db::TaskCounts task_counts;
  db::JobCounts job_counts;
  int64_t workers_online = 0;
  std::vector<WorkerRow> workers;         // by id
  std::vector<TaskRow> tasks;             // newest first, at most row_limit
  std::vector<db::BestPlanRecord> plans;  // newest first, at most row_limit; region_text cleared
};

StatusSnapshot TakeStatusSnapshot(const db::Cache& cache, const db::JobQueue& queue,
                                  const TaskManager* tasks, int row_limit);

// The /api/status document (docs/observability.md shows its shape).
nlohmann::json StatusToJson(const StatusSnapshot& snapshot);

// "nn.batch_matmul, ones_like, where" or, with repeats, "add ×3, exp": an op list for a table cell.
std::string OpsSummary(const std::vector<std::string>& ops);

}  // namespace fusetune::service
