// The schedule dimension of the search: the roofline's per-schedule ranking, the learned model's
// training and evaluation, the successive-halving search under a per-region budget, and reuse of
// its measurements. The backend here times kernels by a bytes model in which one knob value is
// truly faster, so what the search finds can be asserted exactly.
#include <filesystem>
#include <numeric>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "db/cache.h"
#include "db/database.h"
#include "ir/fusion.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "ir/text/signature.h"
#include "model_backend.h"
#include "server/cost_model.h"
#include "server/learned_schedule_model.h"
#include "server/schedule_features.h"
#include "server/schedule_model.h"
#include "server/schedule_search.h"
#include "server/tune_cache.h"
#include "server/tuner.h"
#include "temp_store_test.h"

namespace fusetune {
namespace {

FusedGroup WholeGroup(const Graph& g) {
  std::vector<ValueId> nodes;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (g.value(v).kind == ValueKind::kNode) nodes.push_back(v);
  return *AnalyzeGroup(g, nodes);
}

// nn.dense(x [m, k], w [n, k]) alone.
Graph Dense(int m, int k, int n) {
  return ParseRelay(fmt::format("fn (%x: Tensor[({0}, {1}), float32], %w: Tensor[({2}, {1}), "
                                "float32]) {{ nn.dense(%x, %w) }}",
                                m, k, n),
                    "t");
}

Schedule Knobs(std::initializer_list<std::pair<const char*, int64_t>> knobs) {
  Schedule s;
  for (const auto& [k, v] : knobs) s.Set(k, v);
  return s;
}

// ---- the roofline per schedule ----

TEST(ScheduleRoofline, ATileThatWastesRowsAtTheEdgeIsEstimatedSlower) {
  // m = 13: a 4-row tile computes 16 rows, a 12-row tile 24.
  Graph g = Dense(13, 2048, 64);
  const FusedGroup group = WholeGroup(g);
  RooflineTarget target;
  target.bandwidth_gbs = 1000;  // memory out of the way: the tile's use of the FMAs decides
  const double tall = EstimateSchedule(g, group, Knobs({{"mr", 12}, {"nr", 32}}), target, 1);
  const double short_tile = EstimateSchedule(g, group, Knobs({{"mr", 4}, {"nr", 64}}), target, 1);
  EXPECT_GT(tall, short_tile * 1.3);
  EXPECT_EQ(EstimateSchedule(g, group, Knobs({{"nr", 24}}), target, 1),
            std::numeric_limits<double>::infinity())
      << "a schedule the template refuses";
}

TEST(ScheduleRoofline, WeightsPackedAheadRankRightAfterTheDefault) {
  // BERT's FFN-1 dense with its weight an initialiser: the space offers wpack, the roofline
  // counts the packing it saves, and the ranker measures a wpack schedule first after the default.
  GraphBuilder b;
  ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {128, 768}});
  ValueId w = b.AddParamWithData("w", Tensor(TensorType{DType::kFloat32, {3072, 768}}));
  b.SetOutputs({b.AddNode("nn.dense", {x, w}, Attrs{})}, false);
  const Graph g = std::move(b).Build();
  const FusedGroup group = WholeGroup(g);
  const RooflineTarget target;
  for (int threads : {1, 2}) {
    EXPECT_LT(EstimateSchedule(g, group, Knobs({{"wpack", 1}}), target, threads),
              EstimateSchedule(g, group, Schedule{}, target, threads));
    const std::vector<Schedule> ranked =
        ScheduleRanker(target, threads).Rank(g, group, ScheduleSpace(g, group, threads));
    ASSERT_GE(ranked.size(), 2u);
    EXPECT_EQ(ranked[0].Get("wpack", 0), 0) << "the default packs in the call";
    EXPECT_EQ(ranked[1].Get("wpack", 0), 1) << ranked[1].ToString();
  }
}

