// The cache's best plans and the plans they replaced.
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/cache_queries.h"
#include "db/sqlite.h"

namespace fusetune::db {
namespace {

// ---- best plans ----

// Both tables' columns in one order: replaced_plans holds every column of best_plans.
constexpr const char* kBestPlanColumns =
    "region_signature, target_fingerprint, threads, search_version, plan_json, tuned_us, "
    "greedy_us, unfused_us, chosen, region_text, ops_json, created_at, family_key, margin, "
    "decision, rounds, verified_at, weights_bound";
constexpr const char* kBestPlanValues = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?";
// The first column after kBestPlanColumns in a SELECT.
constexpr int kAfterBestPlanColumns = 18;
constexpr const char* kBestPlanKeyWhere =
    "region_signature = ?1 AND target_fingerprint = ?2 AND threads = ?3 AND search_version = ?4";

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
  b.unfused_us = st.IsNull(7) ? std::numeric_limits<double>::quiet_NaN() : st.Double(7);
  b.chosen = st.Text(8);
  b.region_text = st.Text(9);
  b.ops = OpsFromJson(st.Text(10));
  b.created_at = st.Int(11);
  b.family_key = st.Text(12);
  if (!st.IsNull(13)) b.margin = st.Double(13);
  b.decision = st.Text(14);  // NULL reads as ""
  if (std::optional<int64_t> rounds = st.OptInt(15)) b.rounds = static_cast<int32_t>(*rounds);
  b.verified_at = st.OptInt(16);
  b.weights_bound = st.Int(17) != 0;
  return b;
}

void BindBestPlan(Statement& st, const BestPlanRecord& b) {
  st.BindAll(b.key.region_signature, b.key.target_fingerprint, b.key.threads, b.key.search_version,
             GroupsToJson(b.groups), b.tuned_us, b.greedy_us, b.unfused_us, b.chosen, b.region_text,
             nlohmann::json(b.ops).dump(), OrNow(b.created_at), b.family_key, b.margin,
             b.decision.empty() ? std::nullopt : std::optional<std::string>(b.decision), b.rounds,
             b.verified_at, static_cast<int64_t>(b.weights_bound));
}

constexpr const char* kBestPlanWhere =
    "(?1 = '' OR substr(region_signature, 1, length(?1)) = ?1) "
    "AND " FUSETUNE_SQL_TARGET_MATCHES_P2
    " AND (?3 IS NULL OR threads = ?3) "
    "AND (?4 IS NULL OR search_version = ?4) "
    "AND (?5 = '' OR EXISTS (SELECT 1 FROM json_each(ops_json) WHERE value = ?5))";

void BindBestPlanFilter(Statement& st, const BestPlanFilter& f) {
  st.Bind(1, f.region_signature_prefix)
      .Bind(2, f.target_fingerprint)
      .Bind(3, f.threads)
      .Bind(4, f.search_version)
      .Bind(5, f.op);
}

void BindKey(Statement& st, const BestPlanKey& key) {
  st.BindAll(key.region_signature, key.target_fingerprint, key.threads, key.search_version);
}

// Copies the plan stored under `key`, if any, into replaced_plans; true when there was one.
bool ArchiveIn(Connection& conn, const BestPlanKey& key, const std::string& reason) {
  Statement st = conn.Prepare(fmt::format(
      "INSERT INTO replaced_plans ({0}, replaced_at, reason) SELECT {0}, ?5, ?6 FROM best_plans "
      "WHERE {1}",
      kBestPlanColumns, kBestPlanKeyWhere));
  BindKey(st, key);
  st.Bind(5, NowMs()).Bind(6, reason);
  st.Run();
  return conn.Changes() > 0;
}

void InsertOrReplaceIn(Connection& conn, const BestPlanRecord& record) {
  Statement st = conn.Prepare(fmt::format("INSERT OR REPLACE INTO best_plans ({}) VALUES ({})",
                                          kBestPlanColumns, kBestPlanValues));
  BindBestPlan(st, record);
  st.Run();
}

constexpr const char* kReplacedWhere =
    "(?1 = '' OR substr(region_signature, 1, length(?1)) = ?1) "
    "AND " FUSETUNE_SQL_TARGET_MATCHES_P2
    " AND (?3 IS NULL OR threads = ?3) "
    "AND (?4 IS NULL OR search_version = ?4)";

}  // namespace

std::optional<BestPlanRecord> Cache::FindBestPlan(const BestPlanKey& key) const {
  return db_.Read([&](Connection& conn) -> std::optional<BestPlanRecord> {
    Statement st = conn.Prepare(
        fmt::format("SELECT {} FROM best_plans WHERE {}", kBestPlanColumns, kBestPlanKeyWhere));
    BindKey(st, key);
    if (!st.Step()) return std::nullopt;
    return ReadBestPlan(st);
  });
}

