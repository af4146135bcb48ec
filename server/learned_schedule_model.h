#pragma once
// A schedule ranker learned from the store's own measurements: gradient-boosted trees (Debian's
// libxgboost) with a pairwise ranking objective, trained within groups (one group signature at
// one thread count on one target), on the features of server/schedule_features.h. It only orders
// the schedules of one group for measuring: it never decides whether a kernel is valid (every
// kernel is still checked against the reference interpreter) and never stands in for a
// measurement.
//
// Its worth is measured, not assumed: EvaluateScheduleModels trains on three quarters of the
// groups (by signature) and reports, on the held-out quarter, the rank correlation of its order
// and of the roofline's order with the measured times (`fusetune cache model`). The tuner uses it
// only where it beat the roofline on that held-out split (server/schedule_model.h).
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace fusetune {

// One measured (group, schedule): the unit of training and evaluation.
struct ScheduleSample {
  std::string group;  // group signature, target and threads: the schedules that compete
  std::vector<float> features;
  double median_us = 0;
  double roofline_us = 0;  // server/cost_model.h's EstimateSchedule
};

class LearnedScheduleModel {
 public:
  ~LearnedScheduleModel();
  LearnedScheduleModel(const LearnedScheduleModel&) = delete;
  LearnedScheduleModel& operator=(const LearnedScheduleModel&) = delete;

  // Nullptr when fewer than kMinGroups groups have two schedules or more.
  static std::unique_ptr<LearnedScheduleModel> Train(const std::vector<ScheduleSample>& samples);
  static constexpr int kMinGroups = 8;

  // Lower is predicted faster; only the order among one group's schedules means anything.
  std::vector<double> Score(const std::vector<std::vector<float>>& features) const;

  // Whether the training held every knob value of `features` (server/schedule_features.h's
  // kKnobFeatures) for its template. A value it never saw (swap=1 where only sizes below 16 rows
  // were tuned) is one no tree split on: its score says nothing. True for features of another
  // layout than ScheduleFeatures' (tests' own).
  bool Knows(const std::vector<float>& features) const;

 private:
  using KnobValue = std::tuple<int, int, float>;  // template, feature, value
  LearnedScheduleModel(void* booster, std::set<KnobValue> seen)
      : booster_(booster), seen_(std::move(seen)) {}
  void* booster_;  // BoosterHandle
  std::set<KnobValue> seen_;
};

// How well an order matches the measured times, over the groups of a set of samples.
struct RankQuality {
  int groups = 0;       // groups with two samples or more
  int pairs = 0;        // pairs of one group whose times differ beyond the noise floor
  double kendall = 0;   // (concordant - discordant) / pairs: 1 is the measured order
  double spearman = 0;  // mean over groups of three samples or more
};

// `score[i]` orders samples[i] (lower: predicted faster).
RankQuality MeasureRankQuality(const std::vector<ScheduleSample>& samples,
                               const std::vector<double>& score);

struct ScheduleModelEvaluation {
  int train_samples = 0, train_groups = 0;
  int heldout_samples = 0, heldout_groups = 0;
  RankQuality learned, roofline;  // on the held-out groups
  bool trained = false;           // enough groups to train
  // The learned order is used only when it ranked the held-out groups better.
  bool learned_better() const {
    return trained && heldout_groups >= kMinHeldOutGroups && learned.pairs > 0 &&
           learned.kendall > roofline.kendall;
  }
  static constexpr int kMinHeldOutGroups = 4;  // fewer say nothing about the model's worth
};

// Whether a group is held out of training: a quarter of the groups, by its signature's hash.
bool HeldOut(const std::string& group);

// Splits by HeldOut, trains on the rest, scores the held-out groups with both orders. When
// `model` is given it receives the trained model (nullptr when too few groups).
ScheduleModelEvaluation EvaluateScheduleModels(
    const std::vector<ScheduleSample>& samples,
    std::unique_ptr<LearnedScheduleModel>* model = nullptr);

}  // namespace fusetune
