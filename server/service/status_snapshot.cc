#include "server/service/status_snapshot.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/version.h"
#include "server/service/task_manager.h"

namespace fusetune::service {
namespace {

using nlohmann::json;

TaskRow RowOf(const db::TaskRecord& t) {
  TaskRow row;
  row.id = t.id;
  row.state = t.state;
  row.phase = std::string(db::TaskStateName(t.state));
  row.client = t.client;
  try {
    TaskOptions(t, &row.graph_name);
  } catch (const std::exception&) {
    // An unreadable options row still lists the task, without its graph's name.
  }
  row.target = t.target;
  row.done = t.progress_done;
  row.total = t.progress_total;
  row.error = t.error;
  row.created_at = t.created_at;
  row.updated_at = t.updated_at;
  return row;
}

}  // namespace

StatusSnapshot TakeStatusSnapshot(const db::Cache& cache, const db::JobQueue& queue,
                                  const TaskManager* tasks, int row_limit) {
  StatusSnapshot s;
  s.version = Version();
  s.now_ms = db::NowMs();
  s.row_limit = row_limit;
  s.cache = cache.QuickStats();  // no measurement counts: they scan the largest table
  s.task_counts = queue.CountTasks();
  s.job_counts = queue.CountJobs();

  std::map<std::string, int64_t> current;
  db::JobFilter leased;
  leased.state = db::JobState::kLeased;
  for (const db::JobRecord& j : queue.ListJobs(leased)) current[j.lease_owner] = j.id;
  for (db::WorkerRecord& w : queue.ListWorkers()) {
    if (w.state == db::WorkerState::kOnline) ++s.workers_online;
    WorkerRow row{std::move(w), 0};
    if (auto it = current.find(row.worker.id); it != current.end()) row.current_job_id = it->second;
    s.workers.push_back(std::move(row));
  }
  std::sort(s.workers.begin(), s.workers.end(),
            [](const WorkerRow& a, const WorkerRow& b) { return a.worker.id < b.worker.id; });

  db::TaskFilter newest;
  newest.limit = row_limit;
  std::vector<db::TaskRecord> records = queue.ListTasks(newest);
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    TaskRow row = RowOf(*it);
    // A running task's progress lives in the task manager between (throttled) store writes.
    if (tasks != nullptr && !db::IsTerminal(it->state)) {
      if (std::optional<TaskView> view = tasks->View(it->id)) {
        row.phase = view->phase;
        row.done = view->record.progress_done;
        row.total = view->record.progress_total;
      }
    }
    s.tasks.push_back(std::move(row));
  }

  db::BestPlanFilter newest_plans;
  newest_plans.newest_first = true;
  newest_plans.limit = row_limit;
  s.plans = cache.ListBestPlans(newest_plans);
  for (db::BestPlanRecord& p : s.plans) p.region_text.clear();
  return s;
}

std::string OpsSummary(const std::vector<std::string>& ops) {
  // Runs of the same op collapse ("add ×3"); the order of first appearance is kept.
  std::vector<std::pair<std::string, int>> runs;
  for (const std::string& op : ops) {
    auto it = std::find_if(runs.begin(), runs.end(), [&](const auto& r) { return r.first == op; });
    if (it == runs.end())
      runs.emplace_back(op, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto& [op, n] : runs) {
    if (!out.empty()) out += ", ";
    out += n == 1 ? op : fmt::format("{} \u00d7{}", op, n);
  }
  return out;
}

json StatusToJson(const StatusSnapshot& s) {
  json doc;
  doc["version"] = s.version;
  doc["now_ms"] = s.now_ms;
  doc["row_limit"] = s.row_limit;
  doc["counts"] = {
      {"tasks",
       {{"queued", s.task_counts.queued},
        {"running", s.task_counts.running},
        {"done", s.task_counts.done},
        {"failed", s.task_counts.failed},
        {"cancelled", s.task_counts.cancelled}}},
      {"jobs",
       {{"queued", s.job_counts.queued},
        {"leased", s.job_counts.leased},
        {"done", s.job_counts.done},
        {"failed", s.job_counts.failed}}},
      {"workers_online", s.workers_online},
      {"best_plans", s.cache.best_plans},
  };
  doc["workers"] = json::array();
  for (const WorkerRow& r : s.workers) {
    const db::WorkerRecord& w = r.worker;
    doc["workers"].push_back({{"id", w.id},
                              {"target", w.target_fingerprint},
                              {"cores", w.cores},
                              {"version", w.version},
                              {"state", std::string(db::WorkerStateName(w.state))},
                              {"registered_at_ms", w.registered_at},
                              {"last_heartbeat_ms", w.last_heartbeat},
                              {"current_job_id", r.current_job_id}});
  }
  doc["tasks"] = json::array();
  for (const TaskRow& t : s.tasks) {
    doc["tasks"].push_back({{"id", t.id},
                            {"state", std::string(db::TaskStateName(t.state))},
                            {"phase", t.phase},
                            {"client", t.client},
                            {"graph", t.graph_name},
                            {"target", t.target},
                            {"done", t.done},
                            {"total", t.total},
                            {"error", t.error},
                            {"created_at_ms", t.created_at},
                            {"updated_at_ms", t.updated_at}});
  }
  doc["plans"] = json::array();
  for (const db::BestPlanRecord& p : s.plans) {
    json groups = json::array();
    for (const db::StoredGroup& g : p.groups) groups.push_back(g.nodes);
    doc["plans"].push_back({{"region_signature", p.key.region_signature},
                            {"target", p.key.target_fingerprint},
                            {"threads", p.key.threads},
                            {"search_version", p.key.search_version},
                            {"ops", p.ops},
                            {"groups", groups},
                            {"tuned_us", p.tuned_us},
                            {"greedy_us", p.greedy_us},
                            {"unfused_us", p.unfused_us},
                            {"chosen", p.chosen},
                            {"created_at_ms", p.created_at}});
  }
  doc["tasks_total"] = s.task_counts.queued + s.task_counts.running + s.task_counts.done +
                       s.task_counts.failed + s.task_counts.cancelled;
  doc["plans_total"] = s.cache.best_plans;
  return doc;
}

}  // namespace fusetune::service
