#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "ir/text/signature.h"
#include "tests/text/text_test_util.h"

namespace fusetune {
namespace {

using testing::Parse;

std::string Sig(const std::string& text) { return Signature(Parse(text)); }

// The nodes of `g` named in `names` (without '%').
std::vector<ValueId> Nodes(const Graph& g, std::vector<std::string> names) {
  std::vector<ValueId> ids;
  for (const auto& n : names) ids.push_back(*g.FindByName(n));
  return ids;
}

const char* kSeed =
    R"(fn (%x: Tensor[(12, 256, 64), float32], %y: Tensor[(12, 256, 64), float32], %z: Tensor[(12, 256, 256), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
})";

TEST(Signature, CanonicalTextOfTheSeed) {
  EXPECT_EQ(CanonicalText(Parse(kSeed)),
            "fusetune-canonical v1 graph\n"
            "in p0 Tensor[(12, 256, 64), float32]\n"
            "in p1 Tensor[(12, 256, 64), float32]\n"
            "in p2 Tensor[(12, 256, 256), float32]\n"
            "n0 = nn.batch_matmul(p0, p1) [out_dtype=\"\", transpose_a=False, transpose_b=True] : "
            "Tensor[(12, 256, 256), float32]\n"
            "n1 = ones_like(n0) [] : Tensor[(12, 256, 256), float32]\n"
            "n2 = where(p2, n0, n1) [] : Tensor[(12, 256, 256), float32]\n"
            "out n2\n");
}

TEST(Signature, IsStableAcrossRunsAndPlatforms) {
  // Pinned: a change here changes every cache key. Bump the canonical version when it must.
  EXPECT_EQ(Sig(kSeed), "21a45f1ad64c8f4d1eb04eb003dc183b");
  EXPECT_EQ(Hash128Hex(""), "99aa06d3014798d86001c324468d497f");  // XXH3-128 test vector
  EXPECT_EQ(Sig(kSeed).size(), 32u);
}

TEST(Signature, EqualUnderRenaming) {
  EXPECT_EQ(
      Sig(kSeed),
      Sig(R"(fn (%a: Tensor[(12, 256, 64), float32], %b: Tensor[(12, 256, 64), float32], %cond: Tensor[(12, 256, 256), float32]) {
  %scores = nn.batch_matmul(%a, %b);
  %ones = ones_like(%scores);
  %out = where(%cond, %scores, %ones);
  %out
})"));
  // Nested calls instead of bindings, and the def form: the same structure.
  EXPECT_EQ(Sig(kSeed), Sig(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(12, 256, 64), float32], %y: Tensor[(12, 256, 64), float32], %z: Tensor[(12, 256, 256), float32]) {
  let %s = nn.batch_matmul(%x, %y, transpose_b=True);
  where(%z, %s, ones_like(%s))
})"));
}

TEST(Signature, EqualUnderReorderingIndependentBindings) {
  const char* a = R"(fn (%x: Tensor[(4, 8), float32], %y: Tensor[(4, 8), float32]) {
  %0 = exp(%x);
  %1 = tanh(%y);
  %2 = sigmoid(%x);
  %3 = add(%0, %1);
  %4 = multiply(%3, %2);
  (%4, %1)
})";
  const char* b = R"(fn (%x: Tensor[(4, 8), float32], %y: Tensor[(4, 8), float32]) {
  %2 = sigmoid(%x);
  %1 = tanh(%y);
  %0 = exp(%x);
  %3 = add(%0, %1);
  %4 = multiply(%3, %2);
  (%4, %1)
})";
  EXPECT_EQ(Sig(a), Sig(b));
  EXPECT_EQ(CanonicalText(Parse(a)), CanonicalText(Parse(b)));
}

