// `fusetune cache ls|show|export|import|rm [--db PATH] [--json]`: inspect and manage the local
// SQLite cache of best plans and measurements (db/cache.h).
//
//   ls       one line per stored best plan (filters: --target --op --signature --threads), then
//            the counts of measurements and targets; with --measurements one line per measurement
//            instead (--invalid: only those that failed, with why)
//   show     everything stored for the plans whose region signature starts with PREFIX: the
//            region's canonical text, its groups with schedules, the three times, how the
//            decision was made when recorded, and the plans it replaced
//   export   JSON lines to FILE or stdout (-): targets, measurements, best plans
//   import   JSON lines from FILE or stdin (-), merged by the rule of Cache::ImportJsonLines:
//            an existing record is replaced only by a better one (an ok measurement over an
//            invalid one; a plan with a strictly lower chosen time, the old one kept as replaced)
//   rm       delete the best plans matching the filters (one filter at least, or --all); with
//            --measurements also the measurements of that target / thread count
//   verify   re-time stored plans against greedy and unfused; replace one slower beyond noise
//            (client/cmd_cache_verify.cc)
//   model    the learned schedule model's rank correlation on held-out groups against the
//            roofline's (client/cmd_cache_model.cc)
//
// Exit codes: 0 ok, 2 bad input, 3 `show` found nothing.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/commands.h"
#include "client/tune_table.h"
#include "db/cache.h"
#include "db/database.h"
#include "db/default_path.h"
#include "ir/error.h"
#include "server/target_names.h"