TEST(ScheduleRoofline, AShortTileOverAPanelPastL1IsEstimatedSlower) {
  // BERT's FFN-2 dense (K = 3072): a 64 x 768 or 128 x 768 B panel lives in L2, and a 2-row tile
  // reads 512 bytes of it per k step for 16 FMAs, twice what L2 feeds (measured: 42-45% of the
  // FMA peak against 92-97% for 4 x 64). With a panel that fits L1 (K = 64) both are alike.
  const RooflineTarget target;
  for (int64_t k : {3072, 64}) {
    Graph g = ParseRelay(fmt::format("fn (%x: Tensor[(128, {0}), float32], %w: Tensor[(768, {0}), "
                                     "float32]) {{ nn.dense(%x, %w) }}",
                                     k),
                         "t");
    const FusedGroup group = WholeGroup(g);
    const double wide = EstimateSchedule(g, group, Knobs({{"mr", 2}, {"nr", 128}}), target, 1);
    const double square = EstimateSchedule(g, group, Knobs({{"mr", 4}, {"nr", 64}}), target, 1);
    if (k == 3072) {
      EXPECT_GT(wide, square * 1.5);
    } else {
      EXPECT_NEAR(wide, square, square * 0.05);
    }
  }
}

TEST(ScheduleRoofline, ATileWithFewerLoadsAnFmaRanksFirstAmongTilesOtherwiseAlike) {
  // BERT's FFN-1 dense at S = 384: M is a multiple of every tile height, so no tile wastes rows.
  // 6 x 64 loads 10 vectors for 24 FMAs, 4 x 64 8 for 16, 8 x 32 10 for 16 (measured on the Intel
  // Xeon: 82.7%, 77.2% and 79.8% of the FMA peak, weights packed once).
  Graph g = Dense(384, 768, 3072);
  const FusedGroup group = WholeGroup(g);
  const RooflineTarget target;
  auto estimate = [&](int mr, int nr) {
    return EstimateSchedule(g, group, Knobs({{"mr", mr}, {"nr", nr}}), target, 1);
  };
  EXPECT_LT(estimate(6, 64), estimate(4, 64));
  EXPECT_LT(estimate(4, 64), estimate(8, 32));
  const std::vector<Schedule> ranked =
      ScheduleRanker(target, 1).Rank(g, group, ScheduleSpace(g, group, 1));
  ASSERT_GE(ranked.size(), 2u);
  EXPECT_EQ(ranked[1].Get("mr", 0), 6) << ranked[1].ToString();
}

TEST(ScheduleRoofline, SerialWinsForATinyKernelAndLosesForALargeOne) {
  const RooflineTarget target;
  Graph tiny = ParseRelay("fn (%x: Tensor[(4, 8), float32]) { exp(%x) }", "t");
  Graph large = ParseRelay("fn (%x: Tensor[(512, 2048), float32]) { exp(%x) }", "t");
  const Schedule serial = Knobs({{"parallel", 0}});
  EXPECT_LT(EstimateSchedule(tiny, WholeGroup(tiny), serial, target, 2),
            EstimateSchedule(tiny, WholeGroup(tiny), Schedule{}, target, 2));
  EXPECT_GT(EstimateSchedule(large, WholeGroup(large), serial, target, 2),
            EstimateSchedule(large, WholeGroup(large), Schedule{}, target, 2));
}

TEST(ScheduleRanking, TheDefaultStaysFirstAndTheOrderIsAPermutation) {
  Graph g = ParseRelay("fn (%x: Tensor[(4, 8), float32]) { exp(%x) }", "t");
  const FusedGroup group = WholeGroup(g);
  std::vector<Schedule> space = ScheduleSpace(g, group, 2);
  ScheduleRanker ranker(RooflineTarget{}, 2);
  std::vector<Schedule> ranked = ranker.Rank(g, group, space);
  ASSERT_EQ(ranked.size(), space.size());
  EXPECT_EQ(ranked[0], Schedule{});
  for (const Schedule& s : space) EXPECT_EQ(std::count(ranked.begin(), ranked.end(), s), 1);
  // A tiny kernel at two threads: a serial variant is ranked right after the default.
  EXPECT_EQ(ranked[1].Get("parallel", 1), 0);
  EXPECT_EQ(ranker.name(), "roofline");
}

