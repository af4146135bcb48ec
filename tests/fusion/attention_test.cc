// Attention's legality (ir/attention_pattern.h): batch_matmul -> scale/mask -> softmax ->
// batch_matmul, with the operands' head-split producers, is one group; what the kernel cannot do
// (write a score, a softmax over another axis, a step that is not element-wise) is refused with
// the reason. The chains found in the BERT layer are the ones the search offers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/attention_pattern.h"
#include "ir/fusion.h"
#include "ir/norm_pattern.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"

namespace fusetune {
namespace {

constexpr const char* kScaled = R"(
fn (%q: Tensor[(4, 32, 16), float32], %k: Tensor[(4, 48, 16), float32],
    %vt: Tensor[(4, 8, 48), float32], %mask: Tensor[(1, 32, 48), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.25f);
  %2 = add(%1, %mask);
  %3 = nn.softmax(%2, axis=-1);
  nn.batch_matmul(%3, %vt)
})";

std::vector<ValueId> Ids(const Graph& g, std::initializer_list<const char*> names) {
  std::vector<ValueId> out;
  for (const char* n : names) out.push_back(g.FindByName(n).value());
  return out;
}

std::string WhyNot(const Graph& g, std::vector<ValueId> nodes) {
  std::string why;
  EXPECT_FALSE(AnalyzeGroup(g, nodes, &why).has_value());
  return why;
}

TEST(Attention, ScaledMaskedChainIsOneGroup) {
  Graph g = ParseRelay(kScaled, "t.relay");
  std::string why;
  auto group = AnalyzeGroup(g, Ids(g, {"0", "1", "2", "3", "4"}), &why);
  ASSERT_TRUE(group) << why;
  EXPECT_TRUE(group->Attention());
  EXPECT_EQ(TemplateName(group->templ), "attention");
  EXPECT_EQ(group->attention.scores, *g.FindByName("0"));
  EXPECT_EQ(group->attention.chain, Ids(g, {"1", "2"}));
  EXPECT_EQ(group->attention.softmax, *g.FindByName("3"));
  EXPECT_EQ(group->attention.output, *g.FindByName("4"));
  EXPECT_EQ(group->anchor, group->attention.scores);
  EXPECT_EQ(group->sink, group->attention.output);
  EXPECT_EQ(group->outputs, Ids(g, {"4"}));
  EXPECT_EQ(group->inputs.size(), 5u);  // q, k, the scale constant, mask, vt
}

TEST(Attention, RefusalsSayWhy) {
  Graph g = ParseRelay(kScaled, "t.relay");
  // Stopping at the softmax leaves two anchors and no second product.
  EXPECT_NE(WhyNot(g, Ids(g, {"0", "1", "2", "3"})).find("not a batch_matmul"), std::string::npos);
  // Without the scores' product the steps read nothing computed in the group.
  EXPECT_NE(WhyNot(g, Ids(g, {"1", "2", "3", "4"})).find("does not read the scores"),
            std::string::npos);

  Graph used = ParseRelay(R"(
fn (%q: Tensor[(2, 8, 4), float32], %k: Tensor[(2, 8, 4), float32], %v: Tensor[(2, 4, 8), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = nn.softmax(%0, axis=-1);
  %2 = nn.batch_matmul(%1, %v);
  (%2, %1)
})",
                          "t.relay");
  EXPECT_NE(WhyNot(used, Ids(used, {"0", "1", "2"})).find("used outside"), std::string::npos);

  Graph axis = ParseRelay(R"(
fn (%q: Tensor[(2, 8, 4), float32], %k: Tensor[(2, 8, 4), float32], %v: Tensor[(2, 4, 8), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = nn.softmax(%0, axis=1);
  nn.batch_matmul(%1, %v)
})",
                          "t.relay");
  EXPECT_NE(WhyNot(axis, Ids(axis, {"0", "1", "2"})).find("last axis"), std::string::npos);

  Graph step = ParseRelay(R"(
fn (%q: Tensor[(2, 8, 4), float32], %k: Tensor[(2, 8, 4), float32], %v: Tensor[(2, 4, 8), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = transpose(%0, axes=[0, 2, 1]);
  %2 = nn.softmax(%1, axis=-1);
  nn.batch_matmul(%2, %v)
})",
                          "t.relay");
  EXPECT_NE(WhyNot(step, Ids(step, {"0", "1", "2", "3"})).find("not an element-wise step"),
            std::string::npos);
}

// GPT-2's export: scores reshaped to [1, heads, M, N] for a [1, 1, M, N] boolean causal mask,
// the softmax over that rank-4 tensor, P reshaped back to rank 3 for the second product.
constexpr const char* kCausalRank4 = R"(
fn (%q: Tensor[(4, 32, 16), float32], %kt: Tensor[(4, 16, 32), float32],
    %v: Tensor[(4, 32, 8), float32], %mask: Tensor[(1, 1, 32, 32), bool]) {
  %0 = nn.batch_matmul(%q, %kt, transpose_b=False);
  %1 = reshape(%0, newshape=[1, 4, 32, 32]);
  %2 = multiply(%1, 0.25f);
  %3 = where(%mask, -3.4028235e+38f, %2);
  %4 = nn.softmax(%3, axis=3);
  %5 = reshape(%4, newshape=[4, 32, 32]);
  nn.batch_matmul(%5, %v, transpose_b=False)
})";

