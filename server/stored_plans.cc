#include "server/stored_plans.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/error.h"
#include "ir/text/family.h"
#include "server/stage_log.h"

namespace fusetune {

std::vector<PlanGroup> FromStored(const CanonicalForm& canon, const db::BestPlanRecord& rec) {
  std::vector<PlanGroup> out;
  for (const db::StoredGroup& sg : rec.groups) {
    PlanGroup g;
    for (int32_t pos : sg.nodes) {
      if (pos < 0 || pos >= static_cast<int32_t>(canon.nodes.size()))
        throw UserError(fmt::format("stored plan for region {} names node {} of {}",
                                    rec.key.region_signature, pos, canon.nodes.size()));
      g.nodes.push_back(canon.nodes[pos]);
    }
    std::sort(g.nodes.begin(), g.nodes.end());
    g.schedule = Schedule::Parse(sg.schedule);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<db::StoredGroup> ToStored(const CanonicalForm& canon, const Plan& plan) {
  std::unordered_map<ValueId, int32_t> position;
  for (size_t i = 0; i < canon.nodes.size(); ++i)
    position[canon.nodes[i]] = static_cast<int32_t>(i);
  std::vector<db::StoredGroup> out;
  for (const PlanGroup& g : plan.groups) {
    db::StoredGroup sg;
    for (ValueId v : g.nodes) sg.nodes.push_back(position.at(v));
    std::sort(sg.nodes.begin(), sg.nodes.end());
    sg.schedule = g.schedule.ToString();
    out.push_back(std::move(sg));
  }
  return out;
}

namespace {

void Answer(RegionReport& report, std::vector<PlanGroup> plan, const db::BestPlanRecord& rec) {
  report.plan = std::move(plan);
  report.chosen = rec.chosen;
  report.tuned_us = rec.tuned_us;
  report.greedy_us = rec.greedy_us;
  report.unfused_us = rec.unfused_us;
  report.decision = rec.decision;
  report.margin = rec.margin;
  report.rounds = rec.rounds.value_or(0);
}

}  // namespace

std::vector<size_t> ReuseStoredPlans(const RequestPolicy& policy,
                                     const std::vector<TuneRegion>& regions, const TuneCache& cache,
                                     StoredPlanUse use, std::vector<RegionReport>& reports) {
  const Graph& g = policy.graph();
  std::vector<size_t> to_search;
  for (size_t r = 0; r < regions.size(); ++r) {
    if (regions[r].representative != r) continue;
    std::optional<db::BestPlanRecord> rec;
    if (use != StoredPlanUse::kOff) rec = cache.FindBestPlan(regions[r].signature);
    if (!rec) {
      spdlog::debug(
          "region {}: {}", regions[r].signature,
          use != StoredPlanUse::kOff ? "no stored plan" : "searched again (the cache is off)");
      to_search.push_back(r);
      continue;
    }
    // Binding is in no key: the plan of a tune that could not pack the weights ahead does not
    // stand for a search that can.
    if (use == StoredPlanUse::kTune && regions[r].weights_bound && !rec->weights_bound) {
      spdlog::debug("region {}: {}", regions[r].signature, kSearchedWithBoundWeights);
      for (size_t s = r; s < regions.size(); ++s)
        if (regions[s].representative == r) reports[s].searched_again = kSearchedWithBoundWeights;
      to_search.push_back(r);
      continue;
    }
    // Every region with this signature, in its own ids; the plan answers all of them or none.
    std::vector<std::pair<size_t, std::vector<PlanGroup>>> answers;
    std::string why_not;
    for (size_t s = r; s < regions.size() && why_not.empty(); ++s) {
      if (regions[s].representative != r) continue;
      std::vector<PlanGroup> plan = FromStored(regions[s].canon, *rec);
      if (policy.MayReuse(plan, &why_not)) answers.emplace_back(s, std::move(plan));
    }
    if (!why_not.empty()) {
      spdlog::debug("region {}: the stored plan does not answer this request: {}",
                    regions[r].signature, why_not);
      to_search.push_back(r);
      continue;
    }
    if (spdlog::should_log(spdlog::level::debug))  // lookups run this: format only when shown
      spdlog::debug("region {}: stored plan {} ({}, {:.2f} µs) answers", regions[r].signature,
                    PlanText(g, answers.front().second), rec->chosen, rec->ChosenUs());
    for (auto& [s, plan] : answers) {
      reports[s].cached = true;
      Answer(reports[s], std::move(plan), *rec);
    }
  }
  return to_search;
}

void RecordBestPlans(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                     const std::vector<RegionWinner>& winners, TuneCache& cache,
                     std::vector<RegionReport>& reports,
                     const std::optional<std::string>& replace_reason) {
  const Graph& g = policy.graph();
  for (const RegionWinner& w : winners) {
    const TuneRegion& tr = regions[w.region];
    db::BestPlanRecord rec;
    rec.key.region_signature = tr.signature;
    rec.groups = ToStored(tr.canon, w.plan);
    // The fastest of the three is what is stored and used, and its time is the tuned figure.
    rec.tuned_us = w.us[w.chosen];
    rec.greedy_us = w.us[kGreedy];
    rec.unfused_us = w.us[kUnfused];
    rec.chosen = kSlotNames[w.chosen];
    rec.region_text = tr.canon.text;
    rec.family_key = CanonicalizeFamily(g, tr.canon.nodes).key;  // plan_transfer.h reads it
    rec.ops = OpsOf(g, tr.canon.nodes);
    rec.margin = w.margin;
    rec.decision = w.decision;
    rec.rounds = w.rounds;
    rec.weights_bound = tr.weights_bound && w.wpack_offered;
    if (policy.MayStoreBestPlan()) {
      if (replace_reason)
        cache.ReplaceBestPlan(rec, *replace_reason);
      else
        cache.PutBestPlan(rec);
      spdlog::debug("region {}: stored {} as its best plan", tr.signature,
                    PlanText(g, w.plan.groups));
    } else {
      spdlog::debug("region {}: not stored, the request's controls change the plan space",
                    tr.signature);
    }
    for (size_t s = w.region; s < regions.size(); ++s) {
      if (regions[s].representative != w.region) continue;
      Answer(reports[s], FromStored(regions[s].canon, rec), rec);
      reports[s].max_abs_error = w.max_abs_error;
      reports[s].max_output_magnitude = w.max_output_magnitude;
    }
  }
}

}  // namespace fusetune