TEST(Signature, TwoIdenticalIndependentBranches) {
  // Two copies of exp(x) feeding a subtraction: swapping which copy is bound first is a
  // reordering (same signature); swapping the subtraction's operands is not.
  const char* a = R"(fn (%x: Tensor[(4,), float32]) {
  %0 = exp(%x);
  %1 = tanh(%0);
  %2 = exp(%x);
  %3 = sigmoid(%2);
  subtract(%1, %3)
})";
  const char* reordered = R"(fn (%x: Tensor[(4,), float32]) {
  %2 = exp(%x);
  %3 = sigmoid(%2);
  %0 = exp(%x);
  %1 = tanh(%0);
  subtract(%1, %3)
})";
  const char* swapped = R"(fn (%x: Tensor[(4,), float32]) {
  %0 = exp(%x);
  %1 = tanh(%0);
  %2 = exp(%x);
  %3 = sigmoid(%2);
  subtract(%3, %1)
})";
  EXPECT_EQ(Sig(a), Sig(reordered));
  EXPECT_NE(Sig(a), Sig(swapped));
  // Sharing one exp is a different graph from two copies.
  EXPECT_NE(Sig(a), Sig(R"(fn (%x: Tensor[(4,), float32]) {
  %0 = exp(%x);
  subtract(tanh(%0), sigmoid(%0))
})"));

  // As a subgraph: two identical branches whose outputs leave the set tie on structure; either
  // order of binding gives the same canonical text.
  Graph g1 = Parse(a), g2 = Parse(reordered);
  auto set1 = Nodes(g1, {"0", "1", "2", "3"});
  auto set2 = Nodes(g2, {"0", "1", "2", "3"});
  EXPECT_EQ(CanonicalText(g1, set1), CanonicalText(g2, set2));
  Graph twins1 = Parse(R"(fn (%x: Tensor[(4,), float32], %y: Tensor[(4,), float32]) {
  %0 = exp(%x);
  %1 = exp(%y);
  %2 = add(%x, %x);
  (%0, %1, %2)
})");
  Graph twins2 = Parse(R"(fn (%x: Tensor[(4,), float32], %y: Tensor[(4,), float32]) {
  %1 = exp(%y);
  %0 = exp(%x);
  %2 = add(%x, %x);
  (%0, %1, %2)
})");
  EXPECT_EQ(CanonicalText(twins1, Nodes(twins1, {"0", "1", "2"})),
            CanonicalText(twins2, Nodes(twins2, {"0", "1", "2"})));
}

TEST(Signature, DiffersUnderAnyChange) {
  const std::string base = R"(fn (%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(%0, 0.5f);
  nn.softmax(%1, axis=-1)
})";
  std::map<std::string, std::string> variants = {
      {"shape", R"(fn (%x: Tensor[(5, 8), float32], %w: Tensor[(16, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(%0, 0.5f);
  nn.softmax(%1, axis=-1)
})"},
      {"dtype of a constant", R"(fn (%x: Tensor[(4, 8), int32], %w: Tensor[(16, 8), int32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(%0, 1);
  %1
})"},
      {"attribute value", R"(fn (%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(%0, 0.5f);
  nn.softmax(%1, axis=0)
})"},
      {"constant value", R"(fn (%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(%0, 0.25f);
  nn.softmax(%1, axis=-1)
})"},
      {"op", R"(fn (%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = add(%0, 0.5f);
  nn.softmax(%1, axis=-1)
})"},
      {"argument order", R"(fn (%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(0.5f, %0);
  nn.softmax(%1, axis=-1)
})"},
      {"parameter order", R"(fn (%w: Tensor[(16, 8), float32], %x: Tensor[(4, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(%0, 0.5f);
  nn.softmax(%1, axis=-1)
})"},
      {"tuple output", R"(fn (%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  %0 = nn.dense(%x, %w, units=16);
  %1 = multiply(%0, 0.5f);
  (nn.softmax(%1, axis=-1),)
})"},
  };
  std::string base_sig = Sig(base);
  std::set<std::string> seen = {base_sig};
  for (const auto& [what, text] : variants) {
    std::string sig = Sig(text);
    EXPECT_NE(sig, base_sig) << what;
    EXPECT_TRUE(seen.insert(sig).second) << what << " collides with another variant";
  }
  // The dtype of a parameter alone.
  EXPECT_NE(Sig("fn (%x: Tensor[(4,), float32]) { negative(%x) }"),
            Sig("fn (%x: Tensor[(4,), int32]) { negative(%x) }"));
  // A float attribute that differs only beyond float32 precision.
  EXPECT_NE(Sig("fn (%x: Tensor[(4,), float32]) { clip(%x, a_min=0.1, a_max=1f) }"),
            Sig("fn (%x: Tensor[(4,), float32]) { clip(%x, a_min=0.1f, a_max=1f) }"));
}

