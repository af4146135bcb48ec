// The cache's targets and measurements, and its counts. Best plans are in db/plan_tables.cc.
#include <fmt/format.h>

#include "db/cache.h"
#include "db/cache_queries.h"
#include "db/sqlite.h"

namespace fusetune::db {
namespace {

// ---- targets ----

constexpr const char* kTargetColumns =
    "fingerprint, cpu, triple, features, cores, peak_gflops, bandwidth_gbs, measured_at";

TargetRecord ReadTarget(const Statement& st) {
  TargetRecord t;
  t.fingerprint = st.Text(0);
  t.cpu = st.Text(1);
  t.triple = st.Text(2);
  t.features = st.Text(3);
  t.cores = static_cast<int32_t>(st.Int(4));
  t.peak_gflops = st.Double(5);
  t.bandwidth_gbs = st.Double(6);
  t.measured_at = st.Int(7);
  return t;
}

void BindTarget(Statement& st, const TargetRecord& t) {
  st.BindAll(t.fingerprint, t.cpu, t.triple, t.features, t.cores, t.peak_gflops, t.bandwidth_gbs,
             OrNow(t.measured_at));
}

// ---- measurements ----

constexpr const char* kMeasurementColumns =
    "group_signature, schedule, target_fingerprint, threads, status, reason, median_us, min_us, "
    "stddev_us, number, repeat, max_abs_error, compile_ms, group_text, created_at";

MeasurementRecord ReadMeasurement(const Statement& st) {
  MeasurementRecord m;
  m.key.group_signature = st.Text(0);
  m.key.schedule = st.Text(1);
  m.key.target_fingerprint = st.Text(2);
  m.key.threads = static_cast<int32_t>(st.Int(3));
  m.status = st.Text(4) == "ok" ? MeasurementStatus::kOk : MeasurementStatus::kInvalid;
  m.reason = st.Text(5);
  m.median_us = st.Double(6);
  m.min_us = st.Double(7);
  m.stddev_us = st.Double(8);
  m.number = st.Int(9);
  m.repeat = static_cast<int32_t>(st.Int(10));
  m.max_abs_error = st.Double(11);
  m.compile_ms = st.Double(12);
  m.group_text = st.Text(13);
  m.created_at = st.Int(14);
  return m;
}

// The WHERE clause every measurement filter shares; parameters ?1..?4.
constexpr const char* kMeasurementWhere =
    "(?1 = '' OR substr(group_signature, 1, length(?1)) = ?1) "
    "AND " FUSETUNE_SQL_TARGET_MATCHES_P2
    " AND (?3 IS NULL OR threads = ?3) "
    "AND (?4 IS NULL OR status = ?4)";

void BindMeasurementFilter(Statement& st, const MeasurementFilter& f) {
  st.Bind(1, f.group_signature_prefix).Bind(2, f.target_fingerprint).Bind(3, f.threads);
  if (f.status) {
    st.Bind(4, MeasurementStatusName(*f.status));
  } else {
    st.BindNull(4);
  }
}

int64_t Count(Connection& conn, const char* sql) {
  Statement st = conn.Prepare(sql);
  st.Step();
  return st.Int(0);
}

}  // namespace

Cache::Cache(Database& db) : db_(db) { db_.RequireLatest("the cache"); }

CacheStats Cache::Stats() const { return CountStats(/*measurements=*/true); }

CacheStats Cache::QuickStats() const { return CountStats(/*measurements=*/false); }

CacheStats Cache::CountStats(bool measurements) const {
  return db_.ReadTransaction([&](Connection& conn) {
    CacheStats stats;
    stats.schema_version = db_.schema_version();
    stats.targets = Count(conn, "SELECT count(*) FROM targets");
    if (measurements) {
      stats.measurements_ok = Count(conn, "SELECT count(*) FROM measurements WHERE status = 'ok'");
      stats.measurements_invalid =
          Count(conn, "SELECT count(*) FROM measurements WHERE status = 'invalid'");
    }
    stats.best_plans = Count(conn, "SELECT count(*) FROM best_plans");
    stats.replaced_plans = Count(conn, "SELECT count(*) FROM replaced_plans");
    return stats;
  });
}

// ---- targets ----

void Cache::PutTarget(const TargetRecord& target) {
  db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(fmt::format(
        "INSERT OR REPLACE INTO targets ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", kTargetColumns));
    BindTarget(st, target);
    st.Run();
  });
}

