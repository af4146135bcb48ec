// Large float32 initialisers reach the graph bit for bit: the importer keeps them as float32 and
// shares them with the graph (ir/onnx/host_tensor.h), transposes dense weights straight into their
// final buffer, and copies a weight before changing it when the original is still in use.
#include <cstdint>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Random bit patterns (subnormals, -0, huge and tiny magnitudes; no NaN, whose payload a
// float operation may change) plus the edge values a widening through double must keep.
std::vector<float> AwkwardFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) {
    uint32_t b = rng();
    if ((b & 0x7f800000u) == 0x7f800000u) b &= 0xbfffffffu;  // NaN/inf exponent -> finite
    std::memcpy(&f, &b, sizeof f);
  }
  const float edges[] = {-0.0f, 1e-45f, -1.17549e-38f, 3.4028235e38f, 0.1f, 1.0f / 3.0f};
  for (size_t i = 0; i < std::size(edges) && i < v.size(); ++i) v[i * 97 % v.size()] = edges[i];
  return v;
}

const Value& ParamWithShape(const Graph& g, const Shape& shape) {
  for (ValueId id : g.params())
    if (g.value(id).data && g.value(id).type.shape == shape) return g.value(id);
  ADD_FAILURE() << "no parameter with data of that shape";
  return g.value(g.params()[0]);
}

// Sizes that are not multiples of the transpose tile, so the edge tiles are exercised too.
constexpr int64_t kK = 515, kN = 387;

TEST(OnnxLargeInitializer, TransposedDenseWeightIsBitEqual) {
  const std::vector<float> w = AwkwardFloats(kK * kN, 1);
  ModelBuilder m;
  m.Input("x", {2, kK}).Output("y", {2, kN});
  m.Initializer("w", {kK, kN}, w);  // raw_data
  m.Node("MatMul", {"x", "w"}, {"y"});
  Graph g = m.Import();
  ASSERT_EQ(OpNames(g), std::vector<std::string>{"nn.dense"});
  const Value& weight = ParamWithShape(g, {kN, kK});
  ASSERT_TRUE(weight.data);
  const float* got = weight.data->as<float>();
  int64_t mismatches = 0;
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t k = 0; k < kK; ++k)
      if (Bits(got[n * kK + k]) != Bits(w[k * kN + n]) && ++mismatches < 5)
        ADD_FAILURE() << "weight[" << n << "][" << k << "] differs";
  EXPECT_EQ(mismatches, 0);
}

TEST(OnnxLargeInitializer, WeightUsedAsIsIsBitEqualFromBothEncodings) {
  const std::vector<float> b = AwkwardFloats(kK * kN, 2);
  for (bool raw : {true, false}) {
    ModelBuilder m;
    m.Input("x", {kK, kN}).Output("y", {kK, kN});
    onnx::TensorProto t = FloatTensor("b", {kK, kN}, b);
    if (!raw) {
      t.clear_raw_data();
      for (float v : b) t.add_float_data(v);
    }
    *m.model.mutable_graph()->add_initializer() = t;
    m.Node("Add", {"x", "b"}, {"y"});
    Graph g = m.Import();
    const Value& bias = ParamWithShape(g, {kK, kN});
    ASSERT_TRUE(bias.data);
    EXPECT_EQ(std::memcmp(bias.data->data(), b.data(), b.size() * sizeof(float)), 0)
        << (raw ? "raw_data" : "float_data");
  }
}

TEST(OnnxLargeInitializer, ScalingACopyLeavesTheSharedOriginalAlone) {
  // Gemm's beta scales C into a derived weight; the same C also feeds an Add unscaled. Both
  // share C's buffer until the scaling writes, which must copy first.
  const std::vector<float> c = Ramp(kN);
  ModelBuilder m;
  m.Input("x", {2, kK}).Input("w", {kK, kN}).Output("y", {2, kN}).Output("z", {2, kN});
  m.Initializer("c", {kN}, c);
  auto& gemm = m.Node("Gemm", {"x", "w", "c"}, {"y"});
  SetAttr(gemm, "beta", 0.5f);
  m.Node("Add", {"y", "c"}, {"z"});
  Graph g = m.Import();
  std::vector<const Value*> with_data;
  for (ValueId id : g.params())
    if (g.value(id).data) with_data.push_back(&g.value(id));
  ASSERT_EQ(with_data.size(), 2u);
  const Value* scaled =
      with_data[0]->name.find("scaled") != std::string::npos ? with_data[0] : with_data[1];
  const Value* plain = scaled == with_data[0] ? with_data[1] : with_data[0];
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_EQ(Bits(plain->data->as<float>()[i]), Bits(c[i])) << i;
    EXPECT_EQ(Bits(scaled->data->as<float>()[i]), Bits(c[i] * 0.5f)) << i;
  }
}

}  // namespace
}  // namespace fusetune::testing
