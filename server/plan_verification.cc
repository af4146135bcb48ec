#include "server/plan_verification.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/text/relay_parser.h"
#include "ir/text/signature.h"
#include "server/greedy_baseline.h"
#include "server/job_runner.h"
#include "server/request_policy.h"
#include "server/stored_plans.h"
#include "server/validation.h"

namespace fusetune {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The canonical text of a region (ir/text/signature.h: "in p0 TYPE", "n0 = op(p1, n2) [k=v, ...] :
// TYPE", "out n2 ...") as Relay text with the same names, so the parser rebuilds the region and
// canonicalizing it gives the text back. Throws UserError on a line of another shape.
std::string RelayFromCanonical(const std::string& text) {
  std::istringstream in(text);
  std::string line, params, body, outs;
  int n_outs = 0;
  auto prefixed = [](std::string args) {  // "p1, n2" -> "%p1, %n2"
    std::string out;
    std::istringstream parts(args);
    std::string part;
    while (std::getline(parts, part, ',')) {
      const size_t b = part.find_first_not_of(' ');
      if (b == std::string::npos) continue;
      part = part.substr(b);
      const bool name = (part[0] == 'p' || part[0] == 'n') && part.size() > 1 &&
                        std::isdigit(static_cast<unsigned char>(part[1]));
      out += (out.empty() ? "" : ", ") + (name ? "%" + part : part);
    }
    return out;
  };
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line.rfind("fusetune-canonical", 0) == 0) continue;
    if (line.rfind("in ", 0) == 0) {
      const size_t sp = line.find(' ', 3);
      params += fmt::format("{}%{}: {}", params.empty() ? "" : ", ", line.substr(3, sp - 3),
                            line.substr(sp + 1));
    } else if (line.rfind("out ", 0) == 0) {
      std::istringstream names(line.substr(4));
      std::string name;
      while (names >> name) outs += fmt::format("{}%{}", n_outs++ ? ", " : "", name);
    } else {
      const size_t eq = line.find(" = "), open = line.find('('), close = line.rfind(") [");
      const size_t attrs_end = line.rfind("] : ");
      if (eq == std::string::npos || open == std::string::npos || close == std::string::npos ||
          attrs_end == std::string::npos)
        throw UserError(fmt::format("canonical text line {}: not a node: {}", line_no, line));
      std::string args = prefixed(line.substr(open + 1, close - open - 1));
      const std::string attrs = line.substr(close + 3, attrs_end - close - 3);
      if (!attrs.empty()) args += (args.empty() ? "" : ", ") + attrs;
      body += fmt::format("  %{} = {}({});\n", line.substr(0, eq),
                          line.substr(eq + 3, open - eq - 3), args);
    }
  }
  if (n_outs == 0) throw UserError("canonical text names no output");
  return fmt::format("fn ({}) {{\n{}  {}\n}}\n", params, body,
                     n_outs == 1 ? outs : "(" + outs + ")");
}

VerifiedPlan VerifyOne(const db::BestPlanRecord& rec, db::Cache& store, MeasurementBackend& backend,
                       const TuneOptions& base, const ProgressFn& progress) {
  VerifiedPlan out;
  out.stored = rec;
  if (rec.region_text.empty()) {
    out.skipped = "no region text stored";
    return out;
  }
  TuneOptions options = base;
  options.search.threads = rec.key.threads;
  JobRunner runner(backend, options, progress);
  if (runner.target() != rec.key.target_fingerprint) {
    out.skipped = "stored for another target";
    return out;
  }
  std::optional<Graph> parsed;
  CanonicalForm canon;
  Plan stored;
  try {
    parsed.emplace(ParseRelay(RelayFromCanonical(rec.region_text),
                              "stored region " + rec.key.region_signature.substr(0, 12)));
    // A region's canonical form (the nodes as a subgraph), as stored; not the whole graph's.
    std::vector<ValueId> nodes;
    for (const PlanGroup& pg : UnfusedPlan(*parsed).groups)
      nodes.insert(nodes.end(), pg.nodes.begin(), pg.nodes.end());
    canon = Canonicalize(*parsed, nodes);
    if (canon.text != rec.region_text) {
      out.skipped = "the stored region text does not rebuild the region";
      return out;
    }
    stored = Plan{"stored", FromStored(canon, rec)};
  } catch (const UserError& e) {
    out.skipped = e.what();
    return out;
  }
  const Graph& g = *parsed;
  SearchOptions search;
  search.threads = rec.key.threads;
  const RequestPolicy policy(g, search);
  ThreeWay way;
  way.graph = &g;
  way.plans[kTuned] = stored;
  way.plans[kGreedy] = WithDefaultSchedules(g, GreedyBaseline(policy), rec.key.threads);
  way.plans[kUnfused] = WithDefaultSchedules(g, UnfusedPlan(g), rec.key.threads);
  const ThreeWayResult res = TimeThreeWays({way}, runner, "verifying", kIncumbentFirst)[0];
  out.stored_us = res.us[kTuned];
  out.greedy_us = res.us[kGreedy];
  out.unfused_us = res.us[kUnfused];
  out.decision = res.decision;
  out.margin = res.margin;
  out.rounds = res.rounds;
  if (res.chosen < 0) {
    out.skipped = "no plan ran: " + res.reason[kTuned];
    return out;
  }
  if (res.chosen == kTuned) {
    out.kept = "stored";
    store.MarkBestPlanVerified(rec.key);
    return out;
  }
  db::BestPlanRecord next = rec;
  next.groups = ToStored(canon, *way.plans[res.chosen]);
  next.chosen = kSlotNames[res.chosen];
  next.tuned_us = res.us[res.chosen];
  next.greedy_us = res.us[kGreedy];
  next.unfused_us = res.us[kUnfused];
  next.margin = res.margin;
  next.decision = "verify: " + res.decision;
  next.rounds = res.rounds;
  next.created_at = 0;
  next.verified_at = NowUnixMs();
  const std::string reason =
      std::isfinite(res.us[kTuned])
          ? fmt::format("verify: {} {:.2f}× faster", kSlotNames[res.chosen],
                        res.us[kTuned] / res.us[res.chosen])
          : fmt::format("verify: the stored plan failed ({})", res.reason[kTuned]);
  store.PutBestPlan(next, reason);
  spdlog::info("region {}: stored plan replaced by {} ({})", rec.key.region_signature,
               kSlotNames[res.chosen], res.decision);
  out.kept = kSlotNames[res.chosen];
  out.replaced = true;
  return out;
}

}  // namespace

std::vector<db::BestPlanRecord> LeastCertainFirst(std::vector<db::BestPlanRecord> plans) {
  // A missing margin or rounds count is the least certain of all: nothing says how it was decided.
  auto order = [](const db::BestPlanRecord& p) {
    const double distance = p.margin && *p.margin > 0 ? std::abs(std::log(*p.margin)) : 0.0;
    return std::tuple(p.verified_at.has_value(), p.verified_at.value_or(0), distance,
                      p.rounds.value_or(0), p.created_at);
  };
  std::stable_sort(plans.begin(), plans.end(),
                   [&](const auto& a, const auto& b) { return order(a) < order(b); });
  return plans;
}

std::vector<VerifiedPlan> VerifyStoredPlans(const std::vector<db::BestPlanRecord>& plans,
                                            db::Cache& store, MeasurementBackend& backend,
                                            const TuneOptions& options,
                                            const ProgressFn& progress) {
  std::vector<VerifiedPlan> out;
  for (const db::BestPlanRecord& rec : plans)
    out.push_back(VerifyOne(rec, store, backend, options, progress));
  return out;
}

}  // namespace fusetune
