// The request policy: one answer per control, for a group, for a stored plan, for reuse and for
// storing. The tuner tests (tuner_test.cc) check the same controls end to end with a warm cache.
#include "server/request_policy.h"

#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "seed_graph.h"

namespace fusetune {
namespace {

std::string WhyNot(const RequestPolicy& p, std::vector<ValueId> nodes) {
  std::string why;
  EXPECT_FALSE(p.OneKernel(nodes, &why)) << "allowed";
  return why;
}

class RequestPolicyTest : public ::testing::Test {
 protected:
  Graph g = ParseRelay(kSeed, "seed.relay");
  ValueId n0 = *g.FindByName("0"), n1 = *g.FindByName("1"), n2 = *g.FindByName("2");
  std::vector<PlanGroup> fused = {{{n0, n1, n2}, {}}};
  std::vector<PlanGroup> unfused = {{{n0}, {}}, {{n1}, {}}, {{n2}, {}}};
};

TEST_F(RequestPolicyTest, TheDefaultRequestAllowsTheFusedSeedAndMayStoreIt) {
  RequestPolicy p(g, {});
  EXPECT_TRUE(p.OneKernel(std::vector<ValueId>{n0, n1, n2}));
  EXPECT_TRUE(p.Honours(fused));
  EXPECT_TRUE(p.MayReuse(fused));
  EXPECT_TRUE(p.MayStoreBestPlan());
}

TEST_F(RequestPolicyTest, EveryControlRefusesTheFusedGroupWithItsReason) {
  SearchOptions op, node, forbid, group, args;
  op.never_fuse_ops = {"where"};
  node.never_fuse_nodes = {"1"};
  forbid.forbidden_groups = {{"0", "1", "2"}};
  group.max_group_size = 2;
  args.max_kernel_args = 3;  // the fused seed reads x, y, z and writes one output: 4
  const std::vector<std::pair<SearchOptions, std::string>> cases = {
      {op, "%2 is a where, which the request never fuses"},
      {node, "the request never fuses %1"},
      {forbid, "the request forbids this group"},
      {group, "3 ops, more than the request's max group size 2"},
      {args, "4 kernel arguments, more than the request's max args 3"}};
  for (const auto& [options, reason] : cases) {
    RequestPolicy p(g, options);
    EXPECT_EQ(WhyNot(p, {n0, n1, n2}), reason);
    std::string why;
    EXPECT_FALSE(p.Honours(fused, &why)) << reason;
    EXPECT_EQ(why, "[%0 %1 %2]: " + reason);
    EXPECT_FALSE(p.MayReuse(fused)) << reason;
    // Single ops always may be kernels: the unfused plan honours every request.
    EXPECT_TRUE(p.Honours(unfused)) << reason;
    EXPECT_TRUE(p.MayReuse(unfused)) << reason;
    EXPECT_FALSE(p.MayStoreBestPlan()) << reason << ": a narrower space's plan is not the best";
  }
}

TEST_F(RequestPolicyTest, ForbiddingOneGroupLeavesTheOthers) {
  SearchOptions forbid;
  forbid.forbidden_groups = {{"1", "2"}};
  RequestPolicy p(g, forbid);
  EXPECT_FALSE(p.OneKernel(std::vector<ValueId>{n1, n2}));
  EXPECT_TRUE(p.OneKernel(std::vector<ValueId>{n0, n1, n2}));
  EXPECT_TRUE(p.MayReuse(fused)) << "the stored best honours the request, so it is its best too";
}

TEST_F(RequestPolicyTest, AWiderRequestDoesNotReuseTheDefaultSpacesPlan) {
  SearchOptions wider;
  wider.max_group_size = 16;
  RequestPolicy p(g, wider);
  EXPECT_TRUE(p.Honours(fused));
  std::string why;
  EXPECT_FALSE(p.MayReuse(fused, &why));
  EXPECT_NE(why.find("wider"), std::string::npos) << why;
  EXPECT_FALSE(p.MayStoreBestPlan());
}

TEST_F(RequestPolicyTest, BudgetSchedulesRegionSizeAndThreadsKeepTheDefaultSpace) {
  SearchOptions o;
  o.budget = 3;
  o.schedules_per_group = 1;
  o.max_region_nodes = 2;
  o.threads = 4;
  RequestPolicy p(g, o);
  EXPECT_TRUE(p.MayStoreBestPlan());
  EXPECT_TRUE(p.MayReuse(fused));
}

TEST_F(RequestPolicyTest, LegalityComesFromAnalyzeGroup) {
  RequestPolicy p(g, {});
  // {%0, %2} without %1: a path leaves the group through %1 and re-enters.
  EXPECT_NE(WhyNot(p, {n0, n2}).find("not convex"), std::string::npos);
}

TEST_F(RequestPolicyTest, NamesOfControls) {
  EXPECT_EQ(ControlNodeName(g, "%1"), "1");
  EXPECT_EQ(ControlNodeName(g, "2"), "2");
  EXPECT_EQ(ControlNodeName(g, "%9"), std::nullopt);
  EXPECT_EQ(ControlNodeName(g, "%x"), std::nullopt) << "a parameter is not a node";
  EXPECT_EQ(ControlOpProblem("exp"), "");
  EXPECT_EQ(ControlOpProblem("expp"), "unknown operator 'expp'");
}

}  // namespace
}  // namespace fusetune