namespace fusetune::cli {
namespace {

using json = nlohmann::ordered_json;

struct CacheFlags {
  std::string db_path;
  bool json = false;
  // Filters of ls / show / rm.
  std::string target;
  std::string op;
  std::string signature;
  int threads = 0;
  int search_version = 0;
  int64_t limit = 0;
  // export / import
  std::string file = "-";
  // ls: list measurements instead of plans (rm: delete them too)
  bool measurements = false;
  bool invalid = false;  // ls --measurements: only the invalid ones
  // rm
  bool all = false;
};

std::string DbPathOf(const CacheFlags& f) {
  return f.db_path.empty() ? db::DefaultDbPath() : f.db_path;
}

bool DbExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

db::BestPlanFilter PlanFilter(const CacheFlags& f) {
  db::BestPlanFilter filter;
  filter.region_signature_prefix = f.signature;
  filter.target_fingerprint = f.target;
  if (f.threads > 0) filter.threads = f.threads;
  if (f.search_version > 0) filter.search_version = f.search_version;
  filter.op = f.op;
  filter.limit = f.limit;
  return filter;
}

std::string FormatTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  return fmt::format("{:%Y-%m-%d %H:%M}", fmt::localtime(t));
}

// `text` cut to a table column of `width` characters, "..." marking the cut.
std::string Clipped(const std::string& text, size_t width) {
  return text.size() > width ? text.substr(0, width - 3) + "..." : text;
}

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The speedup of the stored plan over the better baseline, e.g. "1.31x"; an unfused plan not
// timed (NaN) is no baseline.
std::string Speedup(const db::BestPlanRecord& p) {
  double baseline = std::fmin(p.greedy_us, p.unfused_us);
  double chosen = p.ChosenUs();
  return chosen > 0 && baseline > 0 ? fmt::format("{:.2f}x", baseline / chosen) : "-";
}

json GroupsJson(const db::BestPlanRecord& p) {
  json groups = json::array();
  for (const db::StoredGroup& g : p.groups) {
    groups.push_back({{"positions", g.nodes}, {"schedule", g.schedule}});
  }
  return groups;
}

// The figures a validation may record beside the times; absent ones are left out.
void AddDecisionJson(json& j, const db::BestPlanRecord& p) {
  if (!p.family_key.empty()) j["family_key"] = p.family_key;
  if (p.margin) j["margin"] = *p.margin;
  if (!p.decision.empty()) j["decision"] = p.decision;
  if (p.rounds) j["rounds"] = *p.rounds;
}

json PlanJson(const db::BestPlanRecord& p, bool with_text) {
  json j = {{"signature", p.key.region_signature},
            {"target", p.key.target_fingerprint},
            {"threads", p.key.threads},
            {"search_version", p.key.search_version},
            {"ops", p.ops},
            {"chosen", p.chosen},
            {"groups", GroupsJson(p)},
            {"tuned_us", p.tuned_us},
            {"greedy_us", p.greedy_us},
            {"unfused_us", p.unfused_us},
            {"created_at", p.created_at},
            {"weights_bound", p.weights_bound}};
  AddDecisionJson(j, p);
  if (with_text) j["region_text"] = p.region_text;
  return j;
}

json ReplacedJson(const db::ReplacedPlanRecord& r) {
  const db::BestPlanRecord& p = r.plan;
  json j = {{"chosen", p.chosen},           {"groups", GroupsJson(p)},
            {"tuned_us", p.tuned_us},       {"greedy_us", p.greedy_us},
            {"unfused_us", p.unfused_us},   {"created_at", p.created_at},
            {"replaced_at", r.replaced_at}, {"reason", r.reason}};
  AddDecisionJson(j, p);
  return j;
}

json MeasurementJson(const db::MeasurementRecord& m) {
  json j = {{"group_signature", m.key.group_signature},
            {"schedule", m.key.schedule},
            {"target", m.key.target_fingerprint},
            {"threads", m.key.threads},
            {"status", db::MeasurementStatusName(m.status)}};
  if (m.status == db::MeasurementStatus::kOk) {
    j["median_us"] = m.median_us;
    j["min_us"] = m.min_us;
    j["stddev_us"] = m.stddev_us;
  } else {
    j["reason"] = m.reason;
  }
  j["created_at"] = m.created_at;
  return j;
}

db::MeasurementFilter MeasurementFilterOf(const CacheFlags& f) {
  if (!f.op.empty() || f.search_version > 0)
    throw UserError("cache ls --measurements filters by --signature, --target and --threads only");
  db::MeasurementFilter filter;
  filter.group_signature_prefix = f.signature;
  filter.target_fingerprint = f.target;
  if (f.threads > 0) filter.threads = f.threads;
  if (f.invalid) filter.status = db::MeasurementStatus::kInvalid;
  filter.limit = f.limit;
  return filter;
}

void RunLsMeasurements(const CacheFlags& f, const db::Cache& cache) {
  std::vector<db::MeasurementRecord> rows = cache.ListMeasurements(MeasurementFilterOf(f));
  if (f.json) {
    json out = {{"db", cache.path()}, {"measurements", json::array()}};
    for (const auto& m : rows) out["measurements"].push_back(MeasurementJson(m));
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{:<16} {:<24} {:<26} {:>3}  {:<7} {:>11}  {}\n", "GROUP", "SCHEDULE",
                           "TARGET", "THR", "STATUS", "MEDIAN_US", "REASON");
  for (const auto& m : rows) {
    const std::string schedule = Clipped(m.key.schedule.empty() ? "(default)" : m.key.schedule, 24);
    const std::string target = Clipped(TargetCpu(m.key.target_fingerprint), 26);
    bool ok = m.status == db::MeasurementStatus::kOk;
    std::string line =
        fmt::format("{:<16} {:<24} {:<26} {:>3}  {:<7} {:>11}", m.key.group_signature.substr(0, 16),
                    schedule, target, m.key.threads, db::MeasurementStatusName(m.status),
                    ok ? fmt::format("{:.2f}", m.median_us) : "-");
    std::cout << line << (ok ? "" : "  " + m.reason) << "\n";
  }
  std::cout << fmt::format("{} measurement{} shown ({})\n", rows.size(),
                           rows.size() == 1 ? "" : "s", cache.path());
}

void RunLs(const CacheFlags& f) {
  std::string path = DbPathOf(f);
  if (!DbExists(path)) {
    if (f.json) {
      std::cout
          << json{{"db", path}, {f.measurements ? "measurements" : "plans", json::array()}}.dump(2)
          << "\n";
    } else {
      std::cout << fmt::format("no cache at {} yet: nothing has been tuned\n", path);
    }
    return;
  }
  db::Database database(path);
  db::Cache cache(database);
  if (f.measurements) return RunLsMeasurements(f, cache);
  if (f.invalid) throw UserError("cache ls: --invalid goes with --measurements");
  std::vector<db::BestPlanRecord> plans = cache.ListBestPlans(PlanFilter(f));
  db::CacheStats stats = cache.Stats();
  if (f.json) {
    json out = {{"db", path}, {"schema", stats.schema_version}, {"plans", json::array()}};
    for (const auto& p : plans) out["plans"].push_back(PlanJson(p, false));
    out["measurements"] = {{"ok", stats.measurements_ok}, {"invalid", stats.measurements_invalid}};
    out["targets"] = stats.targets;
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{:<16} {:<26} {:>3} {:>3}  {:<7} {:>11} {:>11} {:>11} {:>7}  {}\n",
                           "SIGNATURE", "TARGET", "THR", "VER", "CHOSEN", "TUNED_US", "GREEDY_US",
                           "UNFUSED_US", "SPEEDUP", "OPS");
  for (const auto& p : plans) {
    const std::string target = Clipped(TargetCpu(p.key.target_fingerprint), 26);
    std::cout << fmt::format(
        "{:<16} {:<26} {:>3} {:>3}  {:<7} {:>11.2f} {:>11.2f} {:>11} {:>7}  {}\n",
        p.key.region_signature.substr(0, 16), target, p.key.threads, p.key.search_version, p.chosen,
        p.tuned_us, p.greedy_us, UsText(p.unfused_us, 2), Speedup(p), Join(p.ops, ","));
  }
  std::cout << fmt::format(
      "{} plan{} shown; the cache holds {} best plans, {} measurements ({} invalid), {} "
      "target{} with a calibrated roofline ({})\n",
      plans.size(), plans.size() == 1 ? "" : "s", stats.best_plans,
      stats.measurements_ok + stats.measurements_invalid, stats.measurements_invalid, stats.targets,
      stats.targets == 1 ? "" : "s", path);
}

void RunShow(const CacheFlags& f) {
  std::string path = DbPathOf(f);
  if (f.signature.empty()) throw UserError("cache show needs a region signature (or a prefix)");
  std::vector<db::BestPlanRecord> plans;
  std::vector<std::vector<db::ReplacedPlanRecord>> replaced;  // per plan, newest first
  if (DbExists(path)) {
    db::Database database(path);
    db::Cache cache(database);
    plans = cache.ListBestPlans(PlanFilter(f));
    for (const auto& p : plans) {
      db::ReplacedPlanFilter filter;
      filter.region_signature_prefix = p.key.region_signature;
      filter.target_fingerprint = p.key.target_fingerprint;
      filter.threads = p.key.threads;
      filter.search_version = p.key.search_version;
      replaced.push_back(cache.ListReplacedPlans(filter));
    }
  }
  if (f.json) {
    json out = json::array();
    for (size_t i = 0; i < plans.size(); ++i) {
      json j = PlanJson(plans[i], true);
      j["replaced"] = json::array();
      for (const auto& r : replaced[i]) j["replaced"].push_back(ReplacedJson(r));
      out.push_back(std::move(j));
    }
    std::cout << out.dump(2) << "\n";
  } else {
    for (size_t i = 0; i < plans.size(); ++i) {
      const db::BestPlanRecord& p = plans[i];
      std::cout << fmt::format("region {}\n", p.key.region_signature);
      std::cout << fmt::format("  target          {}\n", p.key.target_fingerprint);
      std::cout << fmt::format("  threads         {}\n", p.key.threads);
      std::cout << fmt::format("  search version  {}\n", p.key.search_version);
      std::cout << fmt::format("  stored          {}\n", FormatTime(p.created_at));
      std::cout << fmt::format("  ops             {}\n", Join(p.ops, ", "));
      std::cout << fmt::format("  chosen          {} ({} over the better baseline)\n", p.chosen,
                               Speedup(p));
      std::cout << fmt::format("  tuned / greedy / unfused  {:.2f} / {:.2f} / {} us\n", p.tuned_us,
                               p.greedy_us, UsText(p.unfused_us, 2));
      if (!p.decision.empty()) std::cout << fmt::format("  decision        {}\n", p.decision);
      if (p.margin || p.rounds) {
        std::cout << fmt::format("  margin          {} over {} paired rounds\n",
                                 p.margin ? fmt::format("{:.3f}", *p.margin) : "-",
                                 p.rounds ? fmt::format("{}", *p.rounds) : "-");
      }
      if (!p.family_key.empty()) std::cout << fmt::format("  family          {}\n", p.family_key);
      std::cout << fmt::format("  weights bound   {}\n",
                               p.weights_bound ? "yes: its tune offered wpack (weights packed once)"
                                               : "no: a tune with bound weights searches it again");
      std::cout << "  groups (positions in the canonical text: n0, n1, ...)\n";
      for (const db::StoredGroup& g : p.groups) {
        std::vector<std::string> names;
        for (int32_t n : g.nodes) names.push_back(fmt::format("n{}", n));
        std::cout << fmt::format("    [{}]{}\n", Join(names, ", "),
                                 g.schedule.empty() ? "" : "  " + g.schedule);
      }
      std::cout << "  canonical text\n";
      std::string text = p.region_text;
      size_t pos = 0;
      while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::cout << "    " << text.substr(pos, end - pos) << "\n";
        pos = end + 1;
      }
      if (!replaced[i].empty()) std::cout << "  replaced plans (newest first)\n";
      for (const db::ReplacedPlanRecord& r : replaced[i]) {
        std::cout << fmt::format(
            "    {}  {}: {} at {:.2f} us (tuned / greedy / unfused {:.2f} / {:.2f} / {}), "
            "stored {}\n",
            FormatTime(r.replaced_at), r.reason, r.plan.chosen, r.plan.ChosenUs(), r.plan.tuned_us,
            r.plan.greedy_us, UsText(r.plan.unfused_us, 2), FormatTime(r.plan.created_at));
      }
    }
  }
  if (plans.empty()) {
    std::cerr << fmt::format("no stored plan has a region signature starting with {} in {}\n",
                             f.signature, path);
    SetExitCode(3);
  }
}