TEST(ScheduleFeatures, EveryTemplateAndKnobHasItsOwnFeature) {
  Graph dense = Dense(64, 768, 768);
  const FusedGroup d = WholeGroup(dense);
  const std::vector<float> plain = ScheduleFeatures(dense, d, Schedule{}, 1);
  const std::vector<float> swapped =
      ScheduleFeatures(dense, d, Knobs({{"mc", 768}, {"mr", 6}, {"swap", 1}}), 1);
  ASSERT_EQ(plain.size(), static_cast<size_t>(kScheduleFeatureCount));
  EXPECT_EQ(FeatureTemplate(plain), static_cast<int>(GroupTemplate::kMatmul));
  EXPECT_EQ(plain[kFeatureSwap], 0.0f);
  EXPECT_EQ(swapped[kFeatureSwap], 1.0f) << "swap";
  EXPECT_EQ(ScheduleFeatures(dense, d, Knobs({{"wpack", 1}}), 1)[kFeatureWpack], 1.0f) << "wpack";
  // The attention template has its own place, and the node count is not written over it.
  Graph attention = ParseRelay(
      R"(fn (%q: Tensor[(4, 32, 16), float32], %k: Tensor[(4, 48, 16), float32],
    %vt: Tensor[(4, 16, 48), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.25f);
  %2 = nn.softmax(%1, axis=-1);
  nn.batch_matmul(%2, %vt)
})",
      "attention.relay");
  const FusedGroup a = WholeGroup(attention);
  ASSERT_TRUE(a.Attention());
  const std::vector<float> f = ScheduleFeatures(attention, a, Knobs({{"rows", 2}}), 1);
  EXPECT_EQ(FeatureTemplate(f), static_cast<int>(GroupTemplate::kAttention));
  EXPECT_EQ(f[kFeatureNodes], 4.0f) << "four nodes";
  EXPECT_EQ(f[kFeatureRows], 2.0f) << "rows";
  EXPECT_EQ(f[kFeatureSoftmaxForm], 2.0f) << "two-pass, blocked";
  EXPECT_EQ(ScheduleFeatures(attention, a, Knobs({{"online", 1}}), 1)[kFeatureSoftmaxForm], 1.0f)
      << "online";
  EXPECT_EQ(ScheduleFeatures(attention, a, Knobs({{"blocked", 0}}), 1)[kFeatureSoftmaxForm], 0.0f)
      << "two-pass by rows";
}

// ---- rank quality and the learned model ----

ScheduleSample Sample(const std::string& group, double us, double roofline, float knob) {
  ScheduleSample s;
  s.group = group;
  s.median_us = us;
  s.roofline_us = roofline;
  s.features.assign(8, 0.0f);
  s.features[0] = knob;
  s.features[1] = static_cast<float>(std::hash<std::string>{}(group) % 97);
  return s;
}

