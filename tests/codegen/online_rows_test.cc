// A row kernel's statistics in one pass (online=1, worker/codegen/templates/composite.cc),
// compared with the reference interpreter (exact, in double) at 1 and 2 threads: layer norms
// whose rows start with an outlier (where a shift by the row's first element alone cancels),
// softmax rows holding -inf, inner axes and odd sizes; and where the schedule space offers it.
#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/schedule_space.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/target.h"

namespace fusetune::testing {
namespace {

constexpr Tolerance kAccum{1e-5, 1e-5};

const Schedule kOnline = Schedule::Parse("online=1");

void ExpectOnlineMatches(const std::string& relay, const Schedule& schedule = kOnline) {
  Graph graph = ParseGraph(relay);
  std::vector<std::string> all;
  for (const Value& v : graph.values())
    if (v.kind == ValueKind::kNode) all.push_back(v.name);
  for (int threads : {1, 2}) {
    for (const GroupResult& r : CheckGroups(graph, {all}, kAccum, threads, 5, schedule))
      EXPECT_TRUE(r.ok) << "'" << schedule.ToString() << "' at " << threads
                        << " threads: " << r.first_failure << "\n"
                        << relay;
  }
}

// x * rsqrt(mean(x²) + eps) (ir/norm_pattern.h).
const char* kRmsNorm =
    "fn (%x: Tensor[(5, 70), float32]) {\n  %0 = power(%x, 2f);\n"
    "  %1 = mean(%0, axis=[-1], keepdims=True);\n  %2 = add(%1, 1e-6f);\n  %3 = rsqrt(%2);\n"
    "  multiply(%x, %3)\n}";

FusedGroup WholeGraphGroup(const Graph& graph) {
  std::vector<ValueId> ids;
  for (const Value& v : graph.values())
    if (v.kind == ValueKind::kNode) ids.push_back(*graph.FindByName(v.name));
  std::optional<FusedGroup> group = AnalyzeGroup(graph, ids);
  EXPECT_TRUE(group.has_value());
  return *group;
}

bool OffersOnline(const std::string& relay) {
  Graph graph = ParseGraph(relay);
  for (const Schedule& s : ScheduleSpace(graph, WholeGraphGroup(graph), 1))
    if (s.Get("online", 0) == 1) return true;
  return false;
}

// Rows of 4,096 whose first element is 100 and the rest in the inputs' small range: a shift by
// x[0] makes sum(d^2)/n and (sum(d)/n)^2 about 4,000 times the variance, and the output lost
// 1e-4 of its value (checked: that shift fails here); the first vector's mean does not.
TEST(OnlineRows, LayerNormInOnePassKeepsItsDigitsWhenTheRowStartsWithAnOutlier) {
  const std::string relay =
      "fn (%y: Tensor[(3, 1), float32], %x: Tensor[(3, 4095), float32],\n"
      "    %g: Tensor[(4096), float32], %b: Tensor[(4096), float32]) {\n"
      "  %0 = multiply(%y, 0f);\n  %1 = add(%0, 100f);\n"
      "  %2 = concatenate((%1, %x), axis=1);\n  nn.layer_norm(%2, %g, %b)\n}";
  ExpectOnlineMatches(relay);
  ExpectOnlineMatches(relay, Schedule::Parse("online=1,vector=32"));
  ExpectOnlineMatches(relay, Schedule{});  // two passes, for comparison
}

TEST(OnlineRows, LayerNormInOnePassAlongAnyAxisAtOddSizes) {
  // A layer norm written op by op (ir/norm_pattern.h) is the same row kernel.
  ExpectOnlineMatches(
      "fn (%x: Tensor[(5, 70), float32], %g: Tensor[(70), float32]) {\n"
      "  %0 = mean(%x, axis=[-1], keepdims=True);\n  %1 = subtract(%x, %0);\n"
      "  %2 = power(%1, 2f);\n  %3 = mean(%2, axis=[-1], keepdims=True);\n"
      "  %4 = add(%3, 1e-5f);\n  %5 = sqrt(%4);\n  %6 = divide(%1, %5);\n  multiply(%6, %g)\n}");
  ExpectOnlineMatches(
      "fn (%x: Tensor[(5, 70), float32], %g: Tensor[(70), float32], %b: Tensor[(70), float32]) {\n"
      "  %0 = add(%x, 8f);\n  nn.layer_norm(%0, %g, %b)\n}");
  ExpectOnlineMatches(
      "fn (%x: Tensor[(4, 6, 3), float32], %g: Tensor[(6), float32], %b: Tensor[(6), float32]) {"
      " nn.layer_norm(%x, %g, %b, axis=1, epsilon=1e-3f, center=False) }");
  ExpectOnlineMatches(
      "fn (%x: Tensor[(7, 1), float32], %g: Tensor[(1), float32], %b: Tensor[(1), float32]) {"
      " nn.layer_norm(%x, %g, %b) }");
  ExpectOnlineMatches(
      "fn (%x: Tensor[(3, 33), float32], %g: Tensor[(33), float32], %b: Tensor[(33), float32]) {"
      " nn.layer_norm(%x, %g, %b) }",
      Schedule::Parse("online=1,vector=4"));
}

// log(relu(m)) is -inf wherever m <= 0: about half of each row masked out, as an attention mask
// of -inf does. The running max starts at the lowest finite float, so a masked entry adds
// exp(-inf) = 0 to the sum and never makes a NaN.
TEST(OnlineRows, SoftmaxInOnePassMatchesWithMinusInfinityInTheRow) {
  for (const char* axis : {"-1", "1"}) {
    ExpectOnlineMatches(
        std::string("fn (%x: Tensor[(3, 7, 45), float32], %m: Tensor[(3, 7, 45), float32]) {\n"
                    "  %0 = nn.relu(%m);\n  %1 = log(%0);\n  %2 = add(%x, %1);\n"
                    "  nn.softmax(%2, axis=") +
        axis + ")\n}");
  }
  ExpectOnlineMatches(
      "fn (%x: Tensor[(2, 5, 40), float32]) {\n  %0 = multiply(%x, 30f);\n"
      "  %1 = nn.softmax(%0);\n  multiply(%1, 3f)\n}");
  // A softmax written op by op (ir/norm_pattern.h) is the same row kernel.
  ExpectOnlineMatches(
      "fn (%x: Tensor[(4, 37), float32]) {\n"
      "  %0 = max(%x, axis=[-1], keepdims=True);\n  %1 = subtract(%x, %0);\n"
      "  %2 = exp(%1);\n  %3 = sum(%2, axis=[-1], keepdims=True);\n"
      "  divide(%2, %3)\n}");
}

// One pass costs a softmax a second exp per element (1.3-1.6x slower up to rows of 50,257 on the
// Xeon and the Zen 5 alike) and pays only past the row cache; a layer norm gains at every size.
TEST(OnlineRows, OfferedForLayerNormsAndForSoftmaxRowsPastTheRowCache) {
  EXPECT_TRUE(OffersOnline(
      "fn (%x: Tensor[(5, 70), float32], %g: Tensor[(70), float32], %b: Tensor[(70), float32]) {"
      " nn.layer_norm(%x, %g, %b) }"));
  EXPECT_FALSE(OffersOnline("fn (%x: Tensor[(3, 7, 45), float32]) { nn.softmax(%x) }"));
  EXPECT_FALSE(OffersOnline("fn (%x: Tensor[(2, 50257), float32]) { nn.softmax(%x) }"));
  EXPECT_TRUE(OffersOnline("fn (%x: Tensor[(2, 300000), float32]) { nn.softmax(%x) }"));
  EXPECT_FALSE(OffersOnline("fn (%x: Tensor[(300000, 2), float32]) { nn.softmax(%x, axis=1) }"));
  EXPECT_FALSE(OffersOnline("fn (%x: Tensor[(5, 70), float32]) { sum(%x, axis=[-1]) }"));
  EXPECT_FALSE(OffersOnline(kRmsNorm)) << "an RMS norm's statistics are one pass already";
}

TEST(OnlineRows, AnRmsNormRefusesTheKnobAndSaysWhy) {
  Graph graph = ParseGraph(kRmsNorm);
  try {
    codegen::BuildGroupKernel(graph, WholeGraphGroup(graph), kOnline, codegen::HostTarget(), "k");
    FAIL() << "online=1 accepted by an RMS norm";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("one pass already"), std::string::npos) << e.what();
  }
}

TEST(OnlineRows, OtherTemplatesRefuseTheKnobByName) {
  Graph graph = ParseGraph("fn (%x: Tensor[(5, 70), float32]) { sum(%x, axis=[-1]) }");
  try {
    codegen::BuildGroupKernel(graph, WholeGraphGroup(graph), kOnline, codegen::HostTarget(), "k");
    FAIL() << "online=1 accepted by a reduction";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown schedule knob 'online' (the reduce template"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fusetune::testing
