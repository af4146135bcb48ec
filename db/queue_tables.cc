// The service's durable state: tasks, the measurement job queue and the worker registry.
//
// Job life cycle:
//
//   EnqueueJobs ──▶ queued ──LeaseJob──▶ leased ──CompleteJob──▶ done
//                     ▲                    │
//                     └── FailJobAttempt / RequeueExpiredLeases / ReleaseWorkerLeases
//                                          │  (attempts == max_attempts)
//                                          ▼
//                                        failed ──(a new task needs it: EnqueueJobs)──▶ queued
//
// `attempts` counts leases handed out; a lease that ends without a result puts the job back in the
// queue unless it has used all its attempts. A report is accepted while the job is not done, from
// whichever worker sends it, so a late report after a requeue counts once and the second is a
// duplicate.
#include <algorithm>

#include <fmt/format.h>

#include "db/sqlite.h"
#include "db/store.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

int64_t OrNow(int64_t t) { return t != 0 ? t : NowMs(); }

std::string LimitClause(int64_t limit) {
  return limit > 0 ? fmt::format(" LIMIT {}", limit) : std::string();
}

// ---- tasks ----

constexpr const char* kTaskColumns =
    "id, state, graph_text, options_json, target, client, progress_done, progress_total, error, "
    "result_json, created_at, updated_at";

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
  return t;
}

// ---- jobs ----

constexpr const char* kJobColumns =
    "id, group_signature, schedule, target, threads, state, attempts, max_attempts, lease_owner, "
    "lease_deadline, errors, result_target, payload, created_at, updated_at, result";

JobRecord ReadJob(const Statement& st) {
  JobRecord j;
  j.id = st.Int(0);
  j.key.group_signature = st.Text(1);
  j.key.schedule = st.Text(2);
  j.key.target_fingerprint = st.Text(3);
  j.key.threads = static_cast<int32_t>(st.Int(4));
  j.state = ParseJobState(st.Text(5)).value_or(JobState::kFailed);
  j.attempts = static_cast<int32_t>(st.Int(6));
  j.max_attempts = static_cast<int32_t>(st.Int(7));
  j.lease_owner = st.Text(8);
  j.lease_deadline = st.OptInt(9).value_or(0);
  j.errors = st.Text(10);
  j.result_target = st.Text(11);
  j.payload = st.Blob(12);
  j.created_at = st.Int(13);
  j.updated_at = st.Int(14);
  j.result = st.Blob(15);
  return j;
}

// ---- workers ----

constexpr const char* kWorkerColumns =
    "id, target_fingerprint, cores, version, state, registered_at, last_heartbeat";

WorkerRecord ReadWorker(const Statement& st) {
  WorkerRecord w;
  w.id = st.Text(0);
  w.target_fingerprint = st.Text(1);
  w.cores = static_cast<int32_t>(st.Int(2));
  w.version = st.Text(3);
  w.state = st.Text(4) == "online" ? WorkerState::kOnline : WorkerState::kOffline;
  w.registered_at = st.Int(5);
  w.last_heartbeat = st.Int(6);
  return w;
}

// A lease that ended without a result: back to the queue, or failed when out of attempts, with
// the reason appended to the job's error log.
constexpr const char* kEndLeaseSet =
    "state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END, "
    "errors = errors || CASE WHEN errors = '' THEN '' ELSE '; ' END || "
    "'attempt ' || attempts || ': ' || ?1 || ' (worker ' || lease_owner || ')', "
    "lease_owner = NULL, lease_deadline = NULL, updated_at = ?2";

}  // namespace

// ---- tasks ----

int64_t Store::CreateTask(const TaskRecord& task) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  Transaction tx(*conn_);
  int64_t now = NowMs();
  Statement st = conn_->Prepare(
      "INSERT INTO tasks (state, graph_text, options_json, target, client, progress_done, "
      "progress_total, error, result_json, created_at, updated_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.BindAll(TaskStateName(task.state), task.graph_text,
             task.options_json.empty() ? std::string("{}") : task.options_json, task.target,
             task.client, task.progress_done, task.progress_total, task.error, task.result_json,
             task.created_at ? task.created_at : now, task.updated_at ? task.updated_at : now);
  st.Run();
  int64_t id = conn_->LastInsertRowId();
  tx.Commit();
  return id;
}

std::optional<TaskRecord> Store::FindTask(int64_t id) const {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  Statement st = conn_->Prepare(fmt::format("SELECT {} FROM tasks WHERE id = ?", kTaskColumns));
  st.Bind(1, id);
  if (!st.Step()) return std::nullopt;
  return ReadTask(st);
}