TEST(RankQuality, ConcordantDiscordantAndNoisePairs) {
  std::vector<ScheduleSample> s = {Sample("g", 10, 0, 0), Sample("g", 20, 0, 0),
                                   Sample("g", 40, 0, 0), Sample("g", 40.5, 0, 0)};
  RankQuality same = MeasureRankQuality(s, {1, 2, 3, 4});
  EXPECT_EQ(same.groups, 1);
  EXPECT_EQ(same.pairs, 5) << "40 against 40.5 is within the noise floor";
  EXPECT_DOUBLE_EQ(same.kendall, 1.0);
  EXPECT_NEAR(same.spearman, 1.0, 1e-9);
  RankQuality reversed = MeasureRankQuality(s, {4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(reversed.kendall, -1.0);
}

TEST(LearnedScheduleModel, LearnsAnOrderTheRooflineMissesAndIsEvaluatedOnHeldOutGroups) {
  // In every group the time falls with feature 0 (a knob); the "roofline" says the opposite.
  std::vector<ScheduleSample> samples;
  for (int g = 0; g < 60; ++g)
    for (int k = 0; k < 5; ++k) {
      const double us = (100.0 + g) / (1 + k);
      samples.push_back(Sample("group" + std::to_string(g), us, 1.0 / us, static_cast<float>(k)));
    }
  const ScheduleModelEvaluation e = EvaluateScheduleModels(samples);
  EXPECT_TRUE(e.trained);
  EXPECT_GT(e.heldout_groups, 5);
  EXPECT_GT(e.train_groups, e.heldout_groups);
  EXPECT_EQ(e.train_samples + e.heldout_samples, static_cast<int>(samples.size()));
  EXPECT_GT(e.learned.kendall, 0.9);
  EXPECT_LT(e.roofline.kendall, -0.9);
  EXPECT_TRUE(e.learned_better());

  std::vector<ScheduleSample> few(samples.begin(), samples.begin() + 5 * 4);
  EXPECT_EQ(LearnedScheduleModel::Train(few), nullptr) << "too few groups to learn from";
}

// Every schedule of dense groups with `m` rows (nine shapes), timed by the roofline with a
// deterministic ripple: real features, times the model can learn from.
std::vector<ScheduleSample> DenseSamples(int m) {
  std::vector<ScheduleSample> samples;
  for (int k : {256, 512, 768})
    for (int n : {256, 768, 1024}) {
      Graph g = Dense(m, k, n);
      const FusedGroup group = WholeGroup(g);
      const std::vector<Schedule> space = ScheduleSpace(g, group, 1);
      for (size_t i = 0; i < space.size(); ++i) {
        ScheduleSample s;
        s.group = fmt::format("dense {}x{}x{}", m, k, n);
        s.features = ScheduleFeatures(g, group, space[i], 1);
        s.roofline_us = EstimateSchedule(g, group, space[i], RooflineTarget{}, 1);
        s.median_us = s.roofline_us * (1.0 + 0.15 * static_cast<double>(i % 3));
        samples.push_back(std::move(s));
      }
    }
  return samples;
}

TEST(LearnedScheduleModel, KnowsOnlyTheKnobValuesItTrainedOn) {
  // Trained at 8 rows, where swap=1 is not offered: at 64 rows every swapped schedule is one it
  // has no evidence about; the default it has seen.
  const std::shared_ptr<const LearnedScheduleModel> model =
      LearnedScheduleModel::Train(DenseSamples(8));
  ASSERT_NE(model, nullptr);
  Graph g = Dense(64, 768, 768);
  const FusedGroup group = WholeGroup(g);
  int swapped = 0;
  for (const Schedule& s : ScheduleSpace(g, group, 1))
    if (s.Get("swap", 0) == 1) {
      ++swapped;
      EXPECT_FALSE(model->Knows(ScheduleFeatures(g, group, s, 1))) << s.ToString();
    }
  EXPECT_GE(swapped, 4);
  EXPECT_TRUE(model->Knows(ScheduleFeatures(g, group, Schedule{}, 1)));
  // Trained where swap was measured too, it knows them.
  std::vector<ScheduleSample> both = DenseSamples(8);
  for (ScheduleSample& s : DenseSamples(64)) both.push_back(std::move(s));
  const auto wider = LearnedScheduleModel::Train(both);
  ASSERT_NE(wider, nullptr);
  EXPECT_TRUE(
      wider->Knows(ScheduleFeatures(g, group, Knobs({{"mc", 768}, {"mr", 6}, {"swap", 1}}), 1)));
}

TEST(ScheduleRanking, SchedulesTheModelNeverSawAlternateWithItsOrderFromTheFirst) {
  std::shared_ptr<const LearnedScheduleModel> model = LearnedScheduleModel::Train(DenseSamples(8));
  ASSERT_NE(model, nullptr);
  Graph g = Dense(64, 768, 768);
  const FusedGroup group = WholeGroup(g);
  const std::vector<Schedule> space = ScheduleSpace(g, group, 1);
  const std::vector<Schedule> ranked =
      ScheduleRanker::WithModel(model, RooflineTarget{}, 1).Rank(g, group, space);
  ASSERT_EQ(ranked.size(), space.size());
  EXPECT_EQ(ranked[0], space[0]) << "the default first";
  for (const Schedule& s : space) EXPECT_EQ(std::count(ranked.begin(), ranked.end(), s), 1);
  // The unseen ones in the roofline's order, the others in the model's.
  std::vector<Schedule> unseen, known;
  for (size_t i = 1; i < space.size(); ++i)
    (model->Knows(ScheduleFeatures(g, group, space[i], 1)) ? known : unseen).push_back(space[i]);
  ASSERT_GE(unseen.size(), 2u);
  ASSERT_GE(known.size(), 2u);
  auto roof = [&](const Schedule& s) { return EstimateSchedule(g, group, s, RooflineTarget{}, 1); };
  std::stable_sort(unseen.begin(), unseen.end(),
                   [&](const Schedule& a, const Schedule& b) { return roof(a) < roof(b); });
  std::vector<double> scores;
  for (const Schedule& s : known)
    scores.push_back(model->Score({ScheduleFeatures(g, group, s, 1)})[0]);
  std::vector<size_t> by_model(known.size());
  std::iota(by_model.begin(), by_model.end(), 0);
  std::stable_sort(by_model.begin(), by_model.end(),
                   [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  EXPECT_EQ(ranked[1], unseen[0]);
  EXPECT_EQ(ranked[2], known[by_model[0]]);
  EXPECT_EQ(ranked[3], unseen[1]);
  EXPECT_EQ(ranked[4], known[by_model[1]]);
}

// ---- the successive-halving step ----

TEST(ScheduleSearch, NeighboursOfTheBetterHalfComeFirst) {
  GroupWork gw;
  gw.schedules = {Schedule{}, Knobs({{"vector", 8}})};
  gw.median_us = {10, 5};
  gw.rel_error = {0.01, 0.01};
  gw.known = {true, true};
  gw.candidates = {Knobs({{"parallel", 0}}), Knobs({{"parallel", 0}, {"vector", 8}}),
                   Knobs({{"vector", 4}})};
  // The better half is vector=8 alone: its neighbours (one knob away) before the next ranked.
  std::vector<Schedule> next = NextSchedules(gw, 2);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0], Knobs({{"parallel", 0}, {"vector", 8}}));
  EXPECT_EQ(next[1], Knobs({{"vector", 4}}));
  EXPECT_EQ(gw.candidates, std::vector<Schedule>{Knobs({{"parallel", 0}})});
}

TEST(ScheduleSearch, ATileChangeIsOneStepThoughItsBlocksFollow) {
  const Schedule four = Knobs({{"kc", 768}, {"mc", 256}, {"mr", 4}, {"nc", 64}, {"nr", 64}});
  // mr 6 rounds mc up to 258; mr 8 with nr 32 moves both blocks: each is one tile change.
  EXPECT_EQ(
      ScheduleDistance(four, Knobs({{"kc", 768}, {"mc", 258}, {"mr", 6}, {"nc", 64}, {"nr", 64}})),
      1);
  EXPECT_EQ(
      ScheduleDistance(four, Knobs({{"kc", 768}, {"mc", 256}, {"mr", 8}, {"nc", 32}, {"nr", 32}})),
      1);
  // A block that changes with the tile's other dimension fixed still counts.
  EXPECT_EQ(
      ScheduleDistance(four, Knobs({{"kc", 768}, {"mc", 258}, {"mr", 6}, {"nc", 128}, {"nr", 64}})),
      2);
  EXPECT_EQ(
      ScheduleDistance(four, Knobs({{"kc", 512}, {"mc", 256}, {"mr", 4}, {"nc", 64}, {"nr", 64}})),
      1);
  EXPECT_EQ(ScheduleDistance(four, four), 0);
  EXPECT_EQ(ScheduleDistance(Schedule{}, Knobs({{"wpack", 1}})), 1) << "spelled by one only";
  EXPECT_EQ(ScheduleDistance(Knobs({{"vector", 8}}), Knobs({{"parallel", 0}, {"vector", 4}})), 2);
}

TEST(ScheduleSearch, TheSearchStepsToAnotherRegisterTile) {
  // BERT's FFN 2 at S = 256 (x [256, 3072], weights [768, 3072]): from the default tile, the next
  // schedules to measure include another register tile of the space, its blocks resolved.
  Graph g = Dense(256, 3072, 768);
  const FusedGroup group = WholeGroup(g);
  const std::vector<Schedule> space = ScheduleSpace(g, group, 1);
  GroupWork gw;
  gw.schedules = {space[0]};
  gw.median_us = {100};
  gw.rel_error = {0.01};
  gw.known = {true};
  // The candidates in an order that puts every tile change last, as a ranker might.
  std::vector<Schedule> same_tile, other_tile;
  for (size_t i = 1; i < space.size(); ++i)
    (space[i].Get("mr", 0) == space[0].Get("mr", 0) &&
             space[i].Get("nr", 0) == space[0].Get("nr", 0)
         ? same_tile
         : other_tile)
        .push_back(space[i]);
  ASSERT_FALSE(other_tile.empty());
  gw.candidates = same_tile;
  gw.candidates.insert(gw.candidates.end(), other_tile.begin(), other_tile.end());
  bool tile_changed = false;
  for (const Schedule& s : NextSchedules(gw, static_cast<int>(space.size()))) {
    if (ScheduleDistance(s, space[0]) != 1) break;  // the neighbours come first
    tile_changed |= s.Get("mr", 0) != space[0].Get("mr", 0);
  }
  EXPECT_TRUE(tile_changed) << "no neighbour of the default has another mr";
}

// ---- the search in the tuner ----

// Times by bytes moved; a kernel with vector=4 runs twice as fast (so the search must find it:
// the roofline ranks it last among the vector widths).
struct KnobBackend : ModelBackend {
  KnobBackend() {
    adjust = [](const MeasureJob&, const Plan& plan, PlanResult& t) {
      t.median_us = 0;
      for (size_t i = 0; i < plan.groups.size(); ++i) {
        if (plan.groups[i].schedule.Get("vector", 16) == 4) t.kernel_us[i] *= 0.5;
        t.median_us += t.kernel_us[i];
      }
      t.repeat = 5;
    };
  }
};

class ScheduleSearchTune : public TempStoreTest {};

const char* kChain = R"(fn (%x: Tensor[(64, 64), float32]) {
  %0 = exp(%x);
  negative(%0)
})";

