// Family keys (ir/text/family.h): invariant to sizes, sensitive to structure, dtypes, attributes
// and which sizes are equal; and the canonical text read back (ir/text/canonical_parser.h).
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "ir/text/canonical_parser.h"
#include "ir/text/family.h"
#include "ir/text/signature.h"
#include "tests/text/text_test_util.h"

namespace fusetune {
namespace {

using testing::Parse;

std::string Seed(int s) {
  return "fn (%x: Tensor[(12, " + std::to_string(s) + ", 64), float32], %y: Tensor[(12, " +
         std::to_string(s) + ", 64), float32], %z: Tensor[(12, " + std::to_string(s) + ", " +
         std::to_string(s) +
         "), float32]) {\n"
         "  %0 = nn.batch_matmul(%x, %y);\n"
         "  %1 = ones_like(%0);\n"
         "  where(%z, %0, %1)\n"
         "}";
}

std::string Key(const std::string& text) { return FamilyKey(Parse(text)); }

// The text with every whole-word `from` replaced by `to`.
std::string WithSize(const std::string& text, int from, int to) {
  return std::regex_replace(text, std::regex("\\b" + std::to_string(from) + "\\b"),
                            std::to_string(to));
}

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(FUSETUNE_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<ValueId> AllNodes(const Graph& g) {
  std::vector<ValueId> ids;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (g.value(v).kind == ValueKind::kNode) ids.push_back(v);
  return ids;
}

TEST(Family, TextOfTheSeed) {
  FamilyForm f = CanonicalizeFamily(Parse(Seed(256)));
  EXPECT_EQ(f.text,
            "fusetune-family v1 graph\n"
            "in p0 Tensor[(s0, s1, s2), float32]\n"
            "in p1 Tensor[(s0, s1, s2), float32]\n"
            "in p2 Tensor[(s0, s1, s1), float32]\n"
            "n0 = nn.batch_matmul(p0, p1) [out_dtype=\"\", transpose_a=False, transpose_b=True] : "
            "Tensor[(s0, s1, s1), float32]\n"
            "n1 = ones_like(n0) [] : Tensor[(s0, s1, s1), float32]\n"
            "n2 = where(p2, n0, n1) [] : Tensor[(s0, s1, s1), float32]\n"
            "out n2\n");
  EXPECT_EQ(f.binding, (std::vector<int64_t>{12, 256, 64}));
  EXPECT_EQ(f.key, Hash128Hex(f.text));
  EXPECT_EQ(BindingText(f.binding), "s0=12 s1=256 s2=64");
}

TEST(Family, InvariantToSizes) {
  const std::string key = Key(Seed(256));
  for (int s : {2, 7, 128, 192, 512, 1000}) {
    EXPECT_EQ(Key(Seed(s)), key) << s;
    EXPECT_NE(Signature(Parse(Seed(s))), Signature(Parse(Seed(256)))) << s;
  }
  EXPECT_EQ(CanonicalizeFamily(Parse(Seed(192))).binding, (std::vector<int64_t>{12, 192, 64}));
  // The checked-in seeds at 128, 256 and 512 are one family.
  EXPECT_EQ(Key(ReadExample("bmm_where_s128.relay")), Key(ReadExample("bmm_where_s512.relay")));
  // Every size of the graph may change, not just one.
  EXPECT_EQ(
      Key("fn (%a: Tensor[(3, 5), float32], %b: Tensor[(5,), float32]) { add(exp(%a), %b) }"),
      Key("fn (%a: Tensor[(30, 7), float32], %b: Tensor[(7,), float32]) { add(exp(%a), %b) }"));
}

TEST(Family, SensitiveToStructure) {
  const std::string key = Key(Seed(256));
  // Another op, another wiring, another output.
  EXPECT_NE(Key(std::regex_replace(Seed(256), std::regex("ones_like"), "zeros_like")), key);
  EXPECT_NE(
      Key(std::regex_replace(Seed(256), std::regex("where\\(%z, %0, %1\\)"), "where(%z, %1, %0)")),
      key);
  EXPECT_NE(Key(std::regex_replace(Seed(256), std::regex("where\\(%z, %0, %1\\)"), "(%0, %1)")),
            key);
}

TEST(Family, SensitiveToDtypes) {
  EXPECT_NE(Key("fn (%a: Tensor[(3, 5), float32]) { negative(%a) }"),
            Key("fn (%a: Tensor[(3, 5), int32]) { negative(%a) }"));
}

TEST(Family, SensitiveToAttributes) {
  EXPECT_NE(Key("fn (%a: Tensor[(3, 5), float32]) { nn.softmax(%a, axis=0) }"),
            Key("fn (%a: Tensor[(3, 5), float32]) { nn.softmax(%a, axis=1) }"));
  EXPECT_NE(Key("fn (%a: Tensor[(4, 5, 6), float32]) { transpose(%a, axes=[1, 0, 2]) }"),
            Key("fn (%a: Tensor[(4, 5, 6), float32]) { transpose(%a, axes=[0, 2, 1]) }"));
  // x·yᵀ and x·y of the same-shaped operands.
  EXPECT_NE(Key("fn (%a: Tensor[(2, 6, 6), float32], %b: Tensor[(2, 6, 6), float32]) { "
                "nn.batch_matmul(%a, %b) }"),
            Key("fn (%a: Tensor[(2, 6, 6), float32], %b: Tensor[(2, 6, 6), float32]) { "
                "nn.batch_matmul(%a, %b, transpose_b=False) }"));
  // A scalar constant is part of the structure.
  EXPECT_NE(Key("fn (%a: Tensor[(3, 5), float32]) { multiply(%a, 0.5f) }"),
            Key("fn (%a: Tensor[(3, 5), float32]) { multiply(%a, 0.25f) }"));
  // A slice's literal bounds are attributes, not sizes: [0:2] and [1:3] differ.
  EXPECT_NE(
      Key("fn (%a: Tensor[(3, 9), float32]) { strided_slice(%a, begin=[0, 0], end=[3, 2]) }"),
      Key("fn (%a: Tensor[(3, 9), float32]) { strided_slice(%a, begin=[0, 1], end=[3, 3]) }"));
}

TEST(Family, SensitiveToWhichSizesAreEqual) {
  // x·yᵀ with x and y of one length, and with two lengths.
  EXPECT_NE(Key(Seed(256)),
            Key("fn (%x: Tensor[(12, 256, 64), float32], %y: Tensor[(12, 384, 64), float32], "
                "%z: Tensor[(12, 256, 384), float32]) { %0 = nn.batch_matmul(%x, %y); "
                "where(%z, %0, ones_like(%0)) }"));
  // A size that happens to equal another one (the sequence length 64 = the head size) is
  // another family: the key cannot tell a coincidence from a constraint.
  EXPECT_NE(Key(Seed(64)), Key(Seed(256)));
  EXPECT_EQ(CanonicalizeFamily(Parse(Seed(64))).binding, (std::vector<int64_t>{12, 64}));
  // A size of 1 broadcasts; it stays literal.
  EXPECT_NE(Key("fn (%a: Tensor[(1, 5), float32], %b: Tensor[(4, 5), float32]) { add(%a, %b) }"),
            Key("fn (%a: Tensor[(3, 5), float32], %b: Tensor[(3, 5), float32]) { add(%a, %b) }"));
}

TEST(Family, LooseKeyForgetsWhichSizesAreEqual) {
  const FamilyForm f64 = CanonicalizeFamily(Parse(Seed(64)));
  const FamilyForm f128 = CanonicalizeFamily(Parse(Seed(128)));
  const FamilyForm f256 = CanonicalizeFamily(Parse(Seed(256)));
  EXPECT_NE(f64.key, f128.key);
  EXPECT_EQ(f64.loose_key, f128.loose_key);
  EXPECT_EQ(f128.loose_key, f256.loose_key);
  // Still sensitive to structure and to the literal sizes 0 and 1.
  EXPECT_NE(CanonicalizeFamily(Parse(ReadExample("bert_layer_s128.relay"))).loose_key,
            f128.loose_key);
  EXPECT_NE(
      CanonicalizeFamily(Parse("fn (%a: Tensor[(1, 5), float32], %b: Tensor[(4, 5), float32]) { "
                               "add(%a, %b) }"))
          .loose_key,
      CanonicalizeFamily(Parse("fn (%a: Tensor[(3, 5), float32], %b: Tensor[(3, 5), float32]) { "
                               "add(%a, %b) }"))
          .loose_key);
  // The text itself is unchanged by the placeholders: symbols as before, no control characters.
  EXPECT_EQ(f128.text.find('\x01'), std::string::npos);
  EXPECT_NE(f128.text.find("Tensor[(s0, s1, s2), float32]"), std::string::npos) << f128.text;
  // 64 keeps every equality of 128 (and one more): 128's plan may move onto it, with 128's
  // symbols s0, s1, s2 at 12, 64, 64 here. Not the other way: at 128, s1 and s2 of 64 differ.
  std::vector<int64_t> here;
  EXPECT_TRUE(EqualitiesRefine(f128, f64, &here));
  EXPECT_EQ(here, (std::vector<int64_t>{12, 64, 64}));
  EXPECT_FALSE(EqualitiesRefine(f64, f128));
  // What does not hold, named.
  std::string not_held;
  EXPECT_FALSE(EqualitiesRefine(f64, f128, nullptr, &not_held));
  EXPECT_EQ(not_held, "64 is two sizes here (128 and 64)");
  not_held.clear();
  EXPECT_TRUE(EqualitiesRefine(f128, f64, nullptr, &not_held));
  EXPECT_EQ(not_held, "") << "128's equalities hold at 64";
  EXPECT_FALSE(EqualitiesRefine(
      f64, CanonicalizeFamily(Parse(ReadExample("bert_layer_s128.relay"))), nullptr, &not_held));
  EXPECT_EQ(not_held, "") << "another loose family";
  EXPECT_TRUE(EqualitiesRefine(f128, f256, &here));
  EXPECT_EQ(here, f256.binding);
}

TEST(Family, SizesInAttributesFollowTheirSymbols) {
  // reshape: newshape spells the output's sizes, by number or by the codes 0 (copy) and -1
  // (infer), which resolve to sizes too.
  const char* reshape =
      "fn (%a: Tensor[(S, 768), float32]) { transpose(reshape(%a, newshape=[S, 12, 64]), axes=[1, "
      "0, 2]) }";
  auto at = [](const char* text, int s) {
    return std::regex_replace(text, std::regex("S"), std::to_string(s));
  };
  EXPECT_EQ(Key(at(reshape, 128)), Key(at(reshape, 384)));
  FamilyForm f = CanonicalizeFamily(Parse(at(reshape, 128)));
  EXPECT_NE(f.text.find("newshape=[s0, s2, s3]"), std::string::npos) << f.text;
  const char* coded = "fn (%a: Tensor[(S, 768), float32]) { reshape(%a, newshape=[0, -1, 64]) }";
  const char* spelled = "fn (%a: Tensor[(S, 768), float32]) { reshape(%a, newshape=[S, 12, 64]) }";
  EXPECT_EQ(Key(at(coded, 128)), Key(at(coded, 384)));
  EXPECT_EQ(Key(at(coded, 128)), Key(at(spelled, 384)));
  EXPECT_NE(Signature(Parse(at(coded, 128))), Signature(Parse(at(spelled, 128))));
  // Where the kept size lands is structure: (S, 768) -> (S, 12, 64) or (12, S, 64).
  EXPECT_NE(Key(at(coded, 128)),
            Key("fn (%a: Tensor[(128, 768), float32]) { reshape(%a, newshape=[-1, 128, 64]) }"));
  // broadcast_to's shape, dense's units.
  const char* bcast = "fn (%a: Tensor[(1, 64), float32]) { broadcast_to(%a, shape=[S, 64]) }";
  EXPECT_EQ(Key(at(bcast, 7)), Key(at(bcast, 300)));
  const char* dense =
      "fn (%a: Tensor[(S, 64), float32], %w: Tensor[(S, 64), float32]) { nn.dense(%a, %w, "
      "units=S) }";
  EXPECT_EQ(Key(at(dense, 48)), Key(at(dense, 96)));
  // strided_slice: an end that reaches the end of its axis means "to the end" at any size
  // (PyTorch writes x[:, 2:] with a huge end); literal bounds inside the axis stay literal.
  const char* tail =
      "fn (%a: Tensor[(4, S), float32]) { strided_slice(%a, begin=[0, 2], end=[4, S]) }";
  EXPECT_EQ(Key(at(tail, 100)), Key(at(tail, 200)));
  EXPECT_EQ(Key(at(tail, 100)),
            Key("fn (%a: Tensor[(4, 50), float32]) { strided_slice(%a, begin=[0, 2], end=[4, "
                "9223372036854775807]) }"));
  const char* head =
      "fn (%a: Tensor[(4, S), float32]) { strided_slice(%a, begin=[0, 0], end=[4, 16]) }";
  EXPECT_EQ(Key(at(head, 100)), Key(at(head, 200)));
  EXPECT_NE(Key(at(head, 100)), Key(at(tail, 100)));
}

TEST(Family, BertLayerAcrossSequenceLengths) {
  const std::string s128 = ReadExample("bert_layer_s128.relay");
  ASSERT_FALSE(s128.empty());
  FamilyForm f128 = CanonicalizeFamily(Parse(s128));
  for (int s : {96, 192, 320}) {
    Graph g = Parse(WithSize(s128, 128, s));
    FamilyForm f = CanonicalizeFamily(g);
    EXPECT_EQ(f.text, f128.text) << s;
    // The bindings differ exactly where the sequence length is.
    ASSERT_EQ(f.binding.size(), f128.binding.size());
    for (size_t i = 0; i < f.binding.size(); ++i)
      EXPECT_EQ(f.binding[i] == s, f128.binding[i] == 128) << i;
  }
}

// A region with several outputs: the exact signature orders them by a key that hashes sizes, so
// their order may change from one size to another; the family order must not.
TEST(Family, OutputOrderDoesNotDependOnSizes) {
  const char* text =
      "fn (%a: Tensor[(A, B), float32], %b: Tensor[(B,), float32]) {\n"
      "  %0 = add(%a, %b);\n  %1 = exp(%0);\n  %2 = tanh(%0);\n  %3 = sum(%1, axis=[1]);\n"
      "  %4 = negative(%2);\n  (%3, %4, %1)\n}";
  std::mt19937 rng(7);
  std::string first_text;
  for (int trial = 0; trial < 40; ++trial) {
    int a = 2 + static_cast<int>(rng() % 300), b = 2 + static_cast<int>(rng() % 300);
    if (a == b) continue;
    std::string t = std::regex_replace(std::regex_replace(text, std::regex("A"), std::to_string(a)),
                                       std::regex("B"), std::to_string(b));
    Graph g = Parse(t);
    // The region without its last node, so its outputs are unordered.
    std::vector<ValueId> region = AllNodes(g);
    region.pop_back();
    FamilyForm f = CanonicalizeFamily(g, region);
    if (first_text.empty()) first_text = f.text;
    EXPECT_EQ(f.text, first_text) << a << "x" << b;
    EXPECT_EQ(f.binding, (std::vector<int64_t>{a, b})) << f.text;
  }
}

TEST(CanonicalParser, ReadsBackEveryExampleAndItsRegions) {
  for (const char* name : {"bert_layer_s128.relay", "gpt2_mlp.relay", "bmm_where_s256.relay",
                           "sub_exp_100x120x120.relay"}) {
    Graph g = Parse(ReadExample(name));
    std::string text = CanonicalText(g);
    EXPECT_EQ(CanonicalText(ParseCanonicalText(text)), text) << name;
    // Windows of consecutive nodes as subgraphs (some with several outputs).
    std::vector<ValueId> nodes = AllNodes(g);
    for (size_t begin = 0; begin < nodes.size(); begin += 3) {
      std::vector<ValueId> window(nodes.begin() + begin,
                                  nodes.begin() + std::min(nodes.size(), begin + 5));
      std::string sub = CanonicalText(g, window);
      Graph back = ParseCanonicalText(sub);
      EXPECT_EQ(CanonicalText(back, AllNodes(back)), sub) << name << " " << begin;
      EXPECT_EQ(FamilyKey(back, AllNodes(back)), FamilyKey(g, window)) << name << " " << begin;
    }
  }
}

TEST(CanonicalParser, RefusesWhatItCannotRebuild) {
  auto error = [](const std::string& text) {
    try {
      ParseCanonicalText(text);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("something else\n").find("not a version 1 canonical text"), std::string::npos);
  EXPECT_NE(error("fusetune-canonical v1 subgraph\nin p0 Tensor[(2,), float32]\n"
                  "n0 = add(p0, const(Tensor[(2,), float32], xxh3=0011223344556677)) [] : "
                  "Tensor[(2,), float32]\nout n0\n")
                .find("non-scalar constant"),
            std::string::npos);
  EXPECT_NE(error("fusetune-canonical v1 subgraph\nin p0 Tensor[(2,), float32]\n"
                  "n0 = exp(p0) [] : Tensor[(3,), float32]\nout n0\n")
                .find("line 3"),
            std::string::npos);
  EXPECT_NE(error("fusetune-canonical v1 subgraph\nin p0 Tensor[(2,), float32]\n"
                  "n0 = exp(p1) [] : Tensor[(2,), float32]\nout n0\n")
                .find("'p1' is not defined"),
            std::string::npos);
  EXPECT_NE(error("fusetune-canonical v1 graph\nin p0 Tensor[(2,), float32]\n").find("no out line"),
            std::string::npos);
}

}  // namespace
}  // namespace fusetune
