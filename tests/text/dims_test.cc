// Dynamic dimensions in Relay text (`?`, `Any`, named dims) and their binding (ir/dims.h).
#include <gtest/gtest.h>

#include "ir/dims.h"
#include "ir/error.h"
#include "ir/text/relay_parser.h"
#include "ir/text/signature.h"
#include "tests/text/text_test_util.h"

namespace fusetune {
namespace {

DimImporter Relay(const std::string& text) {
  return [text](const DimResolver& r) { return ParseRelay(text, "dyn.relay", {}, &r); };
}

std::string BindError(const std::string& text, const DimBinding& binding) {
  DimImporter import = Relay(text);
  try {
    BindDims(import, DiscoverDims(import), binding);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

const char* kSeedDyn =
    "fn (%x: Tensor[(12, ?, 64), float32], %y: Tensor[(12, ?, 64), float32], %z: Tensor[(12, ?, "
    "?), float32]) {\n"
    "  %0 = nn.batch_matmul(%x, %y);\n"
    "  %1 = ones_like(%0);\n"
    "  where(%z, %0, %1)\n"
    "}";

std::string Seed(int s) {
  return "fn (%x: Tensor[(12, " + std::to_string(s) + ", 64), float32], %y: Tensor[(12, " +
         std::to_string(s) + ", 64), float32], %z: Tensor[(12, " + std::to_string(s) + ", " +
         std::to_string(s) +
         "), float32]) {\n  %0 = nn.batch_matmul(%x, %y);\n  %1 = ones_like(%0);\n  where(%z, "
         "%0, %1)\n}";
}

TEST(DynamicDims, AnonymousDimsAreNamedByTheirFirstSiteAndMergedWhenTypesTieThem) {
  std::vector<DynamicDim> dims = DiscoverDims(Relay(kSeedDyn));
  // x·yᵀ leaves the two lengths independent; where() ties z's axes to them.
  ASSERT_EQ(dims.size(), 2u) << DimsText(dims);
  EXPECT_EQ(dims[0].name, "x.1");
  EXPECT_TRUE(dims[0].anonymous);
  EXPECT_EQ(dims[0].sites, (std::vector<DimSite>{{"x", 1}, {"z", 1}}));
  EXPECT_EQ(dims[1].name, "y.1");
  EXPECT_EQ(dims[1].sites, (std::vector<DimSite>{{"y", 1}, {"z", 2}}));
  EXPECT_EQ(DimsText(dims), "x.1 (%x axis 1, %z axis 1), y.1 (%y axis 1, %z axis 2)");
}

TEST(DynamicDims, BindingGivesTheStaticGraph) {
  DimImporter import = Relay(kSeedDyn);
  std::vector<DynamicDim> dims = DiscoverDims(import);
  for (int s : {64, 128, 256, 193}) {
    Graph g = BindDims(import, dims, {{"x.1", s}, {"y.1", s}});
    EXPECT_EQ(Signature(g), Signature(testing::Parse(Seed(s)))) << s;
  }
  Graph g = BindDims(import, dims, {{"x.1", 128}, {"y.1", 96}});
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "Tensor[(12, 128, 96), float32]");
}

TEST(DynamicDims, NamedDimsAndAnonymousOnesTiedToThem) {
  // %mask's `?` meets %x's seq in an add: it joins seq. `Any` is the older spelling of `?`.
  const char* text =
      "fn (%x: Tensor[(seq, 64), float32], %mask: Tensor[(1, Any), float32], %w: Tensor[(seq, "
      "64), float32]) {\n"
      "  %0 = nn.dense(%x, %w);\n  add(%0, %mask)\n}";
  std::vector<DynamicDim> dims = DiscoverDims(Relay(text));
  ASSERT_EQ(dims.size(), 1u) << DimsText(dims);
  EXPECT_EQ(dims[0].name, "seq");
  EXPECT_FALSE(dims[0].anonymous);
  EXPECT_EQ(dims[0].sites, (std::vector<DimSite>{{"x", 0}, {"mask", 1}, {"w", 0}}));
  Graph g = BindDims(Relay(text), dims, {{"seq", 40}});
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "Tensor[(40, 40), float32]");
}

TEST(DynamicDims, IndependentAnonymousDimsStaySeparate) {
  const char* text =
      "fn (%a: Tensor[(?, 8), float32], %b: Tensor[(?, 8), float32]) { (exp(%a), tanh(%b)) }";
  std::vector<DynamicDim> dims = DiscoverDims(Relay(text));
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims[0].name, "a.0");
  EXPECT_EQ(dims[1].name, "b.0");
  // A static graph has none, and binds with an empty binding.
  EXPECT_TRUE(DiscoverDims(Relay(Seed(16))).empty());
  EXPECT_EQ(Signature(BindDims(Relay(Seed(16)), {}, {})), Signature(testing::Parse(Seed(16))));
}

TEST(DynamicDims, AnnotationsMatchAnySizeOrTheNamedOne) {
  const char* text =
      "fn (%x: Tensor[(seq, 4), float32]) -> Tensor[(seq, ?), float32] {\n"
      "  %0 = exp(%x) /* ty=Tensor[(?, 4), float32] */;\n  negative(%0)\n}";
  Graph g = BindDims(Relay(text), DiscoverDims(Relay(text)), {{"seq", 9}});
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "Tensor[(9, 4), float32]");
  // An annotation names a dim no parameter has; an annotation that disagrees.
  std::string bad = "fn (%x: Tensor[(seq, 4), float32]) -> Tensor[(len, 4), float32] { exp(%x) }";
  EXPECT_NE(BindError(bad, {{"seq", 3}}).find("unknown dimension 'len'"), std::string::npos);
  bad = "fn (%x: Tensor[(seq, 4), float32]) -> Tensor[(?, 5), float32] { exp(%x) }";
  EXPECT_NE(BindError(bad, {{"seq", 3}}).find("dyn.relay:1:"), std::string::npos);
}