int CountSchedules(db::Cache& store, const char* knob, int64_t value) {
  int n = 0;
  for (const db::MeasurementRecord& m : store.ListMeasurements())
    n += Schedule::Parse(m.key.schedule).Get(knob, -1) == value;
  return n;
}

TEST_F(ScheduleSearchTune, TheSearchFindsAFasterScheduleBeyondTheFirstRankedAndStoresIt) {
  Graph g = ParseRelay(kChain, "chain.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  KnobBackend backend;
  TuneOptions options;
  options.search.schedule_budget = 0;
  TuneReport without = Tune(g, options, store, backend);
  EXPECT_EQ(CountSchedules(store, "vector", 4), 0) << "the first two ranked: default, vector=8";
  for (const PlanGroup& pg : without.regions[0].plan) EXPECT_NE(pg.schedule.Get("vector", 16), 4);

  store.DeleteBestPlans({});
  options.search.schedule_budget = 12;
  TuneReport with = Tune(g, options, store, backend);
  EXPECT_GT(CountSchedules(store, "vector", 4), 0);
  ASSERT_FALSE(with.regions[0].plan.empty());
  for (const PlanGroup& pg : with.regions[0].plan) EXPECT_EQ(pg.schedule.Get("vector", 16), 4);
  EXPECT_LT(with.regions[0].tuned_us, without.regions[0].tuned_us * 0.6);
  EXPECT_LE(with.regions[0].measured, 3 * 2 + 12) << "the budget bounds the search";

  // Every schedule measured is reused: the same search again measures no group.
  store.DeleteBestPlans({});
  const int before = backend.plans_run;
  TuneReport again = Tune(g, options, store, backend);
  EXPECT_EQ(again.candidates_measured, 0);
  EXPECT_GT(again.measurements_reused, 0);
  EXPECT_EQ(again.regions[0].plan.size(), with.regions[0].plan.size());
  // The searched schedule's duel against the default (5 rounds of 2) and validation (one region,
  // the whole graph: the searched schedule, greedy and unfused on the defaults), nothing else.
  EXPECT_LE(backend.plans_run - before, 2 * 5 + 3 * 5) << "the duel and validation only";
}

TEST_F(ScheduleSearchTune, TheBudgetGoesToTheGroupsOfTheBestCoverFirst) {
  // Each op alone runs 5x slower than the bytes model says: the heaviest groups are the two no
  // cover uses, and the best cover is the fused chain. A budget of two schedules reaches one group.
  Graph g = ParseRelay(kChain, "chain.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  KnobBackend backend;
  auto vector4 = backend.adjust;
  backend.adjust = [vector4](const MeasureJob& job, const Plan& plan, PlanResult& t) {
    vector4(job, plan, t);
    t.median_us = 0;
    for (size_t i = 0; i < plan.groups.size(); ++i) {
      if (plan.groups[i].nodes.size() == 1) t.kernel_us[i] *= 5;
      t.median_us += t.kernel_us[i];
    }
  };
  TuneOptions options;
  options.search.schedule_budget = 2;
  TuneReport report = Tune(g, options, store, backend);
  ASSERT_EQ(report.regions[0].plan.size(), 1u) << "the fused chain is the cover";
  const std::vector<ValueId> chain = report.regions[0].plan[0].nodes;
  const std::string fused = Signature(g, chain);
  int fused_measured = 0, alone_measured = 0;
  for (const db::MeasurementRecord& m : store.ListMeasurements())
    (m.key.group_signature == fused ? fused_measured : alone_measured)++;
  EXPECT_EQ(fused_measured, 2 + 2) << "the two planned, and the budget's two";
  EXPECT_EQ(alone_measured, 2 * 2) << "each op alone: the two planned only";
}

TEST_F(ScheduleSearchTune, ARankerFromTheStoreTrainsOnTheFirstOrderAskedForAndOnlyOnce) {
  db::Database database(path_.string());
  db::Cache store(database);
  KnobBackend backend;
  Tune(ParseRelay(kChain, "chain.relay"), {}, store, backend);  // measurements to train on
  const TuneCache cache(store, backend.TargetFingerprint(), 1);
  const ScheduleRanker ranker = ScheduleRanker::FromStore(cache, RooflineTarget{}, 1);
  const ScheduleRanker copy = ranker;  // as PlanMeasurements passes it around
  EXPECT_FALSE(ranker.trained());
  EXPECT_EQ(ranker.name(), "");

  Graph g = ParseRelay("fn (%x: Tensor[(4, 8), float32]) { exp(%x) }", "t");
  const FusedGroup group = WholeGroup(g);
  std::vector<Schedule> space = ScheduleSpace(g, group, 1);
  ASSERT_GE(space.size(), 3u);
  const std::vector<Schedule> two(space.begin(), space.begin() + 2);
  EXPECT_EQ(ranker.Rank(g, group, two), two);
  EXPECT_FALSE(ranker.trained()) << "two schedules have no order to learn";

  const std::vector<Schedule> ranked = copy.Rank(g, group, space);
  EXPECT_TRUE(ranker.trained()) << "the copy trained for both";
  EXPECT_GT(ranker.evaluation().train_samples + ranker.evaluation().heldout_samples, 0);
  // Too few groups in this store to learn from: the roofline's order, as an eager ranker gave.
  EXPECT_EQ(ranker.name(), "roofline");
  EXPECT_EQ(ranked, ScheduleRanker(RooflineTarget{}, 1).Rank(g, group, space));
}

}  // namespace
}  // namespace fusetune
