#include "server/partition_search.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "server/candidates.h"
#include "tests/server/random_graphs.h"

namespace fusetune {
namespace {

std::vector<ValueId> OpNodes(const Graph& g) {
  std::vector<ValueId> out;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (g.values()[v].kind == ValueKind::kNode) out.push_back(static_cast<ValueId>(v));
  return out;
}

// Brute force: every way to cover the nodes with disjoint candidates, keeping those whose groups
// can be put in an order where each group's inputs come from earlier groups. Returns the cost of
// each such cover (each cover once), cheapest first.
std::vector<double> BruteForceCosts(const Graph& g, const std::vector<ValueId>& nodes,
                                    const std::vector<CostedGroup>& cands) {
  std::vector<double> costs;
  std::vector<size_t> chosen;
  std::vector<int> owner(g.values().size(), -1);
  auto acyclic = [&]() {
    // Repeatedly run any group whose region inputs are all done.
    std::vector<bool> done(g.values().size(), false), ran(chosen.size(), false);
    for (size_t ran_count = 0; ran_count < chosen.size();) {
      bool progress = false;
      for (size_t i = 0; i < chosen.size(); ++i) {
        if (ran[i]) continue;
        bool ready = true;
        for (ValueId v : cands[chosen[i]].nodes)
          for (ValueId in : g.value(v).inputs)
            if (owner[in] >= 0 && owner[in] != static_cast<int>(i) && !done[in]) ready = false;
        if (!ready) continue;
        for (ValueId v : cands[chosen[i]].nodes) done[v] = true;
        ran[i] = progress = true;
        ++ran_count;
      }
      if (!progress) return false;
    }
    return true;
  };
  std::function<void(double)> recurse = [&](double cost) {
    auto first_free =
        std::find_if(nodes.begin(), nodes.end(), [&](ValueId v) { return owner[v] < 0; });
    if (first_free == nodes.end()) {
      if (cost < std::numeric_limits<double>::infinity() && acyclic()) costs.push_back(cost);
      return;
    }
    for (size_t c = 0; c < cands.size(); ++c) {
      const auto& group = cands[c].nodes;
      if (std::find(group.begin(), group.end(), *first_free) == group.end()) continue;
      if (std::any_of(group.begin(), group.end(), [&](ValueId v) { return owner[v] >= 0; }))
        continue;
      for (ValueId v : group) owner[v] = static_cast<int>(chosen.size());
      chosen.push_back(c);
      recurse(cost + cands[c].cost);
      chosen.pop_back();
      for (ValueId v : group) owner[v] = -1;
    }
  };
  recurse(0.0);
  std::sort(costs.begin(), costs.end());
  return costs;
}

// Checks that `p` covers every node once in an order that respects dependencies, at its cost.
void ExpectValidCover(const Graph& g, const std::vector<ValueId>& nodes,
                      const std::vector<CostedGroup>& cands, const Partition& p, uint64_t seed) {
  std::vector<bool> done(g.values().size(), false);
  for (ValueId v : g.params()) done[v] = true;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (g.values()[v].kind == ValueKind::kConst) done[v] = true;
  double summed = 0.0;
  for (size_t idx : p.groups) {
    for (ValueId v : cands[idx].nodes)
      for (ValueId in : g.value(v).inputs)
        EXPECT_TRUE(done[in] || std::count(cands[idx].nodes.begin(), cands[idx].nodes.end(), in))
            << "seed " << seed << ": group reads a value not yet computed";
    for (ValueId v : cands[idx].nodes) {
      EXPECT_FALSE(done[v]) << "node covered twice";
      done[v] = true;
    }
    summed += cands[idx].cost;
  }
  for (ValueId v : nodes) EXPECT_TRUE(done[v]) << "node left uncovered";
  EXPECT_NEAR(summed, p.cost, 1e-9);
}

TEST(PartitionSearch, BestAndRunnerUpMatchBruteForceOnRandomDagsWithRandomCosts) {
  int compared = 0, with_runner_up = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Graph g = testing::RandomDag(seed, 4 + static_cast<int>(seed % 6), seed % 2 == 0);
    SearchOptions options;
    auto groups = EnumerateCandidateGroups(RequestPolicy(g, options));
    std::mt19937_64 rng(seed * 77);
    std::vector<CostedGroup> cands;
    for (const auto& group : groups) {
      // Some candidates are invalid (infinite), as failed measurements are.
      double cost = rng() % 7 == 0 && group.nodes.size() > 1
                        ? std::numeric_limits<double>::infinity()
                        : 1.0 + static_cast<double>(rng() % 1000) / 10.0;
      cands.push_back({group.nodes, cost});
    }
    const auto nodes = OpNodes(g);
    const RankedPartitions ranked = FindBestPartitions(g, nodes, cands);
    const Partition& p = ranked.best;
    const std::vector<double> brute = BruteForceCosts(g, nodes, cands);
    ASSERT_TRUE(p.found()) << "seed " << seed;
    EXPECT_NEAR(p.cost, brute[0], 1e-9) << "seed " << seed;
    ExpectValidCover(g, nodes, cands, p, seed);
    EXPECT_EQ(FindBestPartition(g, nodes, cands).groups, p.groups) << "the same best either way";
    // The runner-up: the cheapest cover whose set of groups differs from the best's.
    ASSERT_EQ(ranked.runner_up.found(), brute.size() > 1) << "seed " << seed;
    if (brute.size() > 1) {
      EXPECT_NEAR(ranked.runner_up.cost, brute[1], 1e-9) << "seed " << seed;
      ExpectValidCover(g, nodes, cands, ranked.runner_up, seed);
      std::vector<size_t> a = p.groups, b = ranked.runner_up.groups;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_NE(a, b) << "seed " << seed << ": the runner-up is the best in another order";
      ++with_runner_up;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 40);
  EXPECT_GT(with_runner_up, 30);
}

TEST(PartitionSearch, PrefersFusedGroupOnlyWhenCheaper) {
  GraphBuilder b;
  TensorType t{DType::kFloat32, {4, 8}};
  ValueId x = b.AddParam("x", t);
  ValueId a = b.AddNode("exp", {x}, {});
  ValueId c = b.AddNode("negative", {a}, {});
  b.SetOutputs({c}, false);
  Graph g = std::move(b).Build();
  std::vector<ValueId> region{a, c};
  Partition split = FindBestPartition(g, region, {{{a}, 1.0}, {{c}, 1.0}, {{a, c}, 3.0}});
  EXPECT_DOUBLE_EQ(split.cost, 2.0);
  EXPECT_EQ(split.groups.size(), 2u);
  Partition fused = FindBestPartition(g, region, {{{a}, 1.0}, {{c}, 1.0}, {{a, c}, 1.5}});
  EXPECT_DOUBLE_EQ(fused.cost, 1.5);
  ASSERT_EQ(fused.groups.size(), 1u);
  EXPECT_EQ(fused.groups[0], 2u);
  RankedPartitions ranked = FindBestPartitions(g, region, {{{a}, 1.0}, {{c}, 1.0}, {{a, c}, 1.5}});
  EXPECT_DOUBLE_EQ(ranked.runner_up.cost, 2.0) << "the split plan is what the fused one beat";
  EXPECT_EQ(ranked.runner_up.groups, (std::vector<size_t>{0, 1}));
}

TEST(PartitionSearch, RejectsOrdersThatNeedACycle) {
  // %a = exp(x); %b = negative(x); %c = add(a, b); %d = multiply(b, c).
  // {a, d} needs c, which needs a: it can never run, however cheap. {b, c} can, after a.
  GraphBuilder bld;
  TensorType t{DType::kFloat32, {4, 8}};
  ValueId x = bld.AddParam("x", t);
  ValueId a = bld.AddNode("exp", {x}, {});
  ValueId b = bld.AddNode("negative", {x}, {});
  ValueId c = bld.AddNode("add", {a, b}, {});
  ValueId d = bld.AddNode("multiply", {b, c}, {});
  bld.SetOutputs({d}, false);
  Graph g = std::move(bld).Build();
  std::vector<ValueId> region{a, b, c, d};
  Partition p = FindBestPartition(
      g, region, {{{a, d}, 0.1}, {{b, c}, 0.1}, {{a}, 1}, {{b}, 1}, {{c}, 1}, {{d}, 1}});
  EXPECT_DOUBLE_EQ(p.cost, 2.1);
  EXPECT_EQ(p.groups, (std::vector<size_t>{2, 1, 5}));
}

TEST(PartitionSearch, NoCoverWhenANodeHasNoValidGroup) {
  GraphBuilder b;
  TensorType t{DType::kFloat32, {4, 8}};
  ValueId x = b.AddParam("x", t);
  ValueId a = b.AddNode("exp", {x}, {});
  b.SetOutputs({a}, false);
  Graph g = std::move(b).Build();
  EXPECT_FALSE(FindBestPartition(g, {a}, {{{a}, std::numeric_limits<double>::infinity()}}).found());
}

}  // namespace
}  // namespace fusetune
