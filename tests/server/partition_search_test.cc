#include "server/partition_search.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "server/candidates.h"
#include "tests/fusion/softmax_ops.h"
#include "tests/server/random_graphs.h"

namespace fusetune {
namespace {

std::vector<ValueId> OpNodes(const Graph& g) {
  std::vector<ValueId> out;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (g.values()[v].kind == ValueKind::kNode) out.push_back(static_cast<ValueId>(v));
  return out;
}

// Brute force: every choice of candidates and of unstored nodes such that each node is stored by
// exactly one chosen candidate (a member it does not recompute) or by none (then nothing outside
// the region reads it and some chosen candidate recomputes it), each chosen candidate recomputes
// only unstored nodes and reads from outside itself only stored ones, and the groups can be put in
// an order where each runs after the groups storing what it reads. Returns the cost of each such
// cover, cheapest first.
std::vector<double> BruteForceCosts(const Graph& g, const std::vector<ValueId>& nodes,
                                    const std::vector<CostedGroup>& cands) {
  constexpr int kFree = -1, kUnstored = -2;
  std::vector<char> in_region(g.values().size(), 0), private_node(g.values().size(), 1);
  for (ValueId v : nodes) in_region[v] = 1;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (!in_region[v])
      for (ValueId in : g.values()[v].inputs) private_node[in] = 0;
  for (ValueId o : g.outputs()) private_node[o] = 0;
  auto recomputes = [&](size_t c, ValueId v) {
    return std::count(cands[c].recompute.begin(), cands[c].recompute.end(), v) > 0;
  };
  auto holds = [&](size_t c, ValueId v) {
    return std::count(cands[c].nodes.begin(), cands[c].nodes.end(), v) > 0;
  };
  std::vector<double> costs;
  std::vector<size_t> chosen;
  std::vector<int> owner(g.values().size(), kFree);
  auto consistent = [&]() {
    for (ValueId v : nodes)  // an unstored node is recomputed somewhere
      if (owner[v] == kUnstored &&
          std::none_of(chosen.begin(), chosen.end(), [&](size_t c) { return recomputes(c, v); }))
        return false;
    for (size_t i = 0; i < chosen.size(); ++i) {
      for (ValueId r : cands[chosen[i]].recompute)
        if (owner[r] != kUnstored) return false;
      for (ValueId v : cands[chosen[i]].nodes)
        for (ValueId in : g.value(v).inputs)
          if (in_region[in] && !holds(chosen[i], in) && owner[in] == kUnstored) return false;
    }
    // Repeatedly run any group whose stored region inputs are all done.
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
        std::find_if(nodes.begin(), nodes.end(), [&](ValueId v) { return owner[v] == kFree; });
    if (first_free == nodes.end()) {
      if (cost < std::numeric_limits<double>::infinity() && consistent()) costs.push_back(cost);
      return;
    }
    if (private_node[*first_free]) {
      owner[*first_free] = kUnstored;
      recurse(cost);
      owner[*first_free] = kFree;
    }
    for (size_t c = 0; c < cands.size(); ++c) {
      if (!holds(c, *first_free) || recomputes(c, *first_free)) continue;
      const auto& group = cands[c].nodes;
      if (std::any_of(group.begin(), group.end(),
                      [&](ValueId v) { return !recomputes(c, v) && owner[v] != kFree; }))
        continue;
      for (ValueId v : group)
        if (!recomputes(c, v)) owner[v] = static_cast<int>(chosen.size());
      chosen.push_back(c);
      recurse(cost + cands[c].cost);
      chosen.pop_back();
      for (ValueId v : group)
        if (!recomputes(c, v)) owner[v] = kFree;
    }
  };
  recurse(0.0);
  std::sort(costs.begin(), costs.end());
  return costs;
}

// Checks that `p` stores every node once (or recomputes it in every group that reads it) in an
// order that respects dependencies, at its cost.
void ExpectValidCover(const Graph& g, const std::vector<ValueId>& nodes,
                      const std::vector<CostedGroup>& cands, const Partition& p, uint64_t seed) {
  std::vector<bool> done(g.values().size(), false), held(g.values().size(), false);
  for (ValueId v : g.params()) done[v] = true;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (g.values()[v].kind == ValueKind::kConst) done[v] = true;
  double summed = 0.0;
  for (size_t idx : p.groups) {
    const CostedGroup& c = cands[idx];
    auto has = [](const std::vector<ValueId>& list, ValueId v) {
      return std::count(list.begin(), list.end(), v) > 0;
    };
    for (ValueId v : c.nodes)
      for (ValueId in : g.value(v).inputs)
        EXPECT_TRUE(done[in] || has(c.nodes, in))
            << "seed " << seed << ": group reads a value not yet stored";
    for (ValueId v : c.nodes) {
      held[v] = true;
      if (has(c.recompute, v)) continue;
      EXPECT_FALSE(done[v]) << "node stored twice";
      done[v] = true;
    }
    summed += c.cost;
  }
  for (ValueId v : nodes) EXPECT_TRUE(held[v]) << "node left uncovered";
  EXPECT_NEAR(summed, p.cost, 1e-9);
}

TEST(PartitionSearch, BestAndRunnerUpMatchBruteForceOnRandomDagsWithRandomCosts) {
  int compared = 0, with_runner_up = 0, recomputing = 0, recomputed_in_best = 0;
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
      cands.push_back({group.nodes, cost, group.recompute});
      recomputing += !group.recompute.empty();
    }
    const auto nodes = OpNodes(g);
    const RankedPartitions ranked = FindBestPartitions(g, nodes, cands);
    const Partition& p = ranked.best;
    const std::vector<double> brute = BruteForceCosts(g, nodes, cands);
    ASSERT_TRUE(p.found()) << "seed " << seed;
    EXPECT_NEAR(p.cost, brute[0], 1e-9) << "seed " << seed;
    ExpectValidCover(g, nodes, cands, p, seed);
    for (size_t idx : p.groups) recomputed_in_best += !cands[idx].recompute.empty();
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
  // The random DAGs hold cheap ops read twice, so the space holds recomputing groups, and with
  // random costs some best covers use them.
  EXPECT_GT(recomputing, 40);
  EXPECT_GT(recomputed_in_best, 3);
}

TEST(PartitionSearch, RecomputesOnlyWhenEveryReaderDoes) {
  const testing::Softmax s = testing::DecomposedSoftmax();
  const std::vector<ValueId> region{s.sub, s.e, s.sum, s.div};
  const std::vector<CostedGroup> stored{
      {{s.sub, s.e}, 2.0, {}}, {{s.sum}, 1.0, {}}, {{s.div}, 1.0, {}}};
  const CostedGroup sum_recomputing{{s.sub, s.e, s.sum}, 1.5, {s.sub, s.e}};
  const CostedGroup div_recomputing{{s.sub, s.e, s.div}, 1.5, {s.sub, s.e}};
  auto with = [&](std::vector<CostedGroup> more) {
    std::vector<CostedGroup> all = stored;
    all.insert(all.end(), more.begin(), more.end());
    return FindBestPartition(s.g, region, all);
  };
  // Both readers recompute: 3.0 beats storing it (4.0); the exponent is in no group's stores.
  const Partition both = with({sum_recomputing, div_recomputing});
  EXPECT_DOUBLE_EQ(both.cost, 3.0);
  EXPECT_EQ(both.groups, (std::vector<size_t>{3, 4}));
  // Only the sum can recompute it: the division reads it from memory, so someone must store it,
  // and the sum's recomputing group cannot be used.
  const Partition one = with({sum_recomputing});
  EXPECT_DOUBLE_EQ(one.cost, 4.0);
  EXPECT_EQ(one.groups, (std::vector<size_t>{0, 1, 2}));
  // A node read outside the region is never left unstored.
  EXPECT_DOUBLE_EQ(FindBestPartition(s.g, {s.sub, s.e, s.sum},
                                     {{{s.sub, s.e}, 2.0, {}}, {{s.sum}, 1.0, {}}, sum_recomputing})
                       .cost,
                   3.0);
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
  Partition split =
      FindBestPartition(g, region, {{{a}, 1.0, {}}, {{c}, 1.0, {}}, {{a, c}, 3.0, {}}});
  EXPECT_DOUBLE_EQ(split.cost, 2.0);
  EXPECT_EQ(split.groups.size(), 2u);
  Partition fused =
      FindBestPartition(g, region, {{{a}, 1.0, {}}, {{c}, 1.0, {}}, {{a, c}, 1.5, {}}});
  EXPECT_DOUBLE_EQ(fused.cost, 1.5);
  ASSERT_EQ(fused.groups.size(), 1u);
  EXPECT_EQ(fused.groups[0], 2u);
  RankedPartitions ranked =
      FindBestPartitions(g, region, {{{a}, 1.0, {}}, {{c}, 1.0, {}}, {{a, c}, 1.5, {}}});
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
  Partition p = FindBestPartition(g, region,
                                  {{{a, d}, 0.1, {}},
                                   {{b, c}, 0.1, {}},
                                   {{a}, 1, {}},
                                   {{b}, 1, {}},
                                   {{c}, 1, {}},
                                   {{d}, 1, {}}});
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
  EXPECT_FALSE(
      FindBestPartition(g, {a}, {{{a}, std::numeric_limits<double>::infinity(), {}}}).found());
}

}  // namespace
}  // namespace fusetune
