// Binding is in no key (docs/architecture.md, "Weights packed once"): a region's stored plan is
// found by signature whether its weights were bound or not. A tune whose region has constant B
// (its space offers wpack) refuses a plan stored by a tune that offered none, searches the region
// again and stores the new plan flagged; lookups, and tunes without weights, take any stored plan.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "ir/bind_params.h"
#include "ir/text/relay_parser.h"
#include "model_backend.h"
#include "server/stored_plans.h"
#include "server/tuner.h"
#include "temp_store_test.h"

namespace fusetune {
namespace {

const char* kDenseBias = R"(fn (%x: Tensor[(64, 256), float32], %w: Tensor[(256, 256), float32],
    %b: Tensor[(256,), float32]) {
  %0 = nn.dense(%x, %w);
  add(%0, %b)
})";

// How many of the jobs the backend saw time a group with weights packed once.
int WpackJobs(const ModelBackend& backend) {
  int n = 0;
  for (const MeasureJob& job : backend.seen)
    for (const JobPlan& plan : job.plans)
      if (plan.json.find("wpack=1") != std::string::npos) {
        ++n;
        break;
      }
  return n;
}

// The dense with bias at M rows, its weights bound or not: one family over M.
Graph DenseBiasAt(int64_t m, bool bound) {
  std::string text = kDenseBias;
  text.replace(text.find("(64, 256)"), 9, "(" + std::to_string(m) + ", 256)");
  Graph g = ParseRelay(text, "dense_bias.relay");
  if (!bound) return g;
  return BindParams(g, {{"w", Tensor::Random(TensorType{DType::kFloat32, {256, 256}}, 1)},
                        {"b", Tensor::Random(TensorType{DType::kFloat32, {256}}, 2)}});
}

class BoundWeights : public TempStoreTest {
 protected:
  TuneReport TuneInto(const Graph& graph, ModelBackend& backend,
                      WarmStart warm_start = WarmStart::kSearch) {
    db::Database database(path_.string());
    db::Cache store(database);
    TuneOptions options;
    options.warm_start = warm_start;
    return Tune(graph, options, store, backend);
  }
  std::optional<db::BestPlanRecord> Stored(const std::string& signature) {
    db::Database database(path_.string());
    db::Cache store(database);
    std::vector<db::BestPlanRecord> plans = store.ListBestPlans();
    for (db::BestPlanRecord& p : plans)
      if (p.key.region_signature == signature) return p;
    return std::nullopt;
  }
  std::vector<db::ReplacedPlanRecord> Replaced() {
    db::Database database(path_.string());
    db::Cache store(database);
    return store.ListReplacedPlans();
  }
  Graph unbound_ = ParseRelay(kDenseBias, "dense_bias.relay");
  Graph bound_ =
      BindParams(unbound_, {{"w", Tensor::Random(TensorType{DType::kFloat32, {256, 256}}, 1)},
                            {"b", Tensor::Random(TensorType{DType::kFloat32, {256}}, 2)}});
};

TEST_F(BoundWeights, ATuneWithBoundWeightsSearchesARegionStoredWithoutThem) {
  ModelBackend first;
  const TuneReport plain = TuneInto(unbound_, first);
  ASSERT_EQ(plain.regions.size(), 1u);
  const std::string signature = plain.regions[0].signature;
  EXPECT_FALSE(plain.regions[0].cached);
  EXPECT_EQ(plain.regions[0].searched_again, "");
  EXPECT_EQ(WpackJobs(first), 0) << "a weight that is an input cannot be packed ahead";
  ASSERT_TRUE(Stored(signature));
  EXPECT_FALSE(Stored(signature)->weights_bound);

  // The same graph with its weights bound: same signature, but the stored plan never had wpack
  // in its space, so the region is searched again and the groups measured before are reused.
  ModelBackend second;
  const TuneReport bound = TuneInto(bound_, second);
  ASSERT_EQ(bound.regions.size(), 1u);
  EXPECT_EQ(bound.regions[0].signature, signature);
  EXPECT_FALSE(bound.regions[0].cached);
  EXPECT_EQ(bound.regions[0].searched_again, kSearchedWithBoundWeights);
  EXPECT_GT(WpackJobs(second), 0) << "the search measured weights packed once";
  EXPECT_GT(bound.measurements_reused, 0) << "the first tune's measurements count";
  const auto json = nlohmann::json::parse(TuneReportToJson(bound_, "dense_bias.relay", bound));
  EXPECT_EQ(json["regions"][0]["searched_again"], kSearchedWithBoundWeights);
  ASSERT_TRUE(Stored(signature));
  EXPECT_TRUE(Stored(signature)->weights_bound);
  const std::vector<db::ReplacedPlanRecord> history = Replaced();
  ASSERT_EQ(history.size(), 1u) << "the plan tuned without weights is kept in the history";
  EXPECT_FALSE(history[0].plan.weights_bound);
  EXPECT_EQ(history[0].reason, db::kReplacedByRetune);

  // Bound again: the stored plan offered wpack, and answers without a job.
  ModelBackend third;
  const TuneReport again = TuneInto(bound_, third);
  EXPECT_TRUE(again.regions[0].cached);
  EXPECT_EQ(again.regions[0].searched_again, "");
  EXPECT_EQ(third.jobs_run, 0);
  const auto cached_json =
      nlohmann::json::parse(TuneReportToJson(bound_, "dense_bias.relay", again));
  EXPECT_TRUE(cached_json["regions"][0]["searched_again"].is_null());

  // Without weights, a plan stored with them answers (a wpack kernel packs B per call).
  ModelBackend fourth;
  const TuneReport unbound_again = TuneInto(unbound_, fourth);
  EXPECT_TRUE(unbound_again.regions[0].cached);
  EXPECT_EQ(fourth.jobs_run, 0);
  EXPECT_EQ(Replaced().size(), 1u);
}

