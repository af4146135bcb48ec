// Export and import of the cache as JSON lines: one JSON object per line, each with a "kind".
//
//   {"kind":"header","format":"fusetune-cache","version":1,"schema":2,"exported_at":1700000000000}
//   {"kind":"target","fingerprint":"...","cpu":"...","triple":"...","features":"...","cores":2,
//    "peak_gflops":200.0,"bandwidth_gbs":90.0,"measured_at":...}
//   {"kind":"measurement","group_signature":"...","schedule":"...","target_fingerprint":"...",
//    "threads":1,"status":"ok","reason":"","median_us":..,"min_us":..,"stddev_us":..,"number":..,
//    "repeat":..,"max_abs_error":..,"compile_ms":..,"group_text":"...","created_at":...}
//   {"kind":"best_plan","region_signature":"...","target_fingerprint":"...","threads":1,
//    "search_version":1,"groups":[{"nodes":[0,1],"schedule":""}],"tuned_us":..,"greedy_us":..,
//    "unfused_us":..,"chosen":"tuned","region_text":"...","ops":["..."],"created_at":...,
//    "family_key":"...","margin":0.93,"decision":"...","rounds":7,"weights_bound":true}
//
// A best plan's family_key, margin, decision and rounds (schema v4) and weights_bound (v8) are
// written only when the plan has them (weights_bound only when true), and read when present: lines
// written before they existed import as plans without them (weights_bound false: a tune with
// bound weights searches such a region again), and a reader that predates them ignores them, so
// the format version stays 1.
//
// unfused_us is null (the JSON library's NaN and infinity) when the unfused plan was not timed
// (a warm-only tune, schema v7) or failed; a null one imports as not timed.
//
// replaced_plans is this file's history of its own decisions, not knowledge to share, and is not
// exported; an import that replaces a plan archives the old one there.
// Tasks, jobs and workers are the state of one server, not knowledge to share, and are not
// exported. The merge rule of an import is documented at Cache::ImportJsonLines.
#include <istream>
#include <limits>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/cache_queries.h"
#include "db/schema.h"
#include "db/sqlite.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

// Ordered so every line starts with its "kind" and reads in the order of the record.
using json = nlohmann::ordered_json;

constexpr int kExportFormatVersion = 1;
constexpr double kNotTimed = std::numeric_limits<double>::quiet_NaN();

json TargetToJson(const TargetRecord& t) {
  return {{"kind", "target"},
          {"fingerprint", t.fingerprint},
          {"cpu", t.cpu},
          {"triple", t.triple},
          {"features", t.features},
          {"cores", t.cores},
          {"peak_gflops", t.peak_gflops},
          {"bandwidth_gbs", t.bandwidth_gbs},
          {"measured_at", t.measured_at}};
}

json MeasurementToJson(const MeasurementRecord& m) {
  return {{"kind", "measurement"},
          {"group_signature", m.key.group_signature},
          {"schedule", m.key.schedule},
          {"target_fingerprint", m.key.target_fingerprint},
          {"threads", m.key.threads},
          {"status", MeasurementStatusName(m.status)},
          {"reason", m.reason},
          {"median_us", m.median_us},
          {"min_us", m.min_us},
          {"stddev_us", m.stddev_us},
          {"number", m.number},
          {"repeat", m.repeat},
          {"max_abs_error", m.max_abs_error},
          {"compile_ms", m.compile_ms},
          {"group_text", m.group_text},
          {"created_at", m.created_at}};
}

json BestPlanToJson(const BestPlanRecord& b) {
  json j = {{"kind", "best_plan"},
            {"region_signature", b.key.region_signature},
            {"target_fingerprint", b.key.target_fingerprint},
            {"threads", b.key.threads},
            {"search_version", b.key.search_version},
            {"groups", json::parse(GroupsToJson(b.groups))["groups"]},
            {"tuned_us", b.tuned_us},
            {"greedy_us", b.greedy_us},
            {"unfused_us", b.unfused_us},
            {"chosen", b.chosen},
            {"region_text", b.region_text},
            {"ops", b.ops},
            {"created_at", b.created_at}};
  if (!b.family_key.empty()) j["family_key"] = b.family_key;
  if (b.margin) j["margin"] = *b.margin;
  if (!b.decision.empty()) j["decision"] = b.decision;
  if (b.rounds) j["rounds"] = *b.rounds;
  if (b.weights_bound) j["weights_bound"] = true;
  return j;
}

