// The service's tasks: one row per tune request, with its state, progress and result.
#include <algorithm>

#include <fmt/format.h>

#include "db/job_queue.h"
#include "db/sqlite.h"
#include "db/table_util.h"

namespace fusetune::db {
namespace {

constexpr const char* kTaskColumns =
    "id, state, graph_text, options_json, target, client, progress_done, progress_total, error, "
    "result_json, created_at, updated_at, bound_params_json";

TaskRecord ReadTask(const Statement& st) {
  TaskRecord t;
  t.id = st.Int(0);
  t.state = ParseTaskState(st.Text(1)).value_or(TaskState::kFailed);
  t.graph_text = st.Text(2);
  t.options_json = st.Text(3);
  t.target = st.Text(4);
  t.client = st.Text(5);
  t.progress_done = st.Int(6);
  t.progress_total = st.Int(7);
  t.error = st.Text(8);
  t.result_json = st.Text(9);
  t.created_at = st.Int(10);
  t.updated_at = st.Int(11);
  t.bound_params_json = st.Text(12);
  return t;
}

}  // namespace

JobQueue::JobQueue(Database& db) : db_(db) { db_.RequireLatest("the job queue"); }

int64_t JobQueue::CreateTask(const TaskRecord& task) {
  return db_.WriteTransaction([&](Connection& conn) {
    int64_t now = NowMs();
    Statement st = conn.Prepare(
        "INSERT INTO tasks (state, graph_text, options_json, target, client, progress_done, "
        "progress_total, error, result_json, created_at, updated_at, bound_params_json) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st.BindAll(TaskStateName(task.state), task.graph_text,
               task.options_json.empty() ? std::string("{}") : task.options_json, task.target,
               task.client, task.progress_done, task.progress_total, task.error, task.result_json,
               task.created_at ? task.created_at : now, task.updated_at ? task.updated_at : now,
               task.bound_params_json.empty() ? std::string("[]") : task.bound_params_json);
    st.Run();
    return conn.LastInsertRowId();
  });
}

std::optional<TaskRecord> JobQueue::FindTask(int64_t id) const {
  return db_.Read([&](Connection& conn) -> std::optional<TaskRecord> {
    Statement st = conn.Prepare(fmt::format("SELECT {} FROM tasks WHERE id = ?", kTaskColumns));
    st.Bind(1, id);
    if (!st.Step()) return std::nullopt;
    return ReadTask(st);
  });
}

std::vector<TaskRecord> JobQueue::ListTasks(const TaskFilter& filter) const {
  // The state set is passed as a comma-separated list so the statement text stays fixed.
  std::string states;
  for (TaskState s : filter.states) states += std::string(TaskStateName(s)) + ",";
  std::vector<TaskRecord> out = db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare(
        fmt::format("SELECT {} FROM tasks WHERE (?1 = '' OR instr(?1, state || ',') > 0) "
                    "AND (?2 = '' OR client = ?2) ORDER BY id DESC{}",
                    kTaskColumns, LimitClause(filter.limit)));
    st.Bind(1, states).Bind(2, filter.client);
    std::vector<TaskRecord> rows;
    while (st.Step()) rows.push_back(ReadTask(st));
    return rows;
  });
  std::reverse(out.begin(), out.end());  // oldest first
  return out;
}

TaskCounts JobQueue::CountTasks() const {
  return db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare("SELECT state, count(*) FROM tasks GROUP BY state");
    TaskCounts counts;
    while (st.Step()) {
      std::optional<TaskState> state = ParseTaskState(st.Text(0));
      if (!state) continue;
      int64_t n = st.Int(1);
      switch (*state) {
        case TaskState::kQueued:
          counts.queued = n;
          break;
        case TaskState::kRunning:
          counts.running = n;
          break;
        case TaskState::kDone:
          counts.done = n;
          break;
        case TaskState::kFailed:
          counts.failed = n;
          break;
        case TaskState::kCancelled:
          counts.cancelled = n;
          break;
      }
    }
    return counts;
  });
}

bool JobQueue::SetTaskState(int64_t id, TaskState state, const std::string& error) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(
        "UPDATE tasks SET state = ?1, error = ?2, updated_at = ?3 "
        "WHERE id = ?4 AND state IN ('queued', 'running')");
    st.BindAll(TaskStateName(state), error, NowMs(), id);
    st.Run();
    return conn.Changes() > 0;
  });
}

bool JobQueue::SetTaskProgress(int64_t id, int64_t done, int64_t total) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(
        "UPDATE tasks SET progress_done = ?1, progress_total = ?2, updated_at = ?3 WHERE id = ?4");
    st.BindAll(done, total, NowMs(), id);
    st.Run();
    return conn.Changes() > 0;
  });
}

bool JobQueue::FinishTask(int64_t id, const std::string& result_json) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(
        "UPDATE tasks SET state = 'done', result_json = ?1, updated_at = ?2, "
        "progress_done = progress_total "
        "WHERE id = ?3 AND state IN ('queued', 'running')");
    st.BindAll(result_json, NowMs(), id);
    st.Run();
    return conn.Changes() > 0;
  });
}

bool JobQueue::CancelTask(int64_t id) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(
        "UPDATE tasks SET state = 'cancelled', updated_at = ?1 "
        "WHERE id = ?2 AND state IN ('queued', 'running')");
    st.BindAll(NowMs(), id);
    st.Run();
    bool changed = conn.Changes() > 0;
    if (changed) {
      // Queued jobs no live task waits for any more leave the queue (their task_jobs rows go with
      // them by cascade). Leased ones finish: their measurement is worth keeping.
      Statement drop = conn.Prepare(
          "DELETE FROM jobs WHERE state = 'queued' "
          "AND id IN (SELECT job_id FROM task_jobs WHERE task_id = ?1) "
          "AND NOT EXISTS (SELECT 1 FROM task_jobs tj JOIN tasks t ON t.id = tj.task_id "
          "                WHERE tj.job_id = jobs.id AND t.state IN ('queued', 'running'))");
      drop.Bind(1, id);
      drop.Run();
    }
    return changed;
  });
}

}  // namespace fusetune::db