TEST_F(BoundWeights, ALookupTakesAPlanStoredWithoutWeightsWhateverItsWeights) {
  ModelBackend backend;
  TuneInto(unbound_, backend);
  db::Database database(path_.string());
  db::Cache store(database);
  for (const Graph* graph : {&unbound_, &bound_}) {
    std::vector<std::string> missing;
    const TuneReport answer =
        LookupCached(*graph, SearchOptions{}, store, backend.TargetFingerprint(), &missing);
    EXPECT_TRUE(missing.empty());
    ASSERT_EQ(answer.regions.size(), 1u);
    EXPECT_TRUE(answer.regions[0].cached);
    EXPECT_EQ(answer.regions[0].searched_again, "");
  }
}

TEST_F(BoundWeights, ARegionWithoutConstantWeightsIsAnsweredByAnUnflaggedPlan) {
  // Only the bias is bound: the dense's B is an input, the space offers no wpack, and the plan
  // stored without weights answers.
  const Graph bias_only =
      BindParams(unbound_, {{"b", Tensor::Random(TensorType{DType::kFloat32, {256}}, 2)}});
  ModelBackend first, second;
  TuneInto(unbound_, first);
  const TuneReport report = TuneInto(bias_only, second);
  EXPECT_TRUE(report.regions[0].cached);
  EXPECT_EQ(report.regions[0].searched_again, "");
  EXPECT_EQ(second.jobs_run, 0);
}

// A warm-only tune searches nothing: its plan offered wpack here only if the member it came from
// did. From an unflagged member it is stored unflagged, and the next full tune with weights
// searches it (from the member's size, never from the plan it refuses).
TEST_F(BoundWeights, AWarmOnlyAnswerIsFlaggedOnlyWhenItsMemberWas) {
  ModelBackend member_backend;
  TuneInto(DenseBiasAt(64, /*bound=*/false), member_backend);
  ModelBackend warm_backend;
  const TuneReport warm = TuneInto(DenseBiasAt(128, true), warm_backend, WarmStart::kOnly);
  ASSERT_EQ(warm.regions.size(), 1u);
  ASSERT_TRUE(warm.regions[0].warm_start) << "the M=64 plan is a member of the family";
  EXPECT_FALSE(warm.regions[0].warm_start->searched);
  ASSERT_TRUE(Stored(warm.regions[0].signature));
  EXPECT_FALSE(Stored(warm.regions[0].signature)->weights_bound);

  ModelBackend full_backend;
  const TuneReport full = TuneInto(DenseBiasAt(128, true), full_backend);
  EXPECT_EQ(full.regions[0].searched_again, kSearchedWithBoundWeights);
  ASSERT_TRUE(full.regions[0].warm_start);
  EXPECT_NE(full.regions[0].warm_start->from.find("=64"), std::string::npos)
      << "warm-started from M=64, not from its own refused plan: "
      << full.regions[0].warm_start->from;
  EXPECT_GT(WpackJobs(full_backend), 0);
  EXPECT_TRUE(Stored(full.regions[0].signature)->weights_bound);

  // Now the family has a flagged member: a warm-only tune with weights at another size is
  // flagged too.
  ModelBackend flagged_backend;
  const TuneReport flagged = TuneInto(DenseBiasAt(256, true), flagged_backend, WarmStart::kOnly);
  ASSERT_TRUE(flagged.regions[0].warm_start);
  EXPECT_NE(flagged.regions[0].warm_start->from.find("=128"), std::string::npos)
      << flagged.regions[0].warm_start->from;
  EXPECT_TRUE(Stored(flagged.regions[0].signature)->weights_bound);
}

}  // namespace
}  // namespace fusetune
