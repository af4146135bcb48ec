#include "server/candidates.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "tests/server/random_graphs.h"

namespace fusetune {
namespace {

std::vector<FusedGroup> Enumerate(const Graph& g, const SearchOptions& options) {
  return EnumerateCandidateGroups(RequestPolicy(g, options));
}

std::vector<ValueId> OpNodes(const Graph& g) {
  std::vector<ValueId> out;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (g.values()[v].kind == ValueKind::kNode) out.push_back(static_cast<ValueId>(v));
  return out;
}

std::set<std::vector<ValueId>> AsSets(const std::vector<FusedGroup>& groups) {
  std::set<std::vector<ValueId>> out;
  for (const auto& g : groups) out.insert(g.nodes);
  return out;
}

TEST(Candidates, MatchBruteForceOverAllSubsetsOfRandomDags) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const int size = 3 + static_cast<int>(seed % 8);  // up to 10 op nodes
    Graph g = testing::RandomDag(seed, size, seed % 3 != 0);
    SearchOptions options;
    options.max_group_size = 5;
    const auto nodes = OpNodes(g);
    ASSERT_LE(nodes.size(), 12u);
    std::set<std::vector<ValueId>> expected;
    for (uint32_t mask = 1; mask < (1u << nodes.size()); ++mask) {
      std::vector<ValueId> subset;
      for (size_t i = 0; i < nodes.size(); ++i)
        if (mask >> i & 1) subset.push_back(nodes[i]);
      if (static_cast<int>(subset.size()) > options.max_group_size) continue;
      auto group = AnalyzeGroup(g, subset);
      if (!group) continue;
      if (subset.size() > 1 &&
          static_cast<int>(group->inputs.size() + group->outputs.size()) > options.max_kernel_args)
        continue;
      expected.insert(subset);
    }
    auto found = Enumerate(g, options);
    EXPECT_EQ(found.size(), AsSets(found).size())
        << "seed " << seed << ": a group was listed twice";
    EXPECT_EQ(AsSets(found), expected) << "seed " << seed;
  }
}

TEST(Candidates, NeverFuseOpsAndNodesAndForbiddenGroupsAreHonoured) {
  GraphBuilder b;
  TensorType t{DType::kFloat32, {4, 8}};
  ValueId x = b.AddParam("x", t);
  ValueId m = b.AddParam("m", t);
  ValueId s = b.AddNode("subtract", {x, m}, {});  // %0
  ValueId e = b.AddNode("exp", {s}, {});          // %1
  ValueId n = b.AddNode("negative", {e}, {});     // %2
  b.SetOutputs({n}, false);
  Graph g = std::move(b).Build();

  SearchOptions plain;
  EXPECT_EQ(AsSets(Enumerate(g, plain)),
            (std::set<std::vector<ValueId>>{{s}, {e}, {n}, {s, e}, {e, n}, {s, e, n}}));

  SearchOptions no_exp;
  no_exp.never_fuse_ops = {"exp"};
  EXPECT_EQ(AsSets(Enumerate(g, no_exp)), (std::set<std::vector<ValueId>>{{s}, {e}, {n}}));

  SearchOptions no_node;
  no_node.never_fuse_nodes = {"2"};
  EXPECT_EQ(AsSets(Enumerate(g, no_node)), (std::set<std::vector<ValueId>>{{s}, {e}, {n}, {s, e}}));

  SearchOptions forbidden;
  forbidden.forbidden_groups = {{"0", "1", "2"}};
  forbidden.max_group_size = 8;
  EXPECT_EQ(AsSets(Enumerate(g, forbidden)),
            (std::set<std::vector<ValueId>>{{s}, {e}, {n}, {s, e}, {e, n}}));

  SearchOptions small;
  small.max_group_size = 2;
  EXPECT_EQ(AsSets(Enumerate(g, small)),
            (std::set<std::vector<ValueId>>{{s}, {e}, {n}, {s, e}, {e, n}}));
}

TEST(Candidates, RefusedGroupsComeWithThePolicysReason) {
  GraphBuilder b;
  TensorType t{DType::kFloat32, {4, 8}};
  ValueId x = b.AddParam("x", t);
  ValueId s = b.AddNode("exp", {x}, {});                                                 // %0
  ValueId e = b.AddNode("negative", {s}, {});                                            // %1
  ValueId r = b.AddNode("sum", {s}, Attrs({{"axis", IntList{1}}, {"keepdims", true}}));  // %2
  b.SetOutputs({e, r}, true);
  Graph g = std::move(b).Build();
  SearchOptions forbidden;
  forbidden.forbidden_groups = {{"0", "1"}};
  std::vector<RefusedGroup> refused;
  auto found = EnumerateCandidateGroups(RequestPolicy(g, forbidden), &refused);
  std::map<std::vector<ValueId>, std::string> why;
  for (const RefusedGroup& rg : refused) why[rg.nodes] = rg.why;
  EXPECT_EQ(why[(std::vector<ValueId>{s, e})], "the request forbids this group");
  // Two sinks: AnalyzeGroup's reason, which callers used to drop, reaches the caller.
  EXPECT_NE(why[(std::vector<ValueId>{s, e, r})].find("sinks"), std::string::npos)
      << why[(std::vector<ValueId>{s, e, r})];
  for (const FusedGroup& fg : found) EXPECT_FALSE(why.count(fg.nodes)) << "listed and refused";
}

TEST(Candidates, TwoAnchorsNeverShareAGroup) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {4, 8}});
  ValueId w = b.AddParam("w", TensorType{DType::kFloat32, {8, 8}});
  ValueId d1 = b.AddNode("nn.dense", {x, w}, {});
  ValueId d2 = b.AddNode("nn.dense", {d1, w}, {});
  b.SetOutputs({d2}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(AsSets(Enumerate(g, {})), (std::set<std::vector<ValueId>>{{d1}, {d2}}));
}

}  // namespace
}  // namespace fusetune