TEST(DynamicDims, WithoutSizesTheParserNamesTheDynamicDimension) {
  std::string e = testing::ParseError("fn (%x: Tensor[(2, ?), float32]) { exp(%x) }");
  EXPECT_NE(e.find("bad.relay:1:20: error: %x has a dynamic dimension '?' at axis 1"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--dim"), std::string::npos) << e;
}

TEST(DynamicDims, EachKindOfBadBindingIsAClearError) {
  // A dim left unbound: named, with where it is and how to bind it.
  std::string e = BindError(kSeedDyn, {{"x.1", 128}});
  EXPECT_NE(e.find("dimension 'y.1' (%y axis 1, %z axis 2) has no size: bind it with --dim "
                   "y.1=SIZE"),
            std::string::npos)
      << e;
  // An unknown name.
  e = BindError(kSeedDyn, {{"x.1", 128}, {"y.1", 128}, {"seq", 128}});
  EXPECT_NE(e.find("--dim seq: the graph has no dimension named 'seq' (its dimensions: x.1, y.1)"),
            std::string::npos)
      << e;
  e = BindError(Seed(8), {{"seq", 128}});
  EXPECT_NE(e.find("it has no dynamic dimensions"), std::string::npos) << e;
  // A size that is not positive.
  e = BindError(kSeedDyn, {{"x.1", 0}, {"y.1", 128}});
  EXPECT_NE(e.find("--dim x.1=0: a size must be a positive integer"), std::string::npos) << e;
  // A size that breaks a reshape: the binding, then the positioned error.
  const char* reshape =
      "fn (%x: Tensor[(seq, 768), float32]) { reshape(%x, newshape=[-1, 128, 768]) }";
  e = BindError(reshape, {{"seq", 100}});
  EXPECT_NE(e.find("seq=100 does not fit the graph: dyn.relay:1:40: error: reshape: cannot infer "
                   "-1"),
            std::string::npos)
      << e;
  EXPECT_EQ(BindError(reshape, {{"seq", 256}}), "");
  // A size that breaks a broadcast.
  const char* bcast =
      "fn (%x: Tensor[(seq, 8), float32], %b: Tensor[(16, 8), float32]) { add(%x, %b) }";
  e = BindError(bcast, {{"seq", 7}});
  EXPECT_NE(e.find("seq=7 does not fit the graph: dyn.relay:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("add: cannot broadcast"), std::string::npos) << e;
  EXPECT_EQ(BindError(bcast, {{"seq", 16}}), "");
  EXPECT_EQ(BindError(bcast, {{"seq", 1}}), "");
}

}  // namespace
}  // namespace fusetune