void RunExport(const CacheFlags& f) {
  std::string path = DbPathOf(f);
  if (!DbExists(path)) throw UserError(fmt::format("no cache at {} to export", path));
  db::Database database(path);
  db::Cache store(database);
  int64_t n = 0;
  if (f.file == "-") {
    n = store.ExportJsonLines(std::cout);
    std::cout.flush();
  } else {
    // Written beside the target and renamed, so a failed export never leaves half a file.
    std::string tmp = f.file + ".partial";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw UserError(fmt::format("cannot write {}", f.file));
      n = store.ExportJsonLines(out);
      out.flush();
      if (!out) throw UserError(fmt::format("writing {} failed", f.file));
    }
    std::filesystem::rename(tmp, f.file);
  }
  std::cerr << fmt::format("exported {} records from {}\n", n, path);
}

void RunImport(const CacheFlags& f) {
  std::string path = DbPathOf(f);
  db::Database database(path);
  db::Cache store(database);
  db::ImportStats stats;
  if (f.file == "-") {
    stats = store.ImportJsonLines(std::cin);
  } else {
    std::ifstream in(f.file, std::ios::binary);
    if (!in) throw UserError(fmt::format("cannot read {}", f.file));
    try {
      stats = store.ImportJsonLines(in);
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}:{}", f.file, e.what()));  // "file:line N: ..."
    }
  }
  if (f.json) {
    std::cout
        << json{{"added", stats.added}, {"replaced", stats.replaced}, {"kept", stats.kept}}.dump()
        << "\n";
  } else {
    std::cout << fmt::format(
        "imported into {}: {} added, {} replaced by better records, {} kept (existing were "
        "better or equal)\n",
        path, stats.added, stats.replaced, stats.kept);
  }
}