std::vector<BestPlanRecord> Cache::FindBestPlansByFamily(const std::string& family_key,
                                                         const std::string& target_fingerprint,
                                                         int32_t threads,
                                                         int32_t search_version) const {
  if (family_key.empty()) return {};
  return db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare(fmt::format(
        "SELECT {} FROM best_plans WHERE family_key = ?1 AND target_fingerprint = ?2 AND "
        "threads = ?3 AND search_version = ?4 ORDER BY region_signature",
        kBestPlanColumns));
    st.BindAll(family_key, target_fingerprint, threads, search_version);
    std::vector<BestPlanRecord> out;
    while (st.Step()) out.push_back(ReadBestPlan(st));
    return out;
  });
}

void Cache::PutBestPlan(const BestPlanRecord& record, const std::string& replace_reason) {
  db_.WriteTransaction([&](Connection& conn) {
    ArchiveIn(conn, record.key, replace_reason);
    InsertOrReplaceIn(conn, record);
  });
}

bool Cache::MarkBestPlanVerified(const BestPlanKey& key, int64_t when_ms) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(
        fmt::format("UPDATE best_plans SET verified_at = ?5 WHERE {}", kBestPlanKeyWhere));
    BindKey(st, key);
    st.Bind(5, OrNow(when_ms));
    st.Run();
    return conn.Changes() > 0;
  });
}

bool MergeBestPlanIn(Connection& conn, const BestPlanRecord& record, const std::string& reason,
                     bool* replaced) {
  std::optional<double> existing_us;
  {
    Statement probe = conn.Prepare(fmt::format(
        "SELECT CASE chosen WHEN 'greedy' THEN greedy_us WHEN 'unfused' THEN unfused_us "
        "ELSE tuned_us END FROM best_plans WHERE {}",
        kBestPlanKeyWhere));
    BindKey(probe, record.key);
    if (probe.Step()) existing_us = probe.Double(0);
  }
  *replaced = false;
  if (existing_us && !(record.ChosenUs() > 0 && record.ChosenUs() < *existing_us)) return false;
  if (existing_us) ArchiveIn(conn, record.key, reason);
  InsertOrReplaceIn(conn, record);
  *replaced = existing_us.has_value();
  return true;
}

std::vector<BestPlanRecord> Cache::ListBestPlans(const BestPlanFilter& filter) const {
  return db_.Read([&](Connection& conn) { return ListBestPlansIn(conn, filter); });
}

std::vector<std::string> Cache::BestPlanTargets() const {
  return db_.Read([&](Connection& conn) {
    Statement st = conn.Prepare("SELECT DISTINCT target_fingerprint FROM best_plans ORDER BY 1");
    std::vector<std::string> out;
    while (st.Step()) out.push_back(st.Text(0));
    return out;
  });
}

std::vector<BestPlanRecord> ListBestPlansIn(Connection& conn, const BestPlanFilter& filter) {
  // Newest first walks best_plans_by_created backwards and stops at the limit.
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

int64_t Cache::DeleteBestPlans(const BestPlanFilter& filter) {
  return db_.WriteTransaction([&](Connection& conn) {
    Statement st = conn.Prepare(fmt::format("DELETE FROM best_plans WHERE {}", kBestPlanWhere));
    BindBestPlanFilter(st, filter);
    st.Run();
    return conn.Changes();
  });
}

std::vector<ReplacedPlanRecord> Cache::ListReplacedPlans(const ReplacedPlanFilter& filter) const {
  return db_.Read([&](Connection& conn) {
    Statement st =
        conn.Prepare(fmt::format("SELECT {}, replaced_at, reason FROM replaced_plans WHERE {} "
                                 "ORDER BY replaced_at DESC, id DESC{}",
                                 kBestPlanColumns, kReplacedWhere, LimitClause(filter.limit)));
    st.Bind(1, filter.region_signature_prefix)
        .Bind(2, filter.target_fingerprint)
        .Bind(3, filter.threads)
        .Bind(4, filter.search_version);
    std::vector<ReplacedPlanRecord> out;
    while (st.Step()) {
      ReplacedPlanRecord r;
      r.plan = ReadBestPlan(st);
      r.replaced_at = st.Int(kAfterBestPlanColumns);
      r.reason = st.Text(kAfterBestPlanColumns + 1);
      out.push_back(std::move(r));
    }
    return out;
  });
}

}  // namespace fusetune::db