// A chain of identical blocks: each block's subgraph signs the same, and the canonical form maps
// canonical positions back to each block's own nodes.
TEST(Signature, IdenticalRepeatedBlocksShareASubgraphSignature) {
  std::string text = "fn (%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32]) {\n";
  std::string prev = "%x";
  for (int b = 0; b < 3; ++b) {
    std::string p = "b" + std::to_string(b) + "_";
    text += "  %" + p + "d = nn.dense(" + prev + ", %w, units=8);\n";
    text += "  %" + p + "a = add(%" + p + "d, " + prev + ");\n";
    text += "  %" + p + "r = nn.relu(%" + p + "a);\n";
    prev = "%" + p + "r";
  }
  text += "  " + prev + "\n}\n";
  Graph g = Parse(text);
  std::vector<CanonicalForm> forms;
  for (int b = 0; b < 3; ++b) {
    std::string p = "b" + std::to_string(b) + "_";
    forms.push_back(Canonicalize(g, Nodes(g, {p + "r", p + "d", p + "a"})));
  }
  EXPECT_EQ(forms[0].text, forms[1].text);
  EXPECT_EQ(forms[1].text, forms[2].text);
  EXPECT_EQ(Signature(g, Nodes(g, {"b0_d", "b0_a", "b0_r"})),
            Signature(g, Nodes(g, {"b2_a", "b2_r", "b2_d"})));
  EXPECT_EQ(forms[1].nodes, Nodes(g, {"b1_d", "b1_a", "b1_r"}));
  EXPECT_EQ(forms[1].inputs, Nodes(g, {"b0_r", "w"}));
  EXPECT_EQ(forms[1].outputs, Nodes(g, {"b1_r"}));
  EXPECT_EQ(forms[0].text,
            "fusetune-canonical v1 subgraph\n"
            "in p0 Tensor[(4, 8), float32]\n"
            "in p1 Tensor[(8, 8), float32]\n"
            "n0 = nn.dense(p0, p1) [units=8, out_dtype=\"\"] : Tensor[(4, 8), float32]\n"
            "n1 = add(n0, p0) [] : Tensor[(4, 8), float32]\n"
            "n2 = nn.relu(n1) [] : Tensor[(4, 8), float32]\n"
            "out n2\n");
  // A block and a different-sized set never sign the same.
  EXPECT_NE(Signature(g, Nodes(g, {"b0_d", "b0_a"})),
            Signature(g, Nodes(g, {"b0_d", "b0_a", "b0_r"})));
}

TEST(Signature, SubgraphRefusesValuesThatAreNotNodes) {
  Graph g = Parse(kSeed);
  std::vector<ValueId> bad = {0};
  EXPECT_THROW(Signature(g, bad), UserError);
  std::vector<ValueId> out_of_range = {99};
  EXPECT_THROW(Signature(g, out_of_range), UserError);
}