void RunRm(const CacheFlags& f) {
  bool filtered = !f.target.empty() || !f.op.empty() || !f.signature.empty() || f.threads > 0 ||
                  f.search_version > 0;
  if (!filtered && !f.all) {
    throw UserError(
        "cache rm needs a filter (--signature, --target, --op, --threads, --search-version) or "
        "--all");
  }
  if (f.all && filtered) throw UserError("cache rm: --all does not go with filters");
  std::string path = DbPathOf(f);
  int64_t plans = 0, measurements = 0;
  if (DbExists(path)) {
    db::Database database(path);
    db::Cache store(database);
    db::BestPlanFilter filter = PlanFilter(f);
    filter.limit = 0;
    plans = store.DeleteBestPlans(filter);
    if (f.measurements) {
      if (!f.op.empty() || !f.signature.empty()) {
        throw UserError(
            "cache rm --measurements selects measurements by --target and --threads only");
      }
      db::MeasurementFilter mf;
      mf.target_fingerprint = f.target;
      if (f.threads > 0) mf.threads = f.threads;
      measurements = store.DeleteMeasurements(mf);
    }
  }
  if (f.json) {
    std::cout << json{{"plans", plans}, {"measurements", measurements}}.dump() << "\n";
  } else {
    std::cout << fmt::format("removed {} best plan{}", plans, plans == 1 ? "" : "s");
    if (f.measurements) std::cout << fmt::format(" and {} measurements", measurements);
    std::cout << fmt::format(" from {}\n", path);
  }
}

