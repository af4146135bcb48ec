#include "server/candidates.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "server/regions.h"
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

using NodesAndRecompute = std::pair<std::vector<ValueId>, std::vector<ValueId>>;

TEST(Candidates, MatchBruteForceOverAllSubsetsOfRandomDags) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const int size = 3 + static_cast<int>(seed % 8);  // up to 10 op nodes
    Graph g = testing::RandomDag(seed, size, seed % 3 != 0);
    SearchOptions options;
    options.max_group_size = 5;
    const auto nodes = OpNodes(g);
    ASSERT_LE(nodes.size(), 12u);
    // Each subset: as a group storing what leaves it, and as the group recomputing its cheap
    // members read outside (ir/fusion.h's RecomputableMembers), each when lowerable.
    std::set<NodesAndRecompute> expected;
    for (uint32_t mask = 1; mask < (1u << nodes.size()); ++mask) {
      std::vector<ValueId> subset;
      for (size_t i = 0; i < nodes.size(); ++i)
        if (mask >> i & 1) subset.push_back(nodes[i]);
      if (static_cast<int>(subset.size()) > options.max_group_size) continue;
      std::vector<std::vector<ValueId>> forms{{}};
      if (subset.size() > 1)
        if (auto recompute = RecomputableMembers(g, subset)) forms.push_back(*recompute);
      for (const std::vector<ValueId>& recompute : forms) {
        auto group = AnalyzeGroup(g, subset, nullptr, recompute);
        if (!group || group->Horizontal()) continue;  // the connected sets; horizontal ones below
        if (subset.size() > 1 && static_cast<int>(group->inputs.size() + group->outputs.size()) >
                                     options.max_kernel_args)
          continue;
        expected.insert({subset, recompute});
      }
    }
    auto found = Enumerate(g, options);
    std::set<NodesAndRecompute> distinct;
    for (const FusedGroup& group : found) distinct.insert({group.nodes, group.recompute});
    EXPECT_EQ(found.size(), distinct.size()) << "seed " << seed << ": a group was listed twice";
    std::set<NodesAndRecompute> connected;
    for (FusedGroup& group : found) {
      if (!group.Horizontal()) {
        connected.insert({group.nodes, group.recompute});
        continue;
      }
      // A horizontal candidate: lowerable, its parts sibling products of one A.
      EXPECT_TRUE(AnalyzeGroup(g, group.nodes)) << "seed " << seed;
      for (const FusedGroup& part : group.parts)
        EXPECT_EQ(g.value(part.anchor).inputs[0], g.value(group.anchor).inputs[0]);
    }
    EXPECT_EQ(connected, expected) << "seed " << seed;
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
  // (A set refused as a group that stores what leaves it may be listed recomputing it.)
  for (const FusedGroup& fg : found) {
    if (fg.recompute.empty()) {
      EXPECT_FALSE(why.count(fg.nodes)) << "listed and refused";
    }
  }
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

// Two anchors share a group only as a layer norm folded into the matmul it alone feeds.
TEST(Candidates, ASoftmaxWrittenOpByOpIsOfferedAsOneKernelWithItsPrivateProducers) {
  // x's scale is read only by the softmax; the square before it also by the output.
  const Graph g = ParseRelay(R"(fn (%x: Tensor[(4, 40), float32]) {
  %0 = multiply(%x, %x);
  %1 = multiply(%0, 0.5f);
  %2 = max(%1, axis=[1], keepdims=True);
  %3 = subtract(%1, %2);
  %4 = exp(%3);
  %5 = sum(%4, axis=[1], keepdims=True);
  %6 = divide(%4, %5);
  (%6, %0)
})",
                             "t");
  const std::vector<ValueId> core = {4, 5, 6, 7, 8};  // %2 .. %6
  std::vector<ValueId> with_scale = core;
  with_scale.insert(with_scale.begin(), 3);  // %1
  const std::set<std::vector<ValueId>> offered = AsSets(Enumerate(g, {}));
  EXPECT_TRUE(offered.count(core));
  EXPECT_TRUE(offered.count(with_scale));
  std::vector<ValueId> with_square = with_scale;
  with_square.insert(with_square.begin(), 1);  // %0, an output too
  EXPECT_FALSE(offered.count(with_square));
  // The five ops count as two against the size bound (its statistics and its division).
  SearchOptions small;
  small.max_group_size = 3;
  EXPECT_TRUE(AsSets(Enumerate(g, small)).count(with_scale));
  small.max_group_size = 1;
  EXPECT_FALSE(AsSets(Enumerate(g, small)).count(core));
}