std::vector<TaskRecord> Store::ListTasks(const TaskFilter& filter) const {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  // The state set is passed as a comma-separated list so the statement text stays fixed.
  std::string states;
  for (TaskState s : filter.states) {
    states += std::string(TaskStateName(s)) + ",";
  }
  Statement st = conn_->Prepare(
      fmt::format("SELECT {} FROM tasks WHERE (?1 = '' OR instr(?1, state || ',') > 0) "
                  "AND (?2 = '' OR client = ?2) ORDER BY id DESC{}",
                  kTaskColumns, LimitClause(filter.limit)));
  st.Bind(1, states).Bind(2, filter.client);
  std::vector<TaskRecord> out;
  while (st.Step()) out.push_back(ReadTask(st));
  std::reverse(out.begin(), out.end());  // oldest first
  return out;
}

TaskCounts Store::CountTasks() const {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  Statement st = conn_->Prepare("SELECT state, count(*) FROM tasks GROUP BY state");
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
}

bool Store::SetTaskState(int64_t id, TaskState state, const std::string& error) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(
      "UPDATE tasks SET state = ?1, error = ?2, updated_at = ?3 "
      "WHERE id = ?4 AND state IN ('queued', 'running')");
  st.BindAll(TaskStateName(state), error, NowMs(), id);
  st.Run();
  bool changed = conn_->Changes() > 0;
  tx.Commit();
  return changed;
}

bool Store::SetTaskProgress(int64_t id, int64_t done, int64_t total) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(
      "UPDATE tasks SET progress_done = ?1, progress_total = ?2, updated_at = ?3 WHERE id = ?4");
  st.BindAll(done, total, NowMs(), id);
  st.Run();
  bool changed = conn_->Changes() > 0;
  tx.Commit();
  return changed;
}

bool Store::FinishTask(int64_t id, const std::string& result_json) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(
      "UPDATE tasks SET state = 'done', result_json = ?1, updated_at = ?2, "
      "progress_done = progress_total "
      "WHERE id = ?3 AND state IN ('queued', 'running')");
  st.BindAll(result_json, NowMs(), id);
  st.Run();
  bool changed = conn_->Changes() > 0;
  tx.Commit();
  return changed;
}

bool Store::CancelTask(int64_t id) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "tasks");
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(
      "UPDATE tasks SET state = 'cancelled', updated_at = ?1 "
      "WHERE id = ?2 AND state IN ('queued', 'running')");
  st.BindAll(NowMs(), id);
  st.Run();
  bool changed = conn_->Changes() > 0;
  if (changed) {
    // Queued jobs no live task waits for any more leave the queue (their task_jobs rows go with
    // them by cascade). Leased ones finish: their measurement is worth keeping.
    Statement drop = conn_->Prepare(
        "DELETE FROM jobs WHERE state = 'queued' "
        "AND id IN (SELECT job_id FROM task_jobs WHERE task_id = ?1) "
        "AND NOT EXISTS (SELECT 1 FROM task_jobs tj JOIN tasks t ON t.id = tj.task_id "
        "                WHERE tj.job_id = jobs.id AND t.state IN ('queued', 'running'))");
    drop.Bind(1, id);
    drop.Run();
  }
  tx.Commit();
  return changed;
}

// ---- jobs ----

