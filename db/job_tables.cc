// The job queue: enqueue (deduplicated by job key), lease, complete, fail, requeue. The life cycle
// is drawn in db/job_queue.h.
#include <fmt/format.h>

#include "db/job_queue.h"
#include "db/sqlite.h"
#include "db/table_util.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

constexpr const char* kJobColumns =
    "id, job_key, target, threads, state, attempts, max_attempts, lease_owner, lease_deadline, "
    "errors, result_target, payload, result, created_at, updated_at";

JobRecord ReadJob(const Statement& st) {
  JobRecord j;
  j.id = st.Int(0);
  j.job_key = st.Text(1);
  j.target = st.Text(2);
  j.threads = static_cast<int32_t>(st.Int(3));
  j.state = ParseJobState(st.Text(4)).value_or(JobState::kFailed);
  j.attempts = static_cast<int32_t>(st.Int(5));
  j.max_attempts = static_cast<int32_t>(st.Int(6));
  j.lease_owner = st.Text(7);
  j.lease_deadline = st.OptInt(8).value_or(0);
  j.errors = st.Text(9);
  j.result_target = st.Text(10);
  j.payload = st.Blob(11);
  j.result = st.Blob(12);
  j.created_at = st.Int(13);
  j.updated_at = st.Int(14);
  return j;
}

// A lease that ended without a result: back to the queue, or failed when out of attempts, with
// the reason appended to the job's error log.
constexpr const char* kEndLeaseSet =
    "state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END, "
    "errors = errors || CASE WHEN errors = '' THEN '' ELSE '; ' END || "
    "'attempt ' || attempts || ': ' || ?1 || ' (worker ' || lease_owner || ')', "
    "lease_owner = NULL, lease_deadline = NULL, updated_at = ?2";

// Ends the leases `where_sql` selects (its parameters start at ?3, bound by `bind_where`).
template <typename BindWhere>
RequeueStats EndLeasesIn(Connection& conn, const char* where_sql, const BindWhere& bind_where,
                         const std::string& reason, int64_t now_ms) {
  Statement st = conn.Prepare(fmt::format(
      "UPDATE jobs SET {} WHERE state = 'leased' AND {} RETURNING state", kEndLeaseSet, where_sql));
  st.Bind(1, reason).Bind(2, now_ms);
  bind_where(st);
  RequeueStats stats;
  while (st.Step()) (st.Text(0) == "failed" ? stats.failed : stats.requeued) += 1;
  return stats;
}

}  // namespace