TEST(Candidates, ALayerNormIsOfferedFoldedIntoTheMatmulOnlyItFeeds) {
  GraphBuilder b;
  TensorType t{DType::kFloat32, {4, 8}}, v{DType::kFloat32, {8}};
  ValueId x = b.AddParam("x", t), w = b.AddParam("w", TensorType{DType::kFloat32, {8, 8}});
  ValueId g = b.AddParam("g", v), beta = b.AddParam("b", v);
  ValueId ln1 = b.AddNode("nn.layer_norm", {x, g, beta}, {});
  ValueId d1 = b.AddNode("nn.dense", {ln1, w}, {});
  ValueId add1 = b.AddNode("add", {d1, x}, {});
  ValueId ln2 = b.AddNode("nn.layer_norm", {add1, g, beta}, {});  // also read by the residual
  ValueId d2 = b.AddNode("nn.dense", {ln2, w}, {});
  ValueId add2 = b.AddNode("add", {d2, ln2}, {});
  b.SetOutputs({add2}, false);
  Graph graph = std::move(b).Build();
  std::set<std::vector<ValueId>> folded;
  for (const FusedGroup& group : Enumerate(graph, {}))
    if (group.norm >= 0) {
      EXPECT_EQ(group.templ, GroupTemplate::kMatmul);
      folded.insert(group.nodes);
    }
  EXPECT_EQ(folded, (std::set<std::vector<ValueId>>{{ln1, d1}, {ln1, d1, add1}}));
  SearchOptions small;
  small.max_group_size = 2;
  folded.clear();
  for (const FusedGroup& group : Enumerate(graph, small))
    if (group.norm >= 0) folded.insert(group.nodes);
  EXPECT_EQ(folded, (std::set<std::vector<ValueId>>{{ln1, d1}}));
  // --no-norm-fold: none, refused by name, and a narrower request than the default.
  SearchOptions off;
  off.norm_fold = false;
  for (const FusedGroup& group : Enumerate(graph, off)) EXPECT_LT(group.norm, 0);
  RequestPolicy policy(graph, off);
  std::string why;
  EXPECT_FALSE(policy.OneKernel(std::vector<ValueId>{ln1, d1}, &why));
  EXPECT_NE(why.find("--no-norm-fold"), std::string::npos) << why;
  EXPECT_FALSE(policy.MayStoreBestPlan());
}

// x read by three denses, each with a bias add, then a sum of the three (the sum makes the region
// connected either way; horizontal groups are what join the denses without it).
struct Qkv {
  Graph graph;
  std::vector<ValueId> dense, bias;
};

Qkv MakeQkv(bool joined) {
  GraphBuilder b;
  TensorType t{DType::kFloat32, {4, 8}};
  ValueId x = b.AddParam("x", t);
  Qkv q;
  std::vector<ValueId> outs;
  for (int i = 0; i < 3; ++i) {
    ValueId w = b.AddParam("w" + std::to_string(i), TensorType{DType::kFloat32, {8, 8}});
    ValueId bias = b.AddParam("b" + std::to_string(i), TensorType{DType::kFloat32, {8}});
    q.dense.push_back(b.AddNode("nn.dense", {x, w}, {}));
    q.bias.push_back(b.AddNode("add", {q.dense.back(), bias}, {}));
    outs.push_back(q.bias.back());
  }
  if (joined) {
    ValueId s = b.AddNode("add", {outs[0], outs[1]}, {});
    outs = {b.AddNode("add", {s, outs[2]}, {})};
  }
  b.SetOutputs(outs, !joined);
  q.graph = std::move(b).Build();
  return q;
}