TEST(Attention, ScoresWithALeadingOneAreOneGroup) {
  Graph g = ParseRelay(kCausalRank4, "t.relay");
  std::vector<AttentionChain> chains = FindAttentionChains(g);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].core, Ids(g, {"0", "1", "2", "3", "4", "5", "6"}));
  std::string why;
  auto group = AnalyzeGroup(g, chains[0].core, &why);
  ASSERT_TRUE(group) << why;
  EXPECT_TRUE(group->Attention());
  EXPECT_EQ(group->attention.chain, Ids(g, {"1", "2", "3"}));
  EXPECT_EQ(group->attention.softmax, *g.FindByName("4"));
  EXPECT_EQ(group->outputs, Ids(g, {"6"}));

  // A reshape that moves elements between axes is no such reshape.
  Graph folded = ParseRelay(R"(
fn (%q: Tensor[(4, 32, 16), float32], %kt: Tensor[(4, 16, 32), float32],
    %v: Tensor[(4, 32, 8), float32]) {
  %0 = nn.batch_matmul(%q, %kt, transpose_b=False);
  %1 = reshape(%0, newshape=[1, 2, 64, 32]);
  %2 = nn.softmax(%1, axis=3);
  %3 = reshape(%2, newshape=[4, 32, 32]);
  nn.batch_matmul(%3, %v, transpose_b=False)
})",
                            "t.relay");
  EXPECT_TRUE(FindAttentionChains(folded).empty());
  EXPECT_NE(
      WhyNot(folded, Ids(folded, {"0", "1", "2", "3", "4"})).find("does not multiply a softmax"),
      std::string::npos);
}

// Attention whose softmax an exporter wrote op by op (ir/norm_pattern.h): its max, shift, exp
// and sum are steps of the kernel; alone, without the products, it is its own row kernel.
constexpr const char* kSoftmaxOps = R"(
fn (%q: Tensor[(4, 32, 16), float32], %k: Tensor[(4, 48, 16), float32],
    %vt: Tensor[(4, 8, 48), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.25f);
  %2 = max(%1, axis=[2], keepdims=True);
  %3 = subtract(%1, %2);
  %4 = exp(%3);
  %5 = sum(%4, axis=[-1], keepdims=True);
  %6 = divide(%4, %5);
  nn.batch_matmul(%6, %vt)
})";