std::vector<EnqueueOutcome> JobQueue::EnqueueJobs(int64_t task_id,
                                                  const std::vector<JobSpec>& jobs) {
  return db_.WriteTransaction([&](Connection& conn) {
    int64_t now = NowMs();
    std::vector<EnqueueOutcome> out;
    out.reserve(jobs.size());
    for (const JobSpec& spec : jobs) {
      EnqueueOutcome outcome;
      std::optional<std::string> existing_state;
      {
        Statement find = conn.Prepare(
            "SELECT id, state FROM jobs WHERE job_key = ? AND target = ? AND threads = ?");
        find.BindAll(spec.job_key, spec.target, spec.threads);
        if (find.Step()) {
          outcome.job_id = find.Int(0);
          existing_state = find.Text(1);
        }
      }
      if (!existing_state) {
        Statement insert = conn.Prepare(
            "INSERT INTO jobs (job_key, target, threads, state, attempts, max_attempts, errors, "
            "payload, created_at, updated_at) VALUES (?, ?, ?, 'queued', 0, ?, '', ?, ?, ?)");
        insert.BindAll(spec.job_key, spec.target, spec.threads, spec.max_attempts);
        insert.BindBlob(5, spec.payload).Bind(6, now).Bind(7, now);
        insert.Run();
        outcome.job_id = conn.LastInsertRowId();
        outcome.kind = EnqueueOutcome::Kind::kQueued;
      } else if (*existing_state == "failed") {
        // A new task gets a fresh set of attempts: the old failures were most likely workers
        // that died, and the answer is still missing.
        Statement retry = conn.Prepare(
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
      if (task_id > 0) {  // 0: a job of no task (the server's idle verification)
        Statement link =
            conn.Prepare("INSERT OR IGNORE INTO task_jobs (task_id, job_id) VALUES (?, ?)");
        link.BindAll(task_id, outcome.job_id);
        link.Run();
      }
      out.push_back(outcome);
    }
    return out;
  });
}

std::optional<JobRecord> JobQueue::LeaseJob(const std::string& worker_id,
                                            const std::string& target_fingerprint, int64_t lease_ms,
                                            int64_t now_ms) {
  if (worker_id.empty()) throw UserError("a lease needs a worker id");
  int64_t now = OrNow(now_ms);
  return db_.WriteTransaction([&](Connection& conn) {
    // One statement: the choice and the lease cannot be split by another writer. The oldest job
    // is the smaller of two index minimums (this target's queue and the "any" queue); `target IN
    // (..) ORDER BY id` would sort every queued row on each lease.
    Statement st = conn.Prepare(fmt::format(
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
    return job;
  });
}

ReportOutcome JobQueue::CompleteJob(int64_t job_id, const std::string& result_target,
                                    const std::vector<uint8_t>& result) {
  return db_.WriteTransaction([&](Connection& conn) {
    std::optional<std::string> target, state;
    {
      Statement find = conn.Prepare("SELECT target, state FROM jobs WHERE id = ?");
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
    Statement done = conn.Prepare(
        "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_deadline = NULL, "
        "result_target = ?1, result = ?2, updated_at = ?3 WHERE id = ?4");
    done.Bind(1, result_target).BindBlob(2, result).Bind(3, NowMs()).Bind(4, job_id);
    done.Run();
    return ReportOutcome::kCompleted;
  });
}

std::optional<JobState> JobQueue::FailJobAttempt(int64_t job_id, const std::string& worker_id,
                                                 const std::string& reason, int64_t now_ms) {
  return db_.WriteTransaction([&](Connection& conn) -> std::optional<JobState> {
    Statement st = conn.Prepare(
        fmt::format("UPDATE jobs SET {} WHERE id = ?3 AND state = 'leased' AND lease_owner = ?4 "
                    "RETURNING state",
                    kEndLeaseSet));
    st.BindAll(reason, OrNow(now_ms), job_id, worker_id);
    std::optional<JobState> state;
    if (st.Step()) state = ParseJobState(st.Text(0));
    st.Run();
    return state;
  });
}

RequeueStats JobQueue::RequeueExpiredLeases(int64_t now_ms) {
  int64_t now = OrNow(now_ms);
  return db_.WriteTransaction([&](Connection& conn) {
    return EndLeasesIn(
        conn, "lease_deadline < ?3", [&](Statement& st) { st.Bind(3, now); }, "lease expired", now);
  });
}

RequeueStats JobQueue::ReleaseWorkerLeases(const std::string& worker_id, const std::string& reason,
                                           int64_t now_ms) {
  if (worker_id.empty()) return {};
  return db_.WriteTransaction([&](Connection& conn) {
    return EndLeasesIn(
        conn, "lease_owner = ?3", [&](Statement& st) { st.Bind(3, worker_id); }, reason,
        OrNow(now_ms));
  });
}

std::optional<JobRecord> JobQueue::FindJob(int64_t id) const {
  return db_.Read([&](Connection& conn) -> std::optional<JobRecord> {
    Statement st = conn.Prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?", kJobColumns));
    st.Bind(1, id);
    if (!st.Step()) return std::nullopt;
    return ReadJob(st);
  });
}

std::vector<JobStatus> JobQueue::ListJobStates(int64_t task_id) const {
  return db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare(
        "SELECT j.id, j.state FROM task_jobs tj JOIN jobs j ON j.id = tj.job_id "
        "WHERE tj.task_id = ?1 ORDER BY j.id");
    st.Bind(1, task_id);
    std::vector<JobStatus> out;
    while (st.Step())
      out.push_back({st.Int(0), ParseJobState(st.Text(1)).value_or(JobState::kFailed)});
    return out;
  });
}

std::vector<JobRecord> JobQueue::ListJobs(const JobFilter& filter) const {
  return db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare(fmt::format(
        "SELECT {} FROM jobs WHERE (?1 IS NULL OR id IN (SELECT job_id FROM task_jobs WHERE "
        "task_id = ?1)) AND (?2 = '' OR target = ?2) AND (?3 IS NULL OR state = ?3) ORDER BY "
        "id{}",
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
  });
}

JobCounts JobQueue::CountJobs(std::optional<int64_t> task_id, const std::string& target) const {
  return db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare(
        "SELECT state, count(*) FROM jobs WHERE (?1 IS NULL OR id IN (SELECT job_id FROM "
        "task_jobs WHERE task_id = ?1)) AND (?2 = '' OR target = ?2) GROUP BY state");
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
  });
}

}  // namespace fusetune::db
