// Plans across sizes (ir/text/plan_transfer.h): members read back from their canonical text,
// ranked by nearness, and their plans moved onto another size of the region.
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "ir/text/plan_transfer.h"
#include "ir/text/signature.h"
#include "tests/text/text_test_util.h"

namespace fusetune {
namespace {

using testing::Parse;

std::string Bert(int seq) {
  std::ifstream in(std::string(FUSETUNE_SOURCE_DIR) + "/examples/bert_layer_s128.relay");
  std::stringstream s;
  s << in.rdbuf();
  return std::regex_replace(s.str(), std::regex("\\b128\\b"), std::to_string(seq));
}

std::string Seed(int s) {
  return "fn (%x: Tensor[(12, " + std::to_string(s) + ", 64), float32], %y: Tensor[(12, " +
         std::to_string(s) + ", 64), float32], %z: Tensor[(12, " + std::to_string(s) + ", " +
         std::to_string(s) +
         "), float32]) {\n  %0 = nn.batch_matmul(%x, %y);\n  %1 = ones_like(%0);\n  where(%z, "
         "%0, %1)\n}";
}

std::vector<ValueId> AllNodes(const Graph& g) {
  std::vector<ValueId> ids;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (g.value(v).kind == ValueKind::kNode) ids.push_back(v);
  return ids;
}

// A plan of `g` as the store keeps it: positions in the canonical order of `nodes`.
std::vector<MemberGroup> Stored(const Graph& g, const std::vector<ValueId>& nodes,
                                const Plan& plan) {
  CanonicalForm canon = Canonicalize(g, nodes);
  std::vector<MemberGroup> out;
  for (const PlanGroup& pg : plan.groups) {
    MemberGroup mg;
    for (ValueId v : pg.nodes) {
      auto it = std::find(canon.nodes.begin(), canon.nodes.end(), v);
      mg.nodes.push_back(static_cast<int32_t>(it - canon.nodes.begin()));
    }
    mg.schedule = pg.schedule.ToString();
    out.push_back(mg);
  }
  return out;
}

std::string TransferError(const Graph& g, const FamilyForm& here, const FamilyMember& m,
                          const std::vector<MemberGroup>& groups) {
  try {
    TransferPlan(g, here, m, groups, 1);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(PlanTransfer, MemberReadFromItsCanonicalText) {
  Graph g = Parse(Bert(128));
  std::vector<ValueId> nodes = AllNodes(g);
  FamilyMember m = ReadFamilyMember(CanonicalText(g, nodes));
  FamilyForm f = CanonicalizeFamily(g, nodes);
  EXPECT_EQ(m.family.key, f.key);
  EXPECT_EQ(m.family.binding, f.binding);
  // family_position maps the canonical order onto the family order of the same nodes.
  CanonicalForm canon = Canonicalize(g, nodes);
  ASSERT_EQ(m.family_position.size(), canon.nodes.size());
  for (size_t i = 0; i < canon.nodes.size(); ++i)
    EXPECT_EQ(f.nodes[m.family_position[i]], canon.nodes[i]) << i;
}

TEST(PlanTransfer, GreedyPlanMovesOntoAnotherSequenceLength) {
  // Greedy fusion depends on structure only, so the 128 plan moved to 192 is the 192 plan.
  Graph g128 = Parse(Bert(128)), g192 = Parse(Bert(192));
  std::vector<ValueId> n128 = AllNodes(g128), n192 = AllNodes(g192);
  FamilyMember m = ReadFamilyMember(CanonicalText(g128, n128));
  std::vector<PlanGroup> moved = TransferPlan(g192, CanonicalizeFamily(g192, n192), m,
                                              Stored(g128, n128, GreedyPlan(g128)), 1);
  Plan want = GreedyPlan(g192);
  ASSERT_EQ(moved.size(), want.groups.size());
  std::vector<std::vector<ValueId>> got_groups, want_groups;
  for (const PlanGroup& g : moved) got_groups.push_back(g.nodes);
  for (const PlanGroup& g : want.groups) want_groups.push_back(g.nodes);
  std::sort(got_groups.begin(), got_groups.end());
  std::sort(want_groups.begin(), want_groups.end());
  EXPECT_EQ(got_groups, want_groups);
  Plan plan{"transferred", moved};
  SortGroupsTopologically(g192, plan);
  EXPECT_NO_THROW(ValidatePlan(g192, plan));
}

TEST(PlanTransfer, SchedulesAreAdaptedToTheNewSizes) {
  Graph g512 = Parse(Seed(512)), g192 = Parse(Seed(192));
  std::vector<ValueId> n512 = AllNodes(g512), n192 = AllNodes(g192);
  auto group512 = AnalyzeGroup(g512, n512);
  auto group192 = AnalyzeGroup(g192, n192);
  ASSERT_TRUE(group512 && group192);
  FamilyMember m = ReadFamilyMember(CanonicalText(g512, n512));
  FamilyForm here = CanonicalizeFamily(g192, n192);
  for (int threads : {1, 4}) {
    for (const Schedule& s : ScheduleSpace(g512, *group512, threads)) {
      std::vector<MemberGroup> stored = {{{0, 1, 2}, s.ToString()}};
      std::vector<PlanGroup> moved = TransferPlan(g192, here, m, stored, threads);
      ASSERT_EQ(moved.size(), 1u);
      EXPECT_EQ(moved[0].nodes, n192);
      EXPECT_EQ(moved[0].schedule, AdaptSchedule(g512, *group512, s, g192, *group192, threads));
      // Every knob spelled, and no block larger than the new problem (rounded up to the tile).
      const Schedule& got = moved[0].schedule;
      auto round_up = [](int64_t a, int64_t b) { return (a + b - 1) / b * b; };
      ASSERT_GT(got.Get("mr", 0), 0);
      ASSERT_GT(got.Get("nr", 0), 0);
      EXPECT_LE(got.Get("mc", 0), round_up(192, got.Get("mr", 0))) << got.ToString();
      EXPECT_LE(got.Get("nc", 0), round_up(192, got.Get("nr", 0))) << got.ToString();
      EXPECT_LE(got.Get("kc", 0), 64) << got.ToString();
    }
  }
}

TEST(PlanTransfer, RefusesAPlanThatDoesNotFit) {
  Graph g = Parse(Seed(256));
  std::vector<ValueId> nodes = AllNodes(g);
  FamilyForm here = CanonicalizeFamily(g, nodes);
  FamilyMember other =
      ReadFamilyMember(CanonicalText(Parse(Bert(128)), AllNodes(Parse(Bert(128)))));
  EXPECT_NE(TransferError(g, here, other, {}).find("is not the region's family"),
            std::string::npos);
  FamilyMember m = ReadFamilyMember(CanonicalText(Parse(Seed(128)), AllNodes(Parse(Seed(128)))));
  EXPECT_NE(TransferError(g, here, m, {{{0, 1}, ""}}).find("does not cover"), std::string::npos);
  // A node in two groups is recomputed by both, which these two cannot.
  EXPECT_NE(TransferError(g, here, m, {{{0, 1}, ""}, {{1, 2}, ""}})
                .find("recomputed, but no "
                      "member reads it"),
            std::string::npos);
  EXPECT_NE(TransferError(g, here, m, {{{0, 1, 7}, ""}}).find("names node 7"), std::string::npos);
  EXPECT_EQ(TransferError(g, here, m, {{{0}, ""}, {{1, 2}, ""}}), "");
}

TEST(PlanTransfer, MovesOntoASizeThatEqualsAnother) {
  // The seed at S=64 (= the head size) is another family than S=128, but keeps all of 128's
  // equalities: 128's plans move onto it, each group checked lowerable there.
  Graph g128 = Parse(Seed(128)), g64 = Parse(Seed(64));
  std::vector<ValueId> n128 = AllNodes(g128), n64 = AllNodes(g64);
  FamilyMember m = ReadFamilyMember(CanonicalText(g128, n128));
  FamilyForm here = CanonicalizeFamily(g64, n64);
  ASSERT_NE(here.key, m.family.key);
  const std::vector<MemberGroup> one = {{{0, 1, 2}, ""}};
  std::vector<PlanGroup> fused = TransferPlan(g64, here, m, one, 1);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].nodes, n64);
  auto group128 = AnalyzeGroup(g128, n128);
  auto group64 = AnalyzeGroup(g64, n64);
  ASSERT_TRUE(group128 && group64);
  for (const Schedule& s : ScheduleSpace(g128, *group128, 1)) {
    const std::vector<MemberGroup> stored = {{{0, 1, 2}, s.ToString()}};
    std::vector<PlanGroup> moved = TransferPlan(g64, here, m, stored, 1);
    EXPECT_EQ(moved[0].schedule, AdaptSchedule(g128, *group128, s, g64, *group64, 1));
  }
  // A member at 64 does not move onto 128: its equality s1 = s2 does not hold there.
  FamilyMember m64 = ReadFamilyMember(CanonicalText(g64, n64));
  EXPECT_NE(TransferError(g128, CanonicalizeFamily(g128, n128), m64, {{{0, 1, 2}, ""}})
                .find("is not the region's family"),
            std::string::npos);
  // BERT at S=64: every region of the layer takes S=128's greedy plan.
  Graph b128 = Parse(Bert(128)), b64 = Parse(Bert(64));
  FamilyMember bm = ReadFamilyMember(CanonicalText(b128, AllNodes(b128)));
  FamilyForm bhere = CanonicalizeFamily(b64, AllNodes(b64));
  ASSERT_NE(bhere.key, bm.family.key);
  std::vector<PlanGroup> bert =
      TransferPlan(b64, bhere, bm, Stored(b128, AllNodes(b128), GreedyPlan(b128)), 1);
  Plan plan{"transferred", bert};
  SortGroupsTopologically(b64, plan);
  EXPECT_NO_THROW(ValidatePlan(b64, plan));
}

TEST(PlanTransfer, NearestMemberByLogRatio) {
  // 192 is nearer 256 (x1.33) than 128 (x1.5); 150 nearer 128.
  std::vector<std::vector<int64_t>> members = {{12, 128, 64}, {12, 256, 64}, {12, 512, 64}};
  EXPECT_EQ(RankByNearness(std::vector<int64_t>{12, 192, 64}, members),
            (std::vector<size_t>{1, 0, 2}));
  EXPECT_EQ(RankByNearness(std::vector<int64_t>{12, 150, 64}, members)[0], 0u);
  EXPECT_EQ(RankByNearness(std::vector<int64_t>{12, 4096, 64}, members)[0], 2u);
  // Equally near (x2 either way): the larger member first, whatever the listing order.
  EXPECT_EQ(RankByNearness(std::vector<int64_t>{200}, {{400}, {100}}), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(RankByNearness(std::vector<int64_t>{200}, {{100}, {400}}), (std::vector<size_t>{1, 0}));
  // Every symbol counts.
  EXPECT_EQ(RankByNearness(std::vector<int64_t>{64, 64}, {{64, 512}, {128, 128}})[0], 1u);
  EXPECT_DOUBLE_EQ(BindingDistance(std::vector<int64_t>{2, 8}, std::vector<int64_t>{4, 4}),
                   2 * std::log(2.0));
  EXPECT_THROW(BindingDistance(std::vector<int64_t>{2}, std::vector<int64_t>{2, 3}), UserError);
  EXPECT_EQ(TransferSizesText(std::vector<int64_t>{12, 192, 64}, std::vector<int64_t>{12, 256, 64}),
            "s1=256 (here 192)");
}

}  // namespace
}  // namespace fusetune
