// The `tune --json` shape of docs/architecture.md: a contract that scripts rely on.
#include <cmath>

#include <nlohmann/json.hpp>

#include "server/tune_report.h"

namespace fusetune {

namespace {
// JSON has no infinity: a plan that could not run is null.
nlohmann::json Us(double us) { return std::isfinite(us) ? nlohmann::json(us) : nlohmann::json(); }

// {"stages_s": {"measuring": 12.1, ...}, "jobs_ms": {"compile_ms": ..., ...},
// "schedule_ranking": "learned", "schedule_duels": [...]}: what the tune's seconds were spent on
// (issue 12's breakdown); empty objects and null for an answer from the cache.
nlohmann::json Breakdown(const TuneReport& report) {
  nlohmann::json stages = nlohmann::json::object(), jobs = nlohmann::json::object();
  for (const auto& [stage, seconds] : report.stage_seconds) stages[stage] = seconds;
  if (!report.stage_seconds.empty())
    for (const PhaseField& f : kPhaseFields) jobs[f.name] = report.job_phases.*f.figure;
  nlohmann::json ranking;
  if (!report.schedule_ranking.empty()) ranking = report.schedule_ranking;
  nlohmann::json duels = nlohmann::json::array();
  for (const ScheduleDuel& d : report.duels)
    duels.push_back(
        {{"group", d.group},
         {"ops", d.ops},
         {"schedule", d.schedule},
         {"runner_up", d.runner_up.empty() ? nlohmann::json() : nlohmann::json(d.runner_up)},
         {"kept", d.kept},
         {"decision", d.decision},
         {"rounds", d.rounds},
         {"won", d.won},
         {"kept_unless_beaten", d.kept_unless_beaten}});
  return {{"stages_s", stages},
          {"jobs_ms", jobs},
          {"schedule_ranking", ranking},
          {"schedule_duels", duels}};
}
}  // namespace

std::string TuneReportToJson(const Graph& graph, const std::string& graph_name,
                             const TuneReport& report) {
  using nlohmann::json;
  json regions = json::array();
  for (const RegionReport& r : report.regions) {
    json nodes = json::array(), plan = json::array(), schedules = json::array();
    for (ValueId v : r.nodes) nodes.push_back(graph.RefName(v));
    for (const PlanGroup& g : r.plan) {
      json group = json::array();
      for (ValueId v : g.nodes) group.push_back(graph.RefName(v));
      plan.push_back(group);
      schedules.push_back(g.schedule.ToString());
    }
    // Where a plan transferred on a miss came from; null for every other answer.
    const json transferred_from = r.transferred_from.empty() ? json() : json(r.transferred_from);
    // Why a tune refused the region's stored plan and searched it; null when it did not.
    const json searched_again = r.searched_again.empty() ? json() : json(r.searched_again);
    // Why no tuned size of the family answered a miss; null when nothing says.
    const json transfer_refused = r.transfer_refused.empty() ? json() : json(r.transfer_refused);
    // How a warm-started tune began (server/warm_start.h); null when it did not.
    json warm_start;
    if (r.warm_start) {
      const WarmStartReport& w = *r.warm_start;
      warm_start = {{"from", w.from},        {"transferred_us", Us(w.transferred_us)},
                    {"chosen", w.chosen},    {"rounds", w.rounds},
                    {"seconds", w.seconds},  {"search_candidates", w.search_candidates},
                    {"searched", w.searched}};
    }
    json changes = json::array();
    for (const PlanChange& c : r.changes) {
      json group = json::array();
      for (ValueId v : c.nodes) group.push_back(graph.RefName(v));
      changes.push_back({{"nodes", group},
                         {"fusion", c.fusion},
                         {"schedule", c.schedule},
                         {"knobs_changed", c.knobs_changed}});
    }
    regions.push_back({{"signature", r.signature},
                       {"nodes", nodes},
                       {"ops", r.ops},
                       {"cached", r.cached},
                       {"searched_again", searched_again},
                       {"transfer_refused", transfer_refused},
                       {"plan", plan},
                       {"schedules", schedules},
                       {"chosen", r.chosen},
                       {"tuned_us", Us(r.tuned_us)},
                       {"greedy_us", Us(r.greedy_us)},
                       {"unfused_us", Us(r.unfused_us)},
                       {"measured", r.measured},
                       {"reused", r.reused},
                       {"pruned", r.pruned},
                       {"decision", r.decision},
                       {"margin", r.margin ? json(*r.margin) : json()},
                       {"rounds", r.rounds},
                       {"transferred_from", transferred_from},
                       {"warm_start", warm_start},
                       {"changes_from_greedy", changes}});
  }
  bool all_cached = !report.regions.empty();
  for (const RegionReport& r : report.regions)
    all_cached &= r.cached || !r.transferred_from.empty();
  json out = {{"graph", graph_name},
              {"target", report.target},
              {"threads", report.threads},
              {"regions", regions},
              {"total",
               {{"tuned_us", Us(report.total_tuned_us)},
                {"greedy_us", Us(report.total_greedy_us)},
                {"unfused_us", Us(report.total_unfused_us)},
                {"chosen", report.total_chosen},
                {"decision", report.total_decision},
                {"measured_together", report.totals_measured}}},
              // null when every region came from the cache: nothing ran, and each plan was checked
              // against the reference interpreter when it was stored (a transferred one is
              // checked by `run` at its first run).
              {"max_abs_error", all_cached ? json() : json(report.max_abs_error)},
              {"max_output_magnitude", all_cached ? json() : json(report.max_output_magnitude)},
              {"candidates_measured", report.candidates_measured},
              {"measurements_reused", report.measurements_reused},
              {"pruned", report.pruned},
              {"seconds", report.seconds},
              {"breakdown", Breakdown(report)}};
  return out.dump(2);
}

}  // namespace fusetune
