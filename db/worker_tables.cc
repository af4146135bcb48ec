// The worker registry: who measures for which target, and who is still alive.
#include <fmt/format.h>

#include "db/job_queue.h"
#include "db/sqlite.h"
#include "db/table_util.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

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

}  // namespace

void JobQueue::RegisterWorker(const WorkerRecord& worker) {
  if (worker.id.empty()) throw UserError("a worker needs an id");
  db_.WriteTransaction([&](Connection& conn) {
    int64_t now = NowMs();
    Statement st = conn.Prepare(fmt::format(
        "INSERT INTO workers ({}) VALUES (?1, ?2, ?3, ?4, 'online', ?5, ?6) "
        "ON CONFLICT (id) DO UPDATE SET target_fingerprint = excluded.target_fingerprint, "
        "cores = excluded.cores, version = excluded.version, state = 'online', "
        "last_heartbeat = excluded.last_heartbeat",
        kWorkerColumns));
    st.BindAll(worker.id, worker.target_fingerprint, worker.cores, worker.version,
               worker.registered_at ? worker.registered_at : now,
               worker.last_heartbeat ? worker.last_heartbeat : now);
    st.Run();
  });
}

bool JobQueue::Heartbeat(const std::string& worker_id, int64_t current_job_id, int64_t lease_ms,
                         int64_t now_ms) {
  int64_t now = OrNow(now_ms);
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st =
        conn.Prepare("UPDATE workers SET last_heartbeat = ?1, state = 'online' WHERE id = ?2");
    st.BindAll(now, worker_id);
    st.Run();
    bool known = conn.Changes() > 0;
    if (known && current_job_id > 0) {
      Statement extend = conn.Prepare(
          "UPDATE jobs SET lease_deadline = ?1, updated_at = ?2 "
          "WHERE id = ?3 AND state = 'leased' AND lease_owner = ?4");
      extend.BindAll(now + lease_ms, now, current_job_id, worker_id);
      extend.Run();
    }
    return known;
  });
}

int64_t JobQueue::MarkWorkersOffline(int64_t cutoff_ms) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(
        "UPDATE workers SET state = 'offline' WHERE state = 'online' AND last_heartbeat < ?1");
    st.Bind(1, cutoff_ms);
    st.Run();
    return conn.Changes();
  });
}

std::optional<WorkerRecord> JobQueue::FindWorker(const std::string& id) const {
  return db_.Read([&](Connection& conn) -> std::optional<WorkerRecord> {
    Statement st = conn.Prepare(fmt::format("SELECT {} FROM workers WHERE id = ?", kWorkerColumns));
    st.Bind(1, id);
    if (!st.Step()) return std::nullopt;
    return ReadWorker(st);
  });
}

std::vector<WorkerRecord> JobQueue::ListWorkers() const {
  return db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare(fmt::format("SELECT {} FROM workers ORDER BY id", kWorkerColumns));
    std::vector<WorkerRecord> out;
    while (st.Step()) out.push_back(ReadWorker(st));
    return out;
  });
}

}  // namespace fusetune::db
