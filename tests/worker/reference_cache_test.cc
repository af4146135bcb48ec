// The reference a worker shares between jobs equals the reference each job would compute alone:
// across repeated graphs, across groups that share an anchor, through views (reshape) of the same
// parameter, and never across different inputs
// (another seed, another parameter order, other constant data).
#include <string>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "worker/output_check.h"
#include "worker/reference_cache.h"

namespace fusetune {
namespace {

Graph Parse(const std::string& text) { return ParseRelay(text, "test"); }

// The per-job reference: what a job computes with no cache.
std::vector<Tensor> PerJob(const Graph& g, uint64_t seed) {
  return Interpret(g, RandomInputs(g, seed));
}

void ExpectSame(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].type(), want[i].type());
    EXPECT_EQ(MaxAbsDifference(got[i], want[i]), 0.0) << "output " << i;
  }
}

const char* kDense =
    "fn (%x: Tensor[(16, 32), float32], %w: Tensor[(24, 32), float32]) {\n"
    "  nn.dense(%x, %w)\n}";
const char* kDenseBias =
    "fn (%x: Tensor[(16, 32), float32], %w: Tensor[(24, 32), float32], %b: Tensor[(24), "
    "float32]) {\n  %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  tanh(%1)\n}";
// The same ops with the parameters declared the other way round: other random tensors.
const char* kDenseSwapped =
    "fn (%w: Tensor[(24, 32), float32], %x: Tensor[(16, 32), float32]) {\n"
    "  nn.dense(%x, %w)\n}";

TEST(ReferenceCache, EqualsAPerJobReferenceAndIsComputedOnce) {
  ReferenceCache cache;
  Graph g = Parse(kDenseBias);
  ReferenceCache::Reference first = cache.Get(g, 1);
  EXPECT_EQ(first.evaluated, 3);
  ExpectSame(first.outputs, PerJob(g, 1));
  ExpectSame(first.inputs, RandomInputs(g, 1));
  // Another job with the same graph (a second schedule, a second validation round).
  ReferenceCache::Reference again = cache.Get(Parse(kDenseBias), 1);
  EXPECT_EQ(again.evaluated, 0);
  ExpectSame(again.outputs, PerJob(g, 1));
}

TEST(ReferenceCache, GroupsThatShareAnAnchorShareItsValue) {
  ReferenceCache cache;
  Graph dense = Parse(kDense), block = Parse(kDenseBias);
  EXPECT_EQ(cache.Get(dense, 1).evaluated, 1);
  ReferenceCache::Reference r = cache.Get(block, 1);
  EXPECT_EQ(r.evaluated, 2);  // bias_add and tanh; the dense is the first job's
  ExpectSame(r.outputs, PerJob(block, 1));
}

TEST(ReferenceCache, AViewOfAParameterSharesTheValuesOfItsConsumers) {
  // BERT's projections are measured as [dense, ...] and as [reshape, dense, ...]: the reshaped
  // parameter holds the same numbers as a parameter of the reshaped type, so the dense is one.
  ReferenceCache cache;
  Graph dense = Parse(kDense);
  Graph viewed = Parse(
      "fn (%x: Tensor[(1, 16, 32), float32], %w: Tensor[(24, 32), float32]) {\n"
      "  %0 = reshape(%x, newshape=[16, 32]);\n  %1 = nn.dense(%0, %w);\n"
      "  expand_dims(%1, axis=0)\n}");
  EXPECT_EQ(cache.Get(dense, 1).evaluated, 1);
  ReferenceCache::Reference r = cache.Get(viewed, 1);
  EXPECT_EQ(r.evaluated, 1);  // the expand_dims only: the reshape and the dense were known
  ExpectSame(r.outputs, PerJob(viewed, 1));
  // Another element order is another value: a transpose is no view.
  Graph transposed = Parse(
      "fn (%x: Tensor[(32, 16), float32], %w: Tensor[(24, 32), float32]) {\n"
      "  %0 = transpose(%x, axes=[1, 0]);\n  nn.dense(%0, %w)\n}");
  ReferenceCache::Reference t = cache.Get(transposed, 1);
  EXPECT_EQ(t.evaluated, 2);
  ExpectSame(t.outputs, PerJob(transposed, 1));
}

