// The cache: targets, measurements and best plans.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/cache_queries.h"
#include "db/sqlite.h"
#include "db/store.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

int64_t OrNow(int64_t t) { return t != 0 ? t : NowMs(); }

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
    "AND (?2 = '' OR target_fingerprint = ?2) AND (?3 IS NULL OR threads = ?3) "
    "AND (?4 IS NULL OR status = ?4)";

void BindMeasurementFilter(Statement& st, const MeasurementFilter& f) {
  st.Bind(1, f.group_signature_prefix).Bind(2, f.target_fingerprint).Bind(3, f.threads);
  if (f.status) {
    st.Bind(4, MeasurementStatusName(*f.status));
  } else {
    st.BindNull(4);
  }
}

// ---- best plans ----

constexpr const char* kBestPlanColumns =
    "region_signature, target_fingerprint, threads, search_version, plan_json, tuned_us, "
    "greedy_us, unfused_us, chosen, region_text, ops_json, created_at";

std::vector<std::string> OpsFromJson(const std::string& text) {
  std::vector<std::string> ops;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_array()) return ops;
  for (const auto& op : doc) {
    if (op.is_string()) ops.push_back(op.get<std::string>());
  }
  return ops;
}

BestPlanRecord ReadBestPlan(const Statement& st) {
  BestPlanRecord b;
  b.key.region_signature = st.Text(0);
  b.key.target_fingerprint = st.Text(1);
  b.key.threads = static_cast<int32_t>(st.Int(2));
  b.key.search_version = static_cast<int32_t>(st.Int(3));
  b.groups = GroupsFromJson(st.Text(4));
  b.tuned_us = st.Double(5);
  b.greedy_us = st.Double(6);
  b.unfused_us = st.Double(7);
  b.chosen = st.Text(8);
  b.region_text = st.Text(9);
  b.ops = OpsFromJson(st.Text(10));
  b.created_at = st.Int(11);
  return b;
}

void BindBestPlan(Statement& st, const BestPlanRecord& b) {
  st.BindAll(b.key.region_signature, b.key.target_fingerprint, b.key.threads, b.key.search_version,
             GroupsToJson(b.groups), b.tuned_us, b.greedy_us, b.unfused_us, b.chosen, b.region_text,
             nlohmann::json(b.ops).dump(), OrNow(b.created_at));
}

constexpr const char* kBestPlanWhere =
    "(?1 = '' OR substr(region_signature, 1, length(?1)) = ?1) "
    "AND (?2 = '' OR target_fingerprint = ?2) AND (?3 IS NULL OR threads = ?3) "
    "AND (?4 IS NULL OR search_version = ?4) "
    "AND (?5 = '' OR EXISTS (SELECT 1 FROM json_each(ops_json) WHERE value = ?5))";

void BindBestPlanFilter(Statement& st, const BestPlanFilter& f) {
  st.Bind(1, f.region_signature_prefix)
      .Bind(2, f.target_fingerprint)
      .Bind(3, f.threads)
      .Bind(4, f.search_version)
      .Bind(5, f.op);
}

std::string LimitClause(int64_t limit) {
  return limit > 0 ? fmt::format(" LIMIT {}", limit) : std::string();
}

}  // namespace

// ---- targets ----

void Store::PutTarget(const TargetRecord& target) {
  std::lock_guard lock(mutex_);
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(fmt::format(
      "INSERT OR REPLACE INTO targets ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", kTargetColumns));
  BindTarget(st, target);
  st.Run();
  tx.Commit();
}