// Field readers that name the line and the field on a type mismatch.
class LineReader {
 public:
  LineReader(const json& doc, int64_t line) : doc_(doc), line_(line) {}

  std::string Str(const char* field, bool required = true) const {
    const json* v = Find(field, required);
    if (v == nullptr) return {};
    if (!v->is_string()) Fail(field, "a string");
    return v->get<std::string>();
  }
  int64_t Int(const char* field, bool required = true) const {
    const json* v = Find(field, required);
    if (v == nullptr) return 0;
    if (!v->is_number_integer()) Fail(field, "an integer");
    return v->get<int64_t>();
  }
  double Num(const char* field, bool required = true) const {
    const json* v = Find(field, required);
    if (v == nullptr) return 0;
    if (!v->is_number()) Fail(field, "a number");
    return v->get<double>();
  }
  bool Bool(const char* field) const {
    const json* v = Find(field, false);
    if (v == nullptr) return false;
    if (!v->is_boolean()) Fail(field, "true or false");
    return v->get<bool>();
  }
  const json& Array(const char* field) const {
    const json* v = Find(field, true);
    if (!v->is_array()) Fail(field, "an array");
    return *v;
  }
  bool Has(const char* field) const { return Find(field, false) != nullptr; }
  [[noreturn]] void Error(const std::string& what) const {
    throw UserError(fmt::format("line {}: {}", line_, what));
  }

 private:
  const json* Find(const char* field, bool required) const {
    auto it = doc_.find(field);
    if (it == doc_.end() || it->is_null()) {
      if (required)
        Error(fmt::format("the {} record lacks \"{}\"", doc_.value("kind", "?"), field));
      return nullptr;
    }
    return &*it;
  }
  [[noreturn]] void Fail(const char* field, const char* want) const {
    Error(fmt::format("\"{}\" must be {}", field, want));
  }
  const json& doc_;
  int64_t line_;
};

TargetRecord TargetFromJson(const LineReader& r) {
  TargetRecord t;
  t.fingerprint = r.Str("fingerprint");
  t.cpu = r.Str("cpu", false);
  t.triple = r.Str("triple", false);
  t.features = r.Str("features", false);
  t.cores = static_cast<int32_t>(r.Int("cores", false));
  t.peak_gflops = r.Num("peak_gflops");
  t.bandwidth_gbs = r.Num("bandwidth_gbs");
  t.measured_at = r.Int("measured_at", false);
  return t;
}

MeasurementRecord MeasurementFromJson(const LineReader& r) {
  MeasurementRecord m;
  m.key.group_signature = r.Str("group_signature");
  m.key.schedule = r.Str("schedule");
  m.key.target_fingerprint = r.Str("target_fingerprint");
  m.key.threads = static_cast<int32_t>(r.Int("threads"));
  std::string status = r.Str("status");
  if (status == "ok") {
    m.status = MeasurementStatus::kOk;
  } else if (status == "invalid") {
    m.status = MeasurementStatus::kInvalid;
  } else {
    r.Error(fmt::format("\"status\" must be \"ok\" or \"invalid\", not \"{}\"", status));
  }
  m.reason = r.Str("reason", false);
  m.median_us = r.Num("median_us");
  m.min_us = r.Num("min_us", false);
  m.stddev_us = r.Num("stddev_us", false);
  m.number = r.Int("number", false);
  m.repeat = static_cast<int32_t>(r.Int("repeat", false));
  m.max_abs_error = r.Num("max_abs_error", false);
  m.compile_ms = r.Num("compile_ms", false);
  m.group_text = r.Str("group_text", false);
  m.created_at = r.Int("created_at", false);
  return m;
}