// Random DAGs written in random topological orders with random names sign the same, as whole
// graphs and as subgraphs; the duplicated ops make identical branches common.
TEST(Signature, PropertyRandomReorderingAndRenaming) {
  std::mt19937 rng(12345);
  const char* unary[] = {"exp", "tanh", "negative"};
  const char* binary[] = {"add", "subtract", "multiply"};
  // FUSETUNE_SIGNATURE_TRIALS=100000 and FUSETUNE_SIGNATURE_NODES=40 for a longer search.
  const char* env = std::getenv("FUSETUNE_SIGNATURE_TRIALS");
  const int trials = env ? std::atoi(env) : 200;
  const char* env_nodes = std::getenv("FUSETUNE_SIGNATURE_NODES");
  const int max_nodes = env_nodes ? std::atoi(env_nodes) : 14;
  for (int trial = 0; trial < trials; ++trial) {
    struct Node {
      std::string op;
      std::vector<int> args;  // < 0: parameter -1-i; else node index
    };
    int n = 3 + static_cast<int>(rng() % (max_nodes - 2));
    std::vector<Node> nodes;
    for (int i = 0; i < n; ++i) {
      auto pick = [&] {
        int r = static_cast<int>(rng() % (i + 2));
        return r >= i ? -1 - static_cast<int>(rng() % 2) : r;
      };
      if (rng() % 2) {
        nodes.push_back({unary[rng() % 3], {pick()}});
      } else {
        nodes.push_back({binary[rng() % 3], {pick(), pick()}});
      }
    }
    std::vector<int> used(n, 0);
    for (const Node& node : nodes)
      for (int a : node.args)
        if (a >= 0) used[a] = 1;
    std::vector<int> outs;
    for (int i = 0; i < n; ++i)
      if (!used[i] || rng() % 5 == 0) outs.push_back(i);
    std::vector<int> subset;
    for (int i = 0; i < n; ++i)
      if (rng() % 2) subset.push_back(i);
    if (subset.empty()) subset.push_back(0);

    auto write = [&](bool shuffle, const std::string& prefix) {
      // A random topological order: repeatedly pick a random node whose inputs are written.
      std::vector<int> order, written(n, 0);
      while (static_cast<int>(order.size()) < n) {
        std::vector<int> ready;
        for (int i = 0; i < n; ++i) {
          if (written[i]) continue;
          bool ok = true;
          for (int a : nodes[i].args) ok = ok && (a < 0 || written[a]);
          if (ok) ready.push_back(i);
        }
        int pick = shuffle ? ready[rng() % ready.size()] : ready[0];
        written[pick] = 1;
        order.push_back(pick);
      }
      auto ref = [&](int a) {
        return a < 0 ? (a == -1 ? std::string("%px") : std::string("%py"))
                     : "%" + prefix + std::to_string(a);
      };
      std::string text = "fn (%px: Tensor[(3,), float32], %py: Tensor[(3,), float32]) {\n";
      for (int i : order) {
        text += "  " + ref(i) + " = " + nodes[i].op + "(";
        for (size_t j = 0; j < nodes[i].args.size(); ++j)
          text += (j ? ", " : "") + ref(nodes[i].args[j]);
        text += ");\n";
      }
      text += "  (";
      for (size_t j = 0; j < outs.size(); ++j) text += (j ? ", " : "") + ref(outs[j]);
      text += ",)\n}\n";
      return text;
    };
    std::string t1 = write(false, "n"), t2 = write(true, "v");
    Graph g1 = Parse(t1), g2 = Parse(t2);
    ASSERT_EQ(CanonicalText(g1), CanonicalText(g2)) << t1 << t2;
    std::vector<std::string> names1, names2;
    for (int i : subset) {
      names1.push_back("n" + std::to_string(i));
      names2.push_back("v" + std::to_string(i));
    }
    ASSERT_EQ(CanonicalText(g1, Nodes(g1, names1)), CanonicalText(g2, Nodes(g2, names2)))
        << t1 << t2;
  }
}

}  // namespace
}  // namespace fusetune