std::vector<EnqueueOutcome> Store::EnqueueJobs(int64_t task_id, const std::vector<JobSpec>& jobs) {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  Transaction tx(*conn_);
  int64_t now = NowMs();
  std::vector<EnqueueOutcome> out;
  out.reserve(jobs.size());
  for (const JobSpec& spec : jobs) {
    const MeasurementKey& k = spec.key;
    EnqueueOutcome outcome;
    {
      Statement measured = conn_->Prepare(
          "SELECT 1 FROM measurements WHERE group_signature = ? AND schedule = ? AND "
          "target_fingerprint = ? AND threads = ?");
      measured.BindAll(k.group_signature, k.schedule, k.target_fingerprint, k.threads);
      if (measured.Step()) {
        outcome.kind = EnqueueOutcome::Kind::kAlreadyMeasured;
        out.push_back(outcome);
        continue;
      }
    }
    std::optional<std::string> existing_state;
    {
      Statement find = conn_->Prepare(
          "SELECT id, state FROM jobs WHERE group_signature = ? AND schedule = ? AND target = ? "
          "AND threads = ?");
      find.BindAll(k.group_signature, k.schedule, k.target_fingerprint, k.threads);
      if (find.Step()) {
        outcome.job_id = find.Int(0);
        existing_state = find.Text(1);
      }
    }
    if (!existing_state) {
      Statement insert = conn_->Prepare(
          "INSERT INTO jobs (group_signature, schedule, target, threads, state, attempts, "
          "max_attempts, errors, payload, created_at, updated_at) "
          "VALUES (?, ?, ?, ?, 'queued', 0, ?, '', ?, ?, ?)");
      insert.BindAll(k.group_signature, k.schedule, k.target_fingerprint, k.threads,
                     spec.max_attempts);
      insert.BindBlob(6, spec.payload).Bind(7, now).Bind(8, now);
      insert.Run();
      outcome.job_id = conn_->LastInsertRowId();
      outcome.kind = EnqueueOutcome::Kind::kQueued;
    } else if (*existing_state == "failed") {
      // A new task gets a fresh set of attempts: the old failures were most likely workers that
      // died, and the measurement is still missing.
      Statement retry = conn_->Prepare(
          "UPDATE jobs SET state = 'queued', attempts = 0, max_attempts = ?1, payload = ?2, "
          "updated_at = ?3 WHERE id = ?4");
      retry.Bind(1, spec.max_attempts)
          .BindBlob(2, spec.payload)
          .Bind(3, now)
          .Bind(4, outcome.job_id);
      retry.Run();
      outcome.kind = EnqueueOutcome::Kind::kRetried;
    } else {
      outcome.kind = EnqueueOutcome::Kind::kJoined;
    }
    Statement link =
        conn_->Prepare("INSERT OR IGNORE INTO task_jobs (task_id, job_id) VALUES (?, ?)");
    link.BindAll(task_id, outcome.job_id);
    link.Run();
    out.push_back(outcome);
  }
  tx.Commit();
  return out;
}

std::optional<JobRecord> Store::LeaseJob(const std::string& worker_id,
                                         const std::string& target_fingerprint, int64_t lease_ms,
                                         int64_t now_ms) {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  if (worker_id.empty()) throw UserError("a lease needs a worker id");
  int64_t now = OrNow(now_ms);
  Transaction tx(*conn_);
  // One statement: the choice and the lease cannot be split by another writer. The oldest job is
  // the smaller of two index minimums (this target's queue and the "any" queue); `target IN (..)
  // ORDER BY id` would sort every queued row on each lease.
  Statement st = conn_->Prepare(fmt::format(
      "UPDATE jobs SET state = 'leased', lease_owner = ?1, lease_deadline = ?2, "
      "attempts = attempts + 1, updated_at = ?3 "
      "WHERE id = (SELECT min(id) FROM ("
      "  SELECT min(id) AS id FROM jobs WHERE target = ?4 AND state = 'queued' "
      "  UNION ALL SELECT min(id) FROM jobs WHERE target = 'any' AND state = 'queued')) "
      "RETURNING {}",
      kJobColumns));
  st.BindAll(worker_id, now + lease_ms, now, target_fingerprint);
  std::optional<JobRecord> job;
  if (st.Step()) job = ReadJob(st);
  st.Run();  // RETURNING: the update completes only when the statement is stepped to its end
  tx.Commit();
  return job;
}

ReportOutcome Store::CompleteJob(int64_t job_id, const MeasurementRecord& result) {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  Transaction tx(*conn_);
  std::optional<JobRecord> job;
  {
    Statement find = conn_->Prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?", kJobColumns));
    find.Bind(1, job_id);
    if (find.Step()) job = ReadJob(find);
  }
  if (!job) return ReportOutcome::kUnknownJob;
  if (job->state == JobState::kDone) return ReportOutcome::kDuplicate;
  const MeasurementKey& want = job->key;
  const MeasurementKey& got = result.key;
  bool any_target = want.target_fingerprint == "any";
  if (got.group_signature != want.group_signature || got.schedule != want.schedule ||
      got.threads != want.threads ||
      (!any_target && got.target_fingerprint != want.target_fingerprint) ||
      got.target_fingerprint.empty() || got.target_fingerprint == "any") {
    throw UserError(
        fmt::format("the result for job {} is for ({}, \"{}\", {}, {} threads), the job measures "
                    "({}, \"{}\", {}, {} threads)",
                    job_id, got.group_signature, got.schedule, got.target_fingerprint, got.threads,
                    want.group_signature, want.schedule, want.target_fingerprint, want.threads));
  }
  PutMeasurementLocked(result, nullptr);
  Statement done = conn_->Prepare(
      "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_deadline = NULL, "
      "result_target = ?1, updated_at = ?2 WHERE id = ?3");
  done.BindAll(got.target_fingerprint, NowMs(), job_id);
  done.Run();
  tx.Commit();
  return ReportOutcome::kCompleted;
}