TEST(Attention, ASoftmaxWrittenOpByOpIsPartOfTheKernel) {
  Graph g = ParseRelay(kSoftmaxOps, "t.relay");
  const std::vector<AttentionChain> chains = FindAttentionChains(g);
  ASSERT_EQ(chains.size(), 1u);
  const std::vector<ValueId> all = Ids(g, {"0", "1", "2", "3", "4", "5", "6", "7"});
  EXPECT_EQ(chains[0].core, all);
  std::string why;
  auto group = AnalyzeGroup(g, all, &why);
  ASSERT_TRUE(group) << why;
  EXPECT_TRUE(group->Attention());
  EXPECT_EQ(group->attention.chain, Ids(g, {"1"}));
  EXPECT_EQ(group->attention.softmax, *g.FindByName("6"));
  EXPECT_EQ(group->outputs, Ids(g, {"7"}));
  EXPECT_EQ(OpsCounted(g, all), 5u);  // within the default size of 8
  // Every step in the group, or the group is not convex.
  EXPECT_NE(WhyNot(g, Ids(g, {"0", "1", "3", "4", "5", "6", "7"})).find("not convex"),
            std::string::npos);
  // Without the products, the softmax and its scale are a row kernel.
  auto rows = AnalyzeGroup(g, Ids(g, {"1", "2", "3", "4", "5", "6"}), &why);
  ASSERT_TRUE(rows) << why;
  EXPECT_EQ(rows->templ, GroupTemplate::kComposite);
  EXPECT_TRUE(rows->NormWrittenOpByOp());

  // An exponent read outside the group would have to be written.
  Graph read_outside = ParseRelay(R"(
fn (%q: Tensor[(4, 32, 16), float32], %k: Tensor[(4, 48, 16), float32],
    %vt: Tensor[(4, 8, 48), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = max(%0, axis=[2], keepdims=True);
  %2 = subtract(%0, %1);
  %3 = exp(%2);
  %4 = sum(%3, axis=[2], keepdims=True);
  %5 = divide(%3, %4);
  %6 = nn.batch_matmul(%5, %vt);
  (%6, %3)
})",
                                  "t.relay");
  EXPECT_TRUE(FindAttentionChains(read_outside).empty());
  EXPECT_NE(WhyNot(read_outside, Ids(read_outside, {"0", "1", "2", "3", "4", "5", "6"}))
                .find("used outside the attention group"),
            std::string::npos);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Attention, BertLayerChainAndItsHeadSplitProducers) {
  Graph g = ParseRelay(ReadFile(FUSETUNE_SOURCE_DIR "/examples/bert_layer_s128.relay"), "b.relay");
  std::vector<AttentionChain> chains = FindAttentionChains(g);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].core, Ids(g, {"12", "13", "14", "15", "16"}));
  ASSERT_EQ(chains[0].prologues.size(), 3u);
  // Nearest first: transpose, reshape, bias_add (the dense is an anchor and stays out).
  EXPECT_EQ(chains[0].prologues[0], Ids(g, {"3", "2", "1"}));
  EXPECT_EQ(chains[0].prologues[1], Ids(g, {"7", "6", "5"}));
  EXPECT_EQ(chains[0].prologues[2], Ids(g, {"11", "10", "9"}));
  // Each group the search may build from them is legal.
  std::vector<ValueId> all = chains[0].core;
  for (const auto& p : chains[0].prologues) all.insert(all.end(), p.begin(), p.end());
  std::string why;
  auto group = AnalyzeGroup(g, all, &why);
  ASSERT_TRUE(group) << why;
  EXPECT_TRUE(group->Attention());
  EXPECT_EQ(group->outputs, Ids(g, {"16"}));
  // No rule forms it: greedy's groups hold one anchor at most.
  for (const PlanGroup& pg : GreedyPlan(g).groups) {
    auto gg = AnalyzeGroup(g, pg.nodes);
    ASSERT_TRUE(gg);
    EXPECT_FALSE(gg->Attention());
  }
}

}  // namespace
}  // namespace fusetune