void AddDbFlags(CLI::App* cmd, CacheFlags& f) {
  cmd->add_option("--db", f.db_path,
                  "SQLite file of the cache (default: $FUSETUNE_DB, else "
                  "$XDG_CACHE_HOME/fusetune/fusetune.db, else ~/.cache/fusetune/fusetune.db)");
  cmd->add_flag("--json", f.json, "print JSON");
}

void AddFilterFlags(CLI::App* cmd, CacheFlags& f) {
  cmd->add_option("--target", f.target,
                  "only this target: its whole fingerprint (--json) or its CPU name (the TARGET "
                  "column)");
  cmd->add_option("--op", f.op, "only regions that hold this op, e.g. nn.softmax");
  cmd->add_option("--threads", f.threads, "only this thread count")->check(CLI::Range(1, 4096));
  cmd->add_option("--search-version", f.search_version, "only this search version")
      ->check(CLI::Range(1, 1 << 30));
}

}  // namespace

void RegisterCacheCommand(CLI::App& app) {
  auto f = std::make_shared<CacheFlags>();
  CLI::App* cache = app.add_subcommand(
      "cache", "Inspect and manage the local cache of best plans and measurements.");
  cache->require_subcommand(1);

  CLI::App* ls = cache->add_subcommand(
      "ls", "List the stored best plans (with --measurements: the measurements).");
  AddDbFlags(ls, *f);
  AddFilterFlags(ls, *f);
  ls->add_option("--signature", f->signature,
                 "only region signatures (with --measurements: group signatures) starting with "
                 "this");
  ls->add_option("--limit", f->limit, "show at most this many")->check(CLI::PositiveNumber);
  ls->add_flag("--measurements", f->measurements,
               "list measurements (group, schedule, target, threads, time or why invalid) instead "
               "of plans");
  ls->add_flag("--invalid", f->invalid,
               "with --measurements: only the candidates that failed (crash, timeout, wrong "
               "result), with the reason");
  ls->callback([f] { RunLs(*f); });

  CLI::App* show = cache->add_subcommand(
      "show",
      "Show everything stored for a region, with the plans it replaced (exit code 3 when nothing "
      "matches).");
  show->add_option("SIGNATURE", f->signature, "region signature or a prefix of it")->required();
  AddDbFlags(show, *f);
  AddFilterFlags(show, *f);
  show->callback([f] { RunShow(*f); });

  CLI::App* exp =
      cache->add_subcommand("export", "Write targets, measurements and best plans as JSON lines.");
  exp->add_option("FILE", f->file, "output file, or - for stdout (the default)");
  exp->add_option("--db", f->db_path, "SQLite file of the cache (default as for ls)");
  exp->callback([f] { RunExport(*f); });

  CLI::App* imp = cache->add_subcommand(
      "import",
      "Merge JSON lines from `cache export`: an existing record is replaced only by a better one "
      "(an ok measurement over an invalid one, a plan with a strictly lower time); a bad line "
      "imports nothing.");
  imp->add_option("FILE", f->file, "input file, or - for stdin")->required();
  AddDbFlags(imp, *f);
  imp->callback([f] { RunImport(*f); });

  CLI::App* rm = cache->add_subcommand(
      "rm", "Delete the best plans that match the filters (regions are tuned again next time).");
  AddDbFlags(rm, *f);
  AddFilterFlags(rm, *f);
  rm->add_option("--signature", f->signature, "region signatures starting with this");
  rm->add_flag("--all", f->all, "every best plan");
  rm->add_flag("--measurements", f->measurements,
               "also delete the measurements of --target / --threads (all with --all)");
  rm->callback([f] { RunRm(*f); });

  RegisterCacheVerifyCommand(cache);
  RegisterCacheModelCommand(cache);
}

}  // namespace fusetune::cli