ReportOutcome Store::CompleteJobWithResult(int64_t job_id, const std::string& result_target,
                                           const std::vector<uint8_t>& result) {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "job results");
  Transaction tx(*conn_);
  std::optional<std::string> target, state;
  {
    Statement find = conn_->Prepare("SELECT target, state FROM jobs WHERE id = ?");
    find.Bind(1, job_id);
    if (find.Step()) {
      target = find.Text(0);
      state = find.Text(1);
    }
  }
  if (!target) return ReportOutcome::kUnknownJob;
  if (*state == "done") return ReportOutcome::kDuplicate;
  if (result_target.empty() || result_target == "any" ||
      (*target != "any" && result_target != *target)) {
    throw UserError(
        fmt::format("the result for job {} was measured on target '{}', the job is "
                    "for target '{}'",
                    job_id, result_target, *target));
  }
  Statement done = conn_->Prepare(
      "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_deadline = NULL, "
      "result_target = ?1, result = ?2, updated_at = ?3 WHERE id = ?4");
  done.Bind(1, result_target).BindBlob(2, result).Bind(3, NowMs()).Bind(4, job_id);
  done.Run();
  tx.Commit();
  return ReportOutcome::kCompleted;
}

bool Store::FailJobAttempt(int64_t job_id, const std::string& worker_id, const std::string& reason,
                           int64_t now_ms) {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(fmt::format(
      "UPDATE jobs SET {} WHERE id = ?3 AND state = 'leased' AND lease_owner = ?4", kEndLeaseSet));
  st.BindAll(reason, OrNow(now_ms), job_id, worker_id);
  st.Run();
  bool changed = conn_->Changes() > 0;
  tx.Commit();
  return changed;
}

RequeueStats Store::RequeueWhere(const char* where_sql,
                                 const std::function<void(Statement&)>& bind_where,
                                 const std::string& reason, int64_t now_ms) {
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(fmt::format(
      "UPDATE jobs SET {} WHERE state = 'leased' AND {} RETURNING state", kEndLeaseSet, where_sql));
  st.Bind(1, reason).Bind(2, now_ms);
  bind_where(st);
  RequeueStats stats;
  while (st.Step()) {
    (st.Text(0) == "failed" ? stats.failed : stats.requeued) += 1;
  }
  tx.Commit();
  return stats;
}

RequeueStats Store::RequeueExpiredLeases(int64_t now_ms) {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  int64_t now = OrNow(now_ms);
  return RequeueWhere(
      "lease_deadline < ?3", [&](Statement& st) { st.Bind(3, now); }, "lease expired", now);
}

RequeueStats Store::ReleaseWorkerLeases(const std::string& worker_id, const std::string& reason,
                                        int64_t now_ms) {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  if (worker_id.empty()) return {};
  return RequeueWhere(
      "lease_owner = ?3", [&](Statement& st) { st.Bind(3, worker_id); }, reason, OrNow(now_ms));
}

std::optional<JobRecord> Store::FindJob(int64_t id) const {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  Statement st = conn_->Prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?", kJobColumns));
  st.Bind(1, id);
  if (!st.Step()) return std::nullopt;
  return ReadJob(st);
}

std::vector<JobStatus> Store::ListJobStates(int64_t task_id) const {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  Statement st = conn_->Prepare(
      "SELECT j.id, j.state FROM task_jobs tj JOIN jobs j ON j.id = tj.job_id "
      "WHERE tj.task_id = ?1 ORDER BY j.id");
  st.Bind(1, task_id);
  std::vector<JobStatus> out;
  while (st.Step())
    out.push_back({st.Int(0), ParseJobState(st.Text(1)).value_or(JobState::kFailed)});
  return out;
}

std::vector<JobRecord> Store::ListJobs(const JobFilter& filter) const {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  Statement st = conn_->Prepare(fmt::format(
      "SELECT {} FROM jobs WHERE (?1 IS NULL OR id IN (SELECT job_id FROM task_jobs WHERE "
      "task_id = ?1)) AND (?2 = '' OR target = ?2) AND (?3 IS NULL OR state = ?3) ORDER BY id{}",
      kJobColumns, LimitClause(filter.limit)));
  st.Bind(1, filter.task_id).Bind(2, filter.target);
  if (filter.state) {
    st.Bind(3, JobStateName(*filter.state));
  } else {
    st.BindNull(3);
  }
  std::vector<JobRecord> out;
  while (st.Step()) out.push_back(ReadJob(st));
  return out;
}