TEST(ReferenceCache, OtherInputsAreNeverServed) {
  ReferenceCache cache;
  Graph dense = Parse(kDense);
  cache.Get(dense, 1);
  ReferenceCache::Reference seed2 = cache.Get(dense, 2);
  EXPECT_EQ(seed2.evaluated, 1);
  ExpectSame(seed2.outputs, PerJob(dense, 2));
  Graph swapped = Parse(kDenseSwapped);
  ReferenceCache::Reference s = cache.Get(swapped, 1);
  EXPECT_EQ(s.evaluated, 1);
  ExpectSame(s.outputs, PerJob(swapped, 1));
  EXPECT_GT(MaxAbsDifference(s.outputs[0], PerJob(dense, 1)[0]), 0.0);
}

TEST(ReferenceCache, ConstantsAreKeyedByTheirData) {
  ReferenceCache cache;
  Graph one = Parse("fn (%x: Tensor[(4), float32]) { add(%x, 1f) }");
  Graph two = Parse("fn (%x: Tensor[(4), float32]) { add(%x, 2f) }");
  cache.Get(one, 1);
  ReferenceCache::Reference r = cache.Get(two, 1);
  EXPECT_EQ(r.evaluated, 1);
  ExpectSame(r.outputs, PerJob(two, 1));
}

TEST(ReferenceCache, StaysWithinItsBound) {
  // 16x24 floats = 1536 bytes per dense output; inputs 2048 and 3072 bytes.
  ReferenceCache cache(8000);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Graph g = Parse(kDense);
    ExpectSame(cache.Get(g, seed).outputs, PerJob(g, seed));
    EXPECT_LE(cache.bytes(), 8000);
  }
}

TEST(ReferenceCache, ParametersLargerThanTheCacheDoNotEvictKnownOutputs) {
  // x 2048 bytes, w 3072, the output 1536: more than the cache holds. Keeping the parameters of a
  // second job evicted the output, computed again in every round of a 12-block stack's timing,
  // and its parameters were drawn again every round.
  ReferenceCache cache(6000);
  Graph g = Parse(kDense);
  ReferenceCache::Reference first = cache.Get(g, 1);
  EXPECT_EQ(first.evaluated, 1);
  for (int round = 0; round < 3; ++round) {
    ReferenceCache::Reference r = cache.Get(g, 1);
    EXPECT_EQ(r.evaluated, 0) << "round " << round;
    // The previous job's inputs, not drawn again.
    ASSERT_EQ(r.inputs.size(), 2u);
    EXPECT_EQ(r.inputs[1].data(), first.inputs[1].data()) << "round " << round;
    ExpectSame(r.outputs, PerJob(g, 1));
    ExpectSame(r.inputs, RandomInputs(g, 1));
  }
}

TEST(ReferenceCache, TheRoundingSpreadIsThePerturbedReferencesDistance) {
  ReferenceCache cache;
  Graph g = Parse(kDenseBias);
  ReferenceCache::Reference r = cache.Get(g, 1);
  const std::vector<double> spread = cache.Spread(g, r, 1);
  ASSERT_EQ(spread.size(), 1u);
  EXPECT_EQ(spread, RoundingSpread(InterpretPerturbed(g, r.inputs, 1), PerJob(g, 1)));
  EXPECT_GT(spread[0], 0);
  EXPECT_LT(spread[0], 1e-6);  // tanh of a 32-long product: about an ulp
  EXPECT_EQ(cache.Spread(Parse(kDenseBias), cache.Get(g, 1), 1), spread);
}

}  // namespace
}  // namespace fusetune
