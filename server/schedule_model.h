#pragma once
// The order in which a group's schedules are measured. The roofline's per-schedule estimate
// (server/cost_model.h) first; a model learned from the store's measurements of the target
// (server/learned_schedule_model.h) instead where it ranked held-out groups better than the
// roofline did. Either only orders: the default schedule always comes first and is always
// measured, and what is measured decides.
//
// A learned model knows only the knob values it trained on: a store tuned at 8 rows, where the
// space holds no swap=1, trains a model that never split on swap and scores swapped tiles by
// their other features, below the tiles it knows; a warm start at 64 rows from that store then
// measured none of them and kept a plan at 0.935 of greedy's time where a cold tune's, ranked by
// the roofline, ran at 0.82-0.84 (BENCHMARKS.md, "A warm start after sizes below 16 rows"). So
// schedules with a knob value the training never held (LearnedScheduleModel::Knows) are ordered by
// the roofline and take every other place, from the first; once measured, they are in the store and
// the next training holds them. This is the exploration share TVM's tuners give to candidates
// outside the model's evidence (MetaSchedule's epsilon-greedy), aimed at what the model cannot know
// rather than drawn at random.
#include <memory>
#include <string>
#include <vector>

#include "db/records.h"
#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "server/cost_model.h"
#include "server/learned_schedule_model.h"

namespace fusetune {

class TuneCache;

// The ok measurements of `records` as samples (features, time, the roofline's estimate);
// records whose group text or schedule no longer parses or lowers are skipped.
std::vector<ScheduleSample> SamplesFromMeasurements(
    const std::vector<db::MeasurementRecord>& records);

class ScheduleRanker {
 public:
  // The roofline's order.
  ScheduleRanker(RooflineTarget roofline, int threads);
  // Trains on the store's measurements of the cache's target, on the first Rank() that orders
  // (the cache must outlive that call), and keeps the learned order only when it beat the
  // roofline's on the held-out groups.
  static ScheduleRanker FromStore(const TuneCache& cache, RooflineTarget roofline, int threads);
  // The learned order of `model`, trained already. Exposed for tests.
  static ScheduleRanker WithModel(std::shared_ptr<const LearnedScheduleModel> model,
                                  RooflineTarget roofline, int threads);

  // `space` (its first entry the default) with the default first and the others fastest-first by
  // the ranker's estimate, those the learned model never saw a knob value of alternating with
  // the others from the first place; ties keep the space's order. A space of two schedules or
  // fewer has nothing to order and trains nothing.
  std::vector<Schedule> Rank(const Graph& graph, const FusedGroup& group,
                             std::vector<Schedule> space) const;
  // "learned" or "roofline"; "" for a ranker from the store that has not ordered anything yet
  // (so has not trained).
  std::string name() const;
  // Whether the store's measurements were trained on: false until a FromStore ranker first orders.
  bool trained() const { return state_->trained; }
  // The held-out evaluation of the training (empty before it).
  const ScheduleModelEvaluation& evaluation() const { return state_->evaluation; }

 private:
  // Shared by copies, so a ranker copied before its first Rank() trains once for all of them.
  struct State {
    const TuneCache* cache = nullptr;  // the store to train on; nullptr: the roofline only
    bool trained = false;
    std::shared_ptr<const LearnedScheduleModel> learned;
    ScheduleModelEvaluation evaluation;
  };
  void TrainOnce() const;

  RooflineTarget roofline_;
  int threads_;
  std::shared_ptr<State> state_;
};

}  // namespace fusetune