JobCounts Store::CountJobs(std::optional<int64_t> task_id, const std::string& target) const {
  std::lock_guard lock(mutex_);
  RequireVersion(3, "jobs");
  Statement st = conn_->Prepare(
      "SELECT state, count(*) FROM jobs WHERE (?1 IS NULL OR id IN (SELECT job_id FROM task_jobs "
      "WHERE task_id = ?1)) AND (?2 = '' OR target = ?2) GROUP BY state");
  st.Bind(1, task_id).Bind(2, target);
  JobCounts counts;
  while (st.Step()) {
    std::optional<JobState> state = ParseJobState(st.Text(0));
    int64_t n = st.Int(1);
    if (!state) continue;
    switch (*state) {
      case JobState::kQueued:
        counts.queued = n;
        break;
      case JobState::kLeased:
        counts.leased = n;
        break;
      case JobState::kDone:
        counts.done = n;
        break;
      case JobState::kFailed:
        counts.failed = n;
        break;
    }
  }
  return counts;
}

// ---- workers ----

void Store::RegisterWorker(const WorkerRecord& worker) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "workers");
  if (worker.id.empty()) throw UserError("a worker needs an id");
  Transaction tx(*conn_);
  int64_t now = NowMs();
  Statement st = conn_->Prepare(fmt::format(
      "INSERT INTO workers ({}) VALUES (?1, ?2, ?3, ?4, 'online', ?5, ?6) "
      "ON CONFLICT (id) DO UPDATE SET target_fingerprint = excluded.target_fingerprint, "
      "cores = excluded.cores, version = excluded.version, state = 'online', "
      "last_heartbeat = excluded.last_heartbeat",
      kWorkerColumns));
  st.BindAll(worker.id, worker.target_fingerprint, worker.cores, worker.version,
             worker.registered_at ? worker.registered_at : now,
             worker.last_heartbeat ? worker.last_heartbeat : now);
  st.Run();
  tx.Commit();
}

bool Store::Heartbeat(const std::string& worker_id, int64_t lease_ms, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "workers");
  int64_t now = OrNow(now_ms);
  Transaction tx(*conn_);
  Statement st =
      conn_->Prepare("UPDATE workers SET last_heartbeat = ?1, state = 'online' WHERE id = ?2");
  st.BindAll(now, worker_id);
  st.Run();
  bool known = conn_->Changes() > 0;
  if (known) {
    Statement extend = conn_->Prepare(
        "UPDATE jobs SET lease_deadline = ?1, updated_at = ?2 "
        "WHERE state = 'leased' AND lease_owner = ?3");
    extend.BindAll(now + lease_ms, now, worker_id);
    extend.Run();
  }
  tx.Commit();
  return known;
}

bool Store::HeartbeatRunning(const std::string& worker_id, int64_t current_job_id, int64_t lease_ms,
                             int64_t now_ms) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "workers");
  int64_t now = OrNow(now_ms);
  Transaction tx(*conn_);
  Statement st =
      conn_->Prepare("UPDATE workers SET last_heartbeat = ?1, state = 'online' WHERE id = ?2");
  st.BindAll(now, worker_id);
  st.Run();
  bool known = conn_->Changes() > 0;
  if (known && current_job_id > 0) {
    Statement extend = conn_->Prepare(
        "UPDATE jobs SET lease_deadline = ?1, updated_at = ?2 "
        "WHERE id = ?3 AND state = 'leased' AND lease_owner = ?4");
    extend.BindAll(now + lease_ms, now, current_job_id, worker_id);
    extend.Run();
  }
  tx.Commit();
  return known;
}

int64_t Store::MarkWorkersOffline(int64_t cutoff_ms) {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "workers");
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(
      "UPDATE workers SET state = 'offline' WHERE state = 'online' AND last_heartbeat < ?1");
  st.Bind(1, cutoff_ms);
  st.Run();
  int64_t n = conn_->Changes();
  tx.Commit();
  return n;
}

std::optional<WorkerRecord> Store::FindWorker(const std::string& id) const {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "workers");
  Statement st = conn_->Prepare(fmt::format("SELECT {} FROM workers WHERE id = ?", kWorkerColumns));
  st.Bind(1, id);
  if (!st.Step()) return std::nullopt;
  return ReadWorker(st);
}

std::vector<WorkerRecord> Store::ListWorkers() const {
  std::lock_guard lock(mutex_);
  RequireVersion(2, "workers");
  Statement st = conn_->Prepare(fmt::format("SELECT {} FROM workers ORDER BY id", kWorkerColumns));
  std::vector<WorkerRecord> out;
  while (st.Step()) out.push_back(ReadWorker(st));
  return out;
}

}  // namespace fusetune::db