bool Store::MergeTargetLocked(const TargetRecord& target) {
  Statement st = conn_->Prepare(
      fmt::format("INSERT INTO targets ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                  kTargetColumns));
  BindTarget(st, target);
  st.Run();
  return conn_->Changes() > 0;
}

std::optional<TargetRecord> Store::FindTarget(const std::string& fingerprint) const {
  std::lock_guard lock(mutex_);
  Statement st =
      conn_->Prepare(fmt::format("SELECT {} FROM targets WHERE fingerprint = ?", kTargetColumns));
  st.Bind(1, fingerprint);
  if (!st.Step()) return std::nullopt;
  return ReadTarget(st);
}

std::vector<TargetRecord> ListTargetsIn(Connection& conn) {
  Statement st =
      conn.Prepare(fmt::format("SELECT {} FROM targets ORDER BY fingerprint", kTargetColumns));
  std::vector<TargetRecord> out;
  while (st.Step()) out.push_back(ReadTarget(st));
  return out;
}

std::vector<TargetRecord> Store::ListTargets() const {
  std::lock_guard lock(mutex_);
  return ListTargetsIn(*conn_);
}

// ---- measurements ----

std::optional<MeasurementRecord> Store::FindMeasurement(const MeasurementKey& key) const {
  std::lock_guard lock(mutex_);
  Statement st = conn_->Prepare(
      fmt::format("SELECT {} FROM measurements WHERE group_signature = ? AND schedule = ? AND "
                  "target_fingerprint = ? AND threads = ?",
                  kMeasurementColumns));
  st.BindAll(key.group_signature, key.schedule, key.target_fingerprint, key.threads);
  if (!st.Step()) return std::nullopt;
  return ReadMeasurement(st);
}

std::vector<MeasurementRecord> Store::FindMeasurementsForGroup(
    const std::string& group_signature, const std::string& target_fingerprint,
    int32_t threads) const {
  std::lock_guard lock(mutex_);
  Statement st = conn_->Prepare(fmt::format(
      "SELECT {} FROM measurements WHERE group_signature = ? AND target_fingerprint = ? AND "
      "threads = ? ORDER BY schedule",
      kMeasurementColumns));
  st.BindAll(group_signature, target_fingerprint, threads);
  std::vector<MeasurementRecord> out;
  while (st.Step()) out.push_back(ReadMeasurement(st));
  return out;
}

bool Store::PutMeasurementLocked(const MeasurementRecord& m, bool* replaced) {
  // An existing row is overwritten only when it is invalid and the new one is ok.
  Statement st = conn_->Prepare(fmt::format(
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
    Statement probe = conn_->Prepare(
        "SELECT 1 FROM measurements WHERE group_signature = ? AND schedule = ? AND "
        "target_fingerprint = ? AND threads = ?");
    probe.BindAll(m.key.group_signature, m.key.schedule, m.key.target_fingerprint, m.key.threads);
    existed = probe.Step();
  }
  st.BindAll(m.key.group_signature, m.key.schedule, m.key.target_fingerprint, m.key.threads,
             MeasurementStatusName(m.status), m.reason, m.median_us, m.min_us, m.stddev_us,
             m.number, m.repeat, m.max_abs_error, m.compile_ms, m.group_text, OrNow(m.created_at));
  st.Run();
  bool written = conn_->Changes() > 0;
  if (replaced != nullptr) *replaced = written && existed;
  return written;
}

bool Store::PutMeasurement(const MeasurementRecord& record) {
  std::lock_guard lock(mutex_);
  Transaction tx(*conn_);
  bool written = PutMeasurementLocked(record, nullptr);
  tx.Commit();
  return written;
}

int64_t Store::PutMeasurements(const std::vector<MeasurementRecord>& records) {
  std::lock_guard lock(mutex_);
  Transaction tx(*conn_);
  int64_t written = 0;
  for (const MeasurementRecord& record : records) written += PutMeasurementLocked(record, nullptr);
  tx.Commit();
  return written;
}

std::vector<MeasurementRecord> Store::ListMeasurements(const MeasurementFilter& filter) const {
  std::lock_guard lock(mutex_);
  return ListMeasurementsIn(*conn_, filter);
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

int64_t Store::DeleteMeasurements(const MeasurementFilter& filter) {
  std::lock_guard lock(mutex_);
  Transaction tx(*conn_);
  Statement st =
      conn_->Prepare(fmt::format("DELETE FROM measurements WHERE {}", kMeasurementWhere));
  BindMeasurementFilter(st, filter);
  st.Run();
  int64_t n = conn_->Changes();
  tx.Commit();
  return n;
}

// ---- best plans ----

std::optional<BestPlanRecord> Store::FindBestPlan(const BestPlanKey& key) const {
  std::lock_guard lock(mutex_);
  Statement st = conn_->Prepare(fmt::format(
      "SELECT {} FROM best_plans WHERE region_signature = ? AND target_fingerprint = ? AND "
      "threads = ? AND search_version = ?",
      kBestPlanColumns));
  st.BindAll(key.region_signature, key.target_fingerprint, key.threads, key.search_version);
  if (!st.Step()) return std::nullopt;
  return ReadBestPlan(st);
}

void Store::PutBestPlan(const BestPlanRecord& record) {
  std::lock_guard lock(mutex_);
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(fmt::format(
      "INSERT OR REPLACE INTO best_plans ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      kBestPlanColumns));
  BindBestPlan(st, record);
  st.Run();
  tx.Commit();
}

bool Store::MergeBestPlanLocked(const BestPlanRecord& record, bool* replaced) {
  std::optional<double> existing_us;
  {
    Statement probe = conn_->Prepare(
        "SELECT CASE chosen WHEN 'greedy' THEN greedy_us WHEN 'unfused' THEN unfused_us "
        "ELSE tuned_us END FROM best_plans WHERE region_signature = ? AND target_fingerprint = ? "
        "AND threads = ? AND search_version = ?");
    probe.BindAll(record.key.region_signature, record.key.target_fingerprint, record.key.threads,
                  record.key.search_version);
    if (probe.Step()) existing_us = probe.Double(0);
  }
  *replaced = false;
  if (existing_us && !(record.ChosenUs() > 0 && record.ChosenUs() < *existing_us)) return false;
  Statement st = conn_->Prepare(fmt::format(
      "INSERT OR REPLACE INTO best_plans ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      kBestPlanColumns));
  BindBestPlan(st, record);
  st.Run();
  *replaced = existing_us.has_value();
  return true;
}

std::vector<BestPlanRecord> Store::ListBestPlans(const BestPlanFilter& filter) const {
  std::lock_guard lock(mutex_);
  return ListBestPlansIn(*conn_, filter);
}

std::vector<BestPlanRecord> ListBestPlansIn(Connection& conn, const BestPlanFilter& filter) {
  Statement st = conn.Prepare(fmt::format(
      "SELECT {} FROM best_plans WHERE {} ORDER BY {}{}", kBestPlanColumns, kBestPlanWhere,
      filter.newest_first ? "created_at DESC, region_signature"
                          : "region_signature, target_fingerprint, threads, search_version",
      LimitClause(filter.limit)));
  BindBestPlanFilter(st, filter);
  std::vector<BestPlanRecord> out;
  while (st.Step()) out.push_back(ReadBestPlan(st));
  return out;
}

int64_t Store::DeleteBestPlans(const BestPlanFilter& filter) {
  std::lock_guard lock(mutex_);
  Transaction tx(*conn_);
  Statement st = conn_->Prepare(fmt::format("DELETE FROM best_plans WHERE {}", kBestPlanWhere));
  BindBestPlanFilter(st, filter);
  st.Run();
  int64_t n = conn_->Changes();
  tx.Commit();
  return n;
}

}  // namespace fusetune::db