bool MergeTargetIn(Connection& conn, const TargetRecord& target) {
  Statement st = conn.Prepare(
      fmt::format("INSERT INTO targets ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                  kTargetColumns));
  BindTarget(st, target);
  st.Run();
  return conn.Changes() > 0;
}

std::optional<TargetRecord> Cache::FindTarget(const std::string& fingerprint) const {
  return db_.Read([&](Connection& conn) -> std::optional<TargetRecord> {
    Statement st =
        conn.Prepare(fmt::format("SELECT {} FROM targets WHERE fingerprint = ?", kTargetColumns));
    st.Bind(1, fingerprint);
    if (!st.Step()) return std::nullopt;
    return ReadTarget(st);
  });
}

std::vector<TargetRecord> ListTargetsIn(Connection& conn) {
  Statement st =
      conn.Prepare(fmt::format("SELECT {} FROM targets ORDER BY fingerprint", kTargetColumns));
  std::vector<TargetRecord> out;
  while (st.Step()) out.push_back(ReadTarget(st));
  return out;
}

// ---- measurements ----

std::optional<MeasurementRecord> Cache::FindMeasurement(const MeasurementKey& key) const {
  return db_.Read([&](Connection& conn) -> std::optional<MeasurementRecord> {
    Statement st = conn.Prepare(
        fmt::format("SELECT {} FROM measurements WHERE group_signature = ? AND schedule = ? AND "
                    "target_fingerprint = ? AND threads = ?",
                    kMeasurementColumns));
    st.BindAll(key.group_signature, key.schedule, key.target_fingerprint, key.threads);
    if (!st.Step()) return std::nullopt;
    return ReadMeasurement(st);
  });
}

bool PutMeasurementIn(Connection& conn, const MeasurementRecord& m, bool* replaced) {
  // An existing row is overwritten only when it is invalid and the new one is ok.
  Statement st = conn.Prepare(fmt::format(
      "INSERT INTO measurements ({0}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
      "?13, ?14, ?15) "
      "ON CONFLICT (group_signature, schedule, target_fingerprint, threads) DO UPDATE SET "
      "status = excluded.status, reason = excluded.reason, median_us = excluded.median_us, "
      "min_us = excluded.min_us, stddev_us = excluded.stddev_us, number = excluded.number, "
      "repeat = excluded.repeat, max_abs_error = excluded.max_abs_error, "
      "compile_ms = excluded.compile_ms, group_text = excluded.group_text, "
      "created_at = excluded.created_at "
      "WHERE measurements.status = 'invalid' AND excluded.status = 'ok'",
      kMeasurementColumns));
  bool existed = false;
  if (replaced != nullptr) {
    Statement probe = conn.Prepare(
        "SELECT 1 FROM measurements WHERE group_signature = ? AND schedule = ? AND "
        "target_fingerprint = ? AND threads = ?");
    probe.BindAll(m.key.group_signature, m.key.schedule, m.key.target_fingerprint, m.key.threads);
    existed = probe.Step();
  }
  st.BindAll(m.key.group_signature, m.key.schedule, m.key.target_fingerprint, m.key.threads,
             MeasurementStatusName(m.status), m.reason, m.median_us, m.min_us, m.stddev_us,
             m.number, m.repeat, m.max_abs_error, m.compile_ms, m.group_text, OrNow(m.created_at));
  st.Run();
  bool written = conn.Changes() > 0;
  if (replaced != nullptr) *replaced = written && existed;
  return written;
}

int64_t Cache::PutMeasurements(const std::vector<MeasurementRecord>& records) {
  return db_.WriteTransaction([&](Connection& conn) {
    int64_t written = 0;
    for (const MeasurementRecord& record : records)
      written += PutMeasurementIn(conn, record, nullptr);
    return written;
  });
}

std::vector<MeasurementRecord> Cache::ListMeasurements(const MeasurementFilter& filter) const {
  return db_.Read([&](Connection& conn) { return ListMeasurementsIn(conn, filter); });
}

std::vector<MeasurementRecord> ListMeasurementsIn(Connection& conn,
                                                  const MeasurementFilter& filter) {
  Statement st = conn.Prepare(
      fmt::format("SELECT {} FROM measurements WHERE {} ORDER BY group_signature, schedule, "
                  "target_fingerprint, threads{}",
                  kMeasurementColumns, kMeasurementWhere, LimitClause(filter.limit)));
  BindMeasurementFilter(st, filter);
  std::vector<MeasurementRecord> out;
  while (st.Step()) out.push_back(ReadMeasurement(st));
  return out;
}

int64_t Cache::DeleteMeasurements(const MeasurementFilter& filter) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st =
        conn.Prepare(fmt::format("DELETE FROM measurements WHERE {}", kMeasurementWhere));
    BindMeasurementFilter(st, filter);
    st.Run();
    return conn.Changes();
  });
}

}  // namespace fusetune::db
