// `fusetune cache verify [GRAPH | --signature PREFIX] [--limit N] [--db PATH] [--json]`: re-time
// stored plans against the greedy and unfused plans of their regions under the noise rule of
// validation, and replace a plan found slower than a baseline beyond noise (server/
// plan_verification.h). The old row stays in replaced_plans (`cache show` lists it).
//
// Exit codes: 0 ok (also when plans were replaced), 2 bad input, 3 no stored plan matched.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/commands.h"
#include "client/graph_loader.h"
#include "client/local_backend.h"
#include "client/progress_bar.h"
#include "db/cache.h"
#include "db/database.h"
#include "db/default_path.h"
#include "ir/error.h"
#include "server/plan_verification.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/validation.h"

namespace fusetune::cli {
namespace {

struct VerifyFlags {
  std::string graph_path;
  std::string signature;
  std::string db_path;
  int64_t limit = 0;
  bool json = false;
  int repeat = DefaultTuneTiming().repeat;
  double min_repeat_ms = DefaultTuneTiming().min_repeat_ms;
};

std::string Us(double us) { return std::isfinite(us) ? fmt::format("{:.1f}", us) : "failed"; }

// The plans to verify: those of GRAPH's regions, or those whose signature starts with PREFIX (all
// when neither), the least certain first (the margin nearest 1, then the fewest rounds).
std::vector<db::BestPlanRecord> Select(const VerifyFlags& f, db::Cache& store) {
  std::vector<db::BestPlanRecord> plans;
  if (!f.graph_path.empty()) {
    const Graph graph = LoadGraph(f.graph_path);
    std::set<std::string> seen;
    for (const TuneRegion& r : FormRegions(RequestPolicy(graph, {}))) {
      if (!seen.insert(r.signature).second) continue;
      db::BestPlanFilter filter;
      filter.region_signature_prefix = r.signature;
      for (db::BestPlanRecord& p : store.ListBestPlans(filter))
        if (p.key.region_signature == r.signature) plans.push_back(std::move(p));
    }
  } else {
    db::BestPlanFilter filter;
    filter.region_signature_prefix = f.signature;
    plans = store.ListBestPlans(filter);
  }
  auto certainty = [](const db::BestPlanRecord& p) {
    return std::pair(p.margin ? std::abs(1 - *p.margin) : 0.0, p.rounds.value_or(0));
  };
  std::stable_sort(plans.begin(), plans.end(),
                   [&](const auto& a, const auto& b) { return certainty(a) < certainty(b); });
  if (f.limit > 0 && static_cast<int64_t>(plans.size()) > f.limit) plans.resize(f.limit);
  return plans;
}

void RunVerify(const VerifyFlags& f) {
  if (!f.graph_path.empty() && !f.signature.empty())
    throw UserError("cache verify takes a GRAPH or --signature, not both");
  const std::string path = f.db_path.empty() ? db::DefaultDbPath() : f.db_path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UserError(fmt::format("no cache at {}", path));
  db::Database database(path);
  db::Cache store(database);
  const std::vector<db::BestPlanRecord> plans = Select(f, store);
  if (plans.empty()) {
    if (!f.json) std::cerr << "no stored plan matches\n";
    if (f.json) std::cout << "[]\n";
    SetExitCode(3);
    return;
  }
  TuneOptions options;
  options.timing.repeat = f.repeat;
  options.timing.min_repeat_ms = f.min_repeat_ms;
  LocalBackend backend;
  ProgressBar bar(!f.json && StderrIsTerminal());
  auto progress = [&](const TuneProgress& p) { bar.Update(p.phase, p.done, p.total); };
  const std::vector<VerifiedPlan> results =
      VerifyStoredPlans(plans, store, backend, options, progress);
  bar.Finish();
  if (f.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const VerifiedPlan& v : results) {
      nlohmann::ordered_json j = {{"signature", v.stored.key.region_signature},
                                  {"threads", v.stored.key.threads},
                                  {"stored_chosen", v.stored.chosen}};
      if (!v.skipped.empty()) {
        j["skipped"] = v.skipped;
      } else {
        auto num = [](double x) {
          return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json();
        };
        j["stored_us"] = num(v.stored_us);
        j["greedy_us"] = num(v.greedy_us);
        j["unfused_us"] = num(v.unfused_us);
        j["kept"] = v.kept;
        j["replaced"] = v.replaced;
        j["decision"] = v.decision;
        j["margin"] = v.margin ? nlohmann::ordered_json(*v.margin) : nlohmann::ordered_json();
        j["rounds"] = v.rounds;
      }
      out.push_back(std::move(j));
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  int replaced = 0, skipped = 0;
  std::cout << fmt::format("{:<14} {:>3}  {:<8} {:>10} {:>10} {:>10}  {}\n", "region", "thr",
                           "stored", "stored µs", "greedy µs", "unfused µs", "result");
  for (const VerifiedPlan& v : results) {
    const std::string sig = v.stored.key.region_signature.substr(0, 12);
    if (!v.skipped.empty()) {
      ++skipped;
      std::cout << fmt::format("{:<14} {:>3}  {:<8} {:>10} {:>10} {:>10}  skipped: {}\n", sig,
                               v.stored.key.threads, v.stored.chosen, "-", "-", "-", v.skipped);
      continue;
    }
    replaced += v.replaced;
    std::cout << fmt::format("{:<14} {:>3}  {:<8} {:>9} {:>9} {:>9}  {}\n", sig,
                             v.stored.key.threads, v.stored.chosen, Us(v.stored_us),
                             Us(v.greedy_us), Us(v.unfused_us),
                             v.replaced ? "replaced by " + v.kept : "kept");
    std::cout << fmt::format("{:<14} {} ({})\n", "", v.decision, RoundsText(v.rounds));
  }
  std::cout << fmt::format(
      "\n{} verified, {} replaced, {} skipped (\"tuned\" above is the stored plan)\n",
      results.size() - skipped, replaced, skipped);
}

}  // namespace

void RegisterCacheVerifyCommand(CLI::App* cache) {
  auto f = std::make_shared<VerifyFlags>();
  CLI::App* verify = cache->add_subcommand(
      "verify",
      "Re-time stored plans against their region's greedy and unfused plans (default schedules) "
      "in paired rounds; a plan slower than a baseline beyond noise is replaced by it, the old "
      "one kept in the replaced plans (exit code 3 when nothing matches).");
  verify->add_option("GRAPH", f->graph_path, "verify the stored plans of this graph's regions")
      ->check(CLI::ExistingFile);
  verify->add_option("--signature", f->signature, "region signatures starting with this");
  verify->add_option("--limit", f->limit, "verify at most this many, the least certain first")
      ->check(CLI::PositiveNumber);
  verify->add_option("--db", f->db_path, "SQLite file of the cache (default as for ls)");
  verify->add_flag("--json", f->json, "one JSON object per plan");
  verify->add_option("--repeat", f->repeat, "timed repeats per measurement (as for tune)")
      ->check(CLI::Range(1, 1000));
  verify
      ->add_option("--min-repeat-ms", f->min_repeat_ms,
                   "calls per repeat grow until one repeat lasts this long (as for tune)")
      ->check(CLI::Range(0.0, 10000.0));
  verify->callback([f] { RunVerify(*f); });
}

}  // namespace fusetune::cli
