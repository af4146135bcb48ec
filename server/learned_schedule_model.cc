// Training: rows sorted by group (xgboost's ranking objectives need each group contiguous), label
// = how many times faster than the group's slowest the schedule is, in steps of 1/8 of a doubling
// (log2(slowest / t) * 8, rounded): schedules within ~9% of each other share a label, so the
// pairwise objective does not learn the noise. Small trees, few rounds, one thread: training on a
// few thousand measurements takes tens of milliseconds.
#include "server/learned_schedule_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <xgboost/c_api.h>

#include "ir/error.h"
#include "ir/text/signature.h"
#include "server/noise.h"
#include "server/schedule_features.h"

namespace fusetune {
namespace {

constexpr int kRounds = 60;

void Check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string(what) + ": " + XGBGetLastError());
}

// The indices of `samples` by group, groups in order of their key.
std::map<std::string, std::vector<size_t>> ByGroup(const std::vector<ScheduleSample>& samples) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < samples.size(); ++i) groups[samples[i].group].push_back(i);
  return groups;
}

// The ranks (0-based, ties averaged) of values.
std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = (i + j) / 2.0;
    i = j + 1;
  }
  return ranks;
}

double Pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

}  // namespace

LearnedScheduleModel::~LearnedScheduleModel() { XGBoosterFree(booster_); }

std::unique_ptr<LearnedScheduleModel> LearnedScheduleModel::Train(
    const std::vector<ScheduleSample>& samples) {
  std::vector<float> x, labels;
  std::vector<unsigned> sizes;
  std::set<KnobValue> seen;
  for (const auto& [key, members] : ByGroup(samples)) {
    if (members.size() < 2) continue;
    double slowest = 0;
    for (size_t i : members) slowest = std::max(slowest, samples[i].median_us);
    for (size_t i : members) {
      const std::vector<float>& f = samples[i].features;
      if (f.size() == kScheduleFeatureCount)
        for (int k : kKnobFeatures) seen.emplace(FeatureTemplate(f), k, f[k]);
      x.insert(x.end(), f.begin(), f.end());
      labels.push_back(std::round(8 * std::log2(slowest / samples[i].median_us)));
    }
    sizes.push_back(static_cast<unsigned>(members.size()));
  }
  if (static_cast<int>(sizes.size()) < kMinGroups) return nullptr;
  const bst_ulong rows = labels.size(), cols = x.size() / labels.size();
  DMatrixHandle data;
  Check(XGDMatrixCreateFromMat(x.data(), rows, cols, std::nanf(""), &data), "xgboost data");
  BoosterHandle booster = nullptr;
  try {
    Check(XGDMatrixSetFloatInfo(data, "label", labels.data(), rows), "xgboost labels");
    Check(XGDMatrixSetUIntInfo(data, "group", sizes.data(), sizes.size()), "xgboost groups");
    Check(XGBoosterCreate(&data, 1, &booster), "xgboost booster");
    for (const auto& [k, v] : {std::pair{"objective", "rank:pairwise"},
                               {"nthread", "1"},
                               {"max_depth", "4"},
                               {"eta", "0.2"},
                               {"verbosity", "0"},
                               {"seed", "1"}})
      Check(XGBoosterSetParam(booster, k, v), "xgboost parameter");
    for (int round = 0; round < kRounds; ++round)
      Check(XGBoosterUpdateOneIter(booster, round, data), "xgboost training");
  } catch (...) {
    if (booster) XGBoosterFree(booster);
    XGDMatrixFree(data);
    throw;
  }
  XGDMatrixFree(data);
  return std::unique_ptr<LearnedScheduleModel>(new LearnedScheduleModel(booster, std::move(seen)));
}

bool LearnedScheduleModel::Knows(const std::vector<float>& features) const {
  if (features.size() != kScheduleFeatureCount) return true;
  const int templ = FeatureTemplate(features);
  for (int k : kKnobFeatures)
    if (!seen_.count({templ, k, features[k]})) return false;
  return true;
}

std::vector<double> LearnedScheduleModel::Score(
    const std::vector<std::vector<float>>& features) const {
  if (features.empty()) return {};
  std::vector<float> x;
  for (const auto& f : features) x.insert(x.end(), f.begin(), f.end());
  DMatrixHandle data;
  Check(XGDMatrixCreateFromMat(x.data(), features.size(), features[0].size(), std::nanf(""), &data),
        "xgboost data");
  bst_ulong n = 0;
  const float* out = nullptr;
  const int rc = XGBoosterPredict(booster_, data, 0, 0, 0, &n, &out);
  std::vector<double> score;
  if (rc == 0)
    for (bst_ulong i = 0; i < n; ++i) score.push_back(-out[i]);  // higher relevance: faster
  XGDMatrixFree(data);
  Check(rc, "xgboost prediction");
  return score;
}

RankQuality MeasureRankQuality(const std::vector<ScheduleSample>& samples,
                               const std::vector<double>& score) {
  RankQuality q;
  double concordance = 0, spearman = 0;
  int spearman_groups = 0;
  for (const auto& [key, members] : ByGroup(samples)) {
    if (members.size() < 2) continue;
    ++q.groups;
    for (size_t a = 0; a < members.size(); ++a) {
      for (size_t b = a + 1; b < members.size(); ++b) {
        const double ta = samples[members[a]].median_us, tb = samples[members[b]].median_us;
        if (std::max(ta, tb) <= std::min(ta, tb) * (1 + kNoiseFloor)) continue;  // a noise pair
        ++q.pairs;
        const double sa = score[members[a]], sb = score[members[b]];
        if (sa != sb) concordance += (sa < sb) == (ta < tb) ? 1 : -1;
      }
    }
    if (members.size() >= 3) {
      std::vector<double> t, s;
      for (size_t i : members) {
        t.push_back(samples[i].median_us);
        s.push_back(score[i]);
      }
      spearman += Pearson(Ranks(t), Ranks(s));
      ++spearman_groups;
    }
  }
  q.kendall = q.pairs > 0 ? concordance / q.pairs : 0;
  q.spearman = spearman_groups > 0 ? spearman / spearman_groups : 0;
  return q;
}

bool HeldOut(const std::string& group) { return Hash128Hex(group)[0] < '4'; }

ScheduleModelEvaluation EvaluateScheduleModels(const std::vector<ScheduleSample>& samples,
                                               std::unique_ptr<LearnedScheduleModel>* model) {
  std::vector<ScheduleSample> train, test;
  for (const ScheduleSample& s : samples) (HeldOut(s.group) ? test : train).push_back(s);
  ScheduleModelEvaluation e;
  e.train_samples = static_cast<int>(train.size());
  e.heldout_samples = static_cast<int>(test.size());
  for (const auto& [k, m] : ByGroup(train)) e.train_groups += m.size() >= 2;
  for (const auto& [k, m] : ByGroup(test)) e.heldout_groups += m.size() >= 2;
  std::vector<double> roofline;
  for (const ScheduleSample& s : test) roofline.push_back(s.roofline_us);
  e.roofline = MeasureRankQuality(test, roofline);
  std::unique_ptr<LearnedScheduleModel> trained = LearnedScheduleModel::Train(train);
  e.trained = trained != nullptr;
  if (trained) {
    std::vector<std::vector<float>> features;
    for (const ScheduleSample& s : test) features.push_back(s.features);
    e.learned = MeasureRankQuality(test, trained->Score(features));
  }
  if (model) *model = std::move(trained);
  return e;
}

}  // namespace fusetune
