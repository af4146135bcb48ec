#include "server/schedule_model.h"

#include <algorithm>
#include <map>
#include <optional>

#include <spdlog/spdlog.h>

#include "ir/error.h"
#include "ir/text/canonical_parser.h"
#include "server/schedule_features.h"
#include "server/tune_cache.h"

namespace fusetune {

std::vector<ScheduleSample> SamplesFromMeasurements(
    const std::vector<db::MeasurementRecord>& records) {
  struct Parsed {
    Graph graph;
    std::optional<FusedGroup> group;
  };
  std::map<std::string, std::optional<Parsed>> parsed;  // by group text: parsed once
  std::vector<ScheduleSample> samples;
  const RooflineTarget unit;
  for (const db::MeasurementRecord& r : records) {
    if (r.status != db::MeasurementStatus::kOk || !(r.median_us > 0)) continue;
    auto it = parsed.find(r.group_text);
    if (it == parsed.end()) {
      std::optional<Parsed> p;
      try {
        Graph g = ParseCanonicalText(r.group_text);
        std::vector<ValueId> nodes;
        for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
          if (g.value(v).kind == ValueKind::kNode) nodes.push_back(v);
        auto group = AnalyzeGroup(g, nodes);
        if (group) p = Parsed{std::move(g), std::move(group)};
      } catch (const UserError&) {
      }
      it = parsed.emplace(r.group_text, std::move(p)).first;
    }
    if (!it->second) continue;
    const Parsed& p = *it->second;
    try {
      const Schedule schedule = Schedule::Parse(r.key.schedule);
      ScheduleSample s;
      s.group = r.key.group_signature + "|" + r.key.target_fingerprint + "|" +
                std::to_string(r.key.threads);
      s.features = ScheduleFeatures(p.graph, *p.group, schedule, r.key.threads);
      s.median_us = r.median_us;
      s.roofline_us = EstimateSchedule(p.graph, *p.group, schedule, unit, r.key.threads);
      samples.push_back(std::move(s));
    } catch (const UserError&) {
    }
  }
  return samples;
}

ScheduleRanker::ScheduleRanker(RooflineTarget roofline, int threads)
    : roofline_(roofline), threads_(threads), state_(std::make_shared<State>()) {}

ScheduleRanker ScheduleRanker::FromStore(const TuneCache& cache, RooflineTarget roofline,
                                         int threads) {
  ScheduleRanker ranker(roofline, threads);
  ranker.state_->cache = &cache;
  return ranker;
}

ScheduleRanker ScheduleRanker::WithModel(std::shared_ptr<const LearnedScheduleModel> model,
                                         RooflineTarget roofline, int threads) {
  ScheduleRanker ranker(roofline, threads);
  ranker.state_->trained = true;
  ranker.state_->learned = std::move(model);
  return ranker;
}

std::string ScheduleRanker::name() const {
  if (state_->learned) return "learned";
  return state_->cache && !state_->trained ? "" : "roofline";
}

void ScheduleRanker::TrainOnce() const {
  State& st = *state_;
  if (!st.cache || st.trained) return;
  st.trained = true;
  std::unique_ptr<LearnedScheduleModel> model;
  st.evaluation =
      EvaluateScheduleModels(SamplesFromMeasurements(st.cache->ListTargetMeasurements()), &model);
  const ScheduleModelEvaluation& e = st.evaluation;
  if (e.learned_better()) st.learned = std::move(model);
  spdlog::debug(
      "schedule ranking: {} ({} training samples; held-out Kendall learned {:.2f}, roofline "
      "{:.2f} over {} pairs)",
      name(), e.train_samples, e.learned.kendall, e.roofline.kendall, e.roofline.pairs);
}

std::vector<Schedule> ScheduleRanker::Rank(const Graph& graph, const FusedGroup& group,
                                           std::vector<Schedule> space) const {
  if (space.size() <= 2) return space;
  TrainOnce();
  const LearnedScheduleModel* learned = state_->learned.get();
  std::vector<double> score(space.size());
  // Schedules with a knob value the model never trained on: ordered by the roofline, and given
  // every other place from the first, so the tune measures what the store has no evidence about.
  std::vector<bool> unseen(space.size(), false);
  if (learned) {
    std::vector<std::vector<float>> features;
    for (const Schedule& s : space) features.push_back(ScheduleFeatures(graph, group, s, threads_));
    score = learned->Score(features);
    for (size_t i = 1; i < space.size(); ++i) unseen[i] = !learned->Knows(features[i]);
  }
  for (size_t i = 0; i < space.size(); ++i)
    if (!learned || unseen[i])
      score[i] = EstimateSchedule(graph, group, space[i], roofline_, threads_);
  std::vector<size_t> known, novel;
  for (size_t i = 1; i < space.size(); ++i) (unseen[i] ? novel : known).push_back(i);
  auto by_score = [&](size_t a, size_t b) { return score[a] < score[b]; };
  std::stable_sort(known.begin(), known.end(), by_score);
  std::stable_sort(novel.begin(), novel.end(), by_score);
  if (!novel.empty())
    spdlog::debug(
        "schedule ranking: {} of {} schedules of a {} group hold knob values the model "
        "never trained on; they alternate with its order, from the first",
        novel.size(), space.size(), TemplateName(group.templ));
  std::vector<Schedule> ranked = {std::move(space[0])};
  for (size_t k = 0, n = 0; k < known.size() || n < novel.size();) {
    if (n < novel.size()) ranked.push_back(std::move(space[novel[n++]]));
    if (k < known.size()) ranked.push_back(std::move(space[known[k++]]));
  }
  return ranked;
}

}  // namespace fusetune