BestPlanRecord BestPlanFromJson(const LineReader& r) {
  BestPlanRecord b;
  b.key.region_signature = r.Str("region_signature");
  b.key.target_fingerprint = r.Str("target_fingerprint");
  b.key.threads = static_cast<int32_t>(r.Int("threads"));
  b.key.search_version = static_cast<int32_t>(r.Int("search_version"));
  try {
    b.groups = GroupsFromJson(json{{"groups", r.Array("groups")}}.dump());
  } catch (const UserError& e) {
    r.Error(e.what());
  }
  b.tuned_us = r.Num("tuned_us");
  b.greedy_us = r.Num("greedy_us");
  b.unfused_us = r.Has("unfused_us") ? r.Num("unfused_us") : kNotTimed;
  b.chosen = r.Str("chosen");
  if (b.chosen != "tuned" && b.chosen != "greedy" && b.chosen != "unfused") {
    r.Error(fmt::format("\"chosen\" must be tuned, greedy or unfused, not \"{}\"", b.chosen));
  }
  b.region_text = r.Str("region_text", false);
  for (const json& op : r.Array("ops")) {
    if (!op.is_string()) r.Error("\"ops\" must hold strings");
    b.ops.push_back(op.get<std::string>());
  }
  b.created_at = r.Int("created_at", false);
  b.family_key = r.Str("family_key", false);
  if (r.Has("margin")) b.margin = r.Num("margin");
  b.decision = r.Str("decision", false);
  if (r.Has("rounds")) b.rounds = static_cast<int32_t>(r.Int("rounds"));
  b.weights_bound = r.Bool("weights_bound");
  return b;
}

}  // namespace

int64_t Cache::ExportJsonLines(std::ostream& out) const {
  std::vector<TargetRecord> targets;
  std::vector<MeasurementRecord> measurements;
  std::vector<BestPlanRecord> plans;
  // One read transaction: a consistent snapshot even while another process writes.
  db_.ReadTransaction([&](Connection& conn) {
    targets = ListTargetsIn(conn);
    measurements = ListMeasurementsIn(conn, {});
    plans = ListBestPlansIn(conn, {});
  });
  out << json{{"kind", "header"},
              {"format", "fusetune-cache"},
              {"version", kExportFormatVersion},
              {"schema", db_.schema_version()},
              {"exported_at", NowMs()}}
             .dump()
      << "\n";
  for (const auto& t : targets) out << TargetToJson(t).dump() << "\n";
  for (const auto& m : measurements) out << MeasurementToJson(m).dump() << "\n";
  for (const auto& b : plans) out << BestPlanToJson(b).dump() << "\n";
  return static_cast<int64_t>(targets.size() + measurements.size() + plans.size());
}

ImportStats Cache::ImportJsonLines(std::istream& in) {
  return db_.WriteTransaction([&](Connection& conn) {
    ImportStats stats;
    std::string text;
    int64_t line = 0;
    while (std::getline(in, text)) {
      ++line;
      if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
      json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
      LineReader r(doc, line);
      if (doc.is_discarded() || !doc.is_object()) r.Error("not a JSON object");
      std::string kind = r.Str("kind");
      try {
        if (kind == "header") {
          if (doc.value("format", "") != "fusetune-cache") {
            r.Error("the header's \"format\" is not \"fusetune-cache\"");
          }
          int64_t version = r.Int("version");
          if (version > kExportFormatVersion) {
            r.Error(
                fmt::format("written in export format v{}, this binary reads up to v{}; "
                            "upgrade fusetune",
                            version, kExportFormatVersion));
          }
        } else if (kind == "target") {
          if (MergeTargetIn(conn, TargetFromJson(r))) {
            ++stats.added;
          } else {
            ++stats.kept;
          }
        } else if (kind == "measurement") {
          bool replaced = false;
          if (!PutMeasurementIn(conn, MeasurementFromJson(r), &replaced)) {
            ++stats.kept;
          } else {
            ++(replaced ? stats.replaced : stats.added);
          }
        } else if (kind == "best_plan") {
          bool replaced = false;
          if (!MergeBestPlanIn(conn, BestPlanFromJson(r), kReplacedByImport, &replaced)) {
            ++stats.kept;
          } else {
            ++(replaced ? stats.replaced : stats.added);
          }
        } else {
          r.Error(fmt::format("unknown record kind \"{}\"", kind));
        }
      } catch (const StoreError& e) {
        // A CHECK constraint: the record is well-formed JSON but not a valid record.
        r.Error(fmt::format("the {} record is not valid: {}", kind, e.what()));
      }
    }
    if (in.bad()) throw UserError("reading the import stream failed");
    return stats;
  });
}

}  // namespace fusetune::db