TEST(Candidates, SiblingMatmulsAreOfferedAsHorizontalGroups) {
  Qkv q = MakeQkv(false);
  std::set<std::vector<ValueId>> horizontal;
  for (const FusedGroup& g : Enumerate(q.graph, {}))
    if (g.Horizontal()) horizontal.insert(g.nodes);
  const auto& d = q.dense;
  const auto& b = q.bias;
  // Every set of two or three siblings, as products alone and with their bias adds.
  EXPECT_EQ(horizontal, (std::set<std::vector<ValueId>>{
                            {d[0], d[1]},
                            {d[0], b[0], d[1], b[1]},
                            {d[0], d[2]},
                            {d[0], b[0], d[2], b[2]},
                            {d[1], d[2]},
                            {d[1], b[1], d[2], b[2]},
                            {d[0], d[1], d[2]},
                            {d[0], b[0], d[1], b[1], d[2], b[2]},
                        }));
  // Regions: the siblings share no edge, yet the horizontal groups put them in one region.
  auto regions = BuildRegions(q.graph, Enumerate(q.graph, {}), 40);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].nodes.size(), 6u);

  SearchOptions off;
  off.horizontal = false;
  for (const FusedGroup& g : Enumerate(q.graph, off)) EXPECT_FALSE(g.Horizontal());
  EXPECT_EQ(BuildRegions(q.graph, Enumerate(q.graph, off), 40).size(), 3u);
  // The policy refuses them by name, and a request without them is narrower than the default.
  RequestPolicy policy(q.graph, off);
  std::string why;
  EXPECT_FALSE(policy.OneKernel(std::vector<ValueId>{d[0], d[1]}, &why));
  EXPECT_NE(why.find("--no-horizontal"), std::string::npos) << why;
  EXPECT_FALSE(policy.MayStoreBestPlan());
  EXPECT_TRUE(RequestPolicy(q.graph, {}).MayStoreBestPlan());
}

TEST(Candidates, HorizontalGroupsHonourTheRequestsLimits) {
  Qkv q = MakeQkv(true);
  SearchOptions small;
  small.max_group_size = 4;
  for (const FusedGroup& g : Enumerate(q.graph, small)) EXPECT_LE(g.nodes.size(), 4u);
  SearchOptions no_dense;
  no_dense.never_fuse_nodes = {q.graph.value(q.dense[1]).name};
  for (const FusedGroup& g : Enumerate(q.graph, no_dense)) {
    if (!g.Horizontal()) continue;
    EXPECT_FALSE(std::binary_search(g.nodes.begin(), g.nodes.end(), q.dense[1]));
  }
}

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(FUSETUNE_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Candidates, AttentionChainsAreOfferedWithinTheRequestsLimits) {
  Graph g = ParseRelay(ReadExample("bert_layer_s128.relay"), "bert.relay");
  auto attention = [&](const SearchOptions& options) {
    std::set<std::vector<ValueId>> out;
    for (const FusedGroup& group : Enumerate(g, options))
      if (group.Attention()) out.insert(group.nodes);
    return out;
  };
  std::vector<ValueId> core;
  for (const char* n : {"12", "13", "14", "15", "16"}) core.push_back(*g.FindByName(n));
  // The core, and the core with one operand's head split (3 nodes each): 8 ops at most.
  std::set<std::vector<ValueId>> found = attention({});
  EXPECT_EQ(found.size(), 4u);
  EXPECT_TRUE(found.count(core));
  for (const auto& nodes : found) {
    EXPECT_LE(nodes.size(), 8u);
    EXPECT_TRUE(std::includes(nodes.begin(), nodes.end(), core.begin(), core.end()));
  }
  SearchOptions off;
  off.attention = false;
  EXPECT_TRUE(attention(off).empty());
  SearchOptions small;
  small.max_group_size = 4;
  EXPECT_TRUE(attention(small).empty());
  SearchOptions wide;
  wide.max_group_size = 14;
  EXPECT_EQ(attention(wide).size(), 8u);
  SearchOptions pinned;
  pinned.never_fuse_ops = {"nn.softmax"};
  EXPECT_TRUE(attention(pinned).empty());
}

}  // namespace
}  // namespace fusetune
