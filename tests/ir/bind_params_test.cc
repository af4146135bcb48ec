// Binding parameters to weights (ir/bind_params.h): the bound graph keeps its interface and
// structure, carries the values, computes with them, and a wrong name or type is refused naming it.
#include "ir/bind_params.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/interpreter.h"

namespace fusetune {
namespace {

Graph DensePlusBias() {
  GraphBuilder b;
  ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {3, 5}});
  ValueId w = b.AddParam("w", TensorType{DType::kFloat32, {4, 5}});
  ValueId bias = b.AddParam("bias", TensorType{DType::kFloat32, {4}});
  ValueId d = b.AddNode("nn.dense", {x, w}, Attrs{});
  b.SetOutputs({b.AddNode("add", {d, bias}, Attrs{})}, false);
  return std::move(b).Build();
}

TEST(BindParams, BoundParametersCarryTheirValuesAndComputeWithThem) {
  const Graph g = DensePlusBias();
  const Tensor w = Tensor::Random(g.value(g.params()[1]).type, 7);
  const Tensor bias = Tensor::Random(g.value(g.params()[2]).type, 8);
  const Graph bound = BindParams(g, {{"w", w}, {"bias", bias}});

  ASSERT_EQ(bound.params().size(), 3u) << "a bound parameter stays a parameter";
  EXPECT_EQ(bound.value(bound.params()[0]).data, nullptr);
  ASSERT_NE(bound.value(bound.params()[1]).data, nullptr);
  EXPECT_EQ(bound.value(bound.params()[1]).data->Get(3), w.Get(3));
  EXPECT_EQ(bound.value(bound.params()[2]).data->Get(1), bias.Get(1));
  EXPECT_EQ(bound.num_nodes(), g.num_nodes());
  EXPECT_EQ(bound.value(bound.outputs()[0]).name, g.value(g.outputs()[0]).name);

  // The bound graph computes with its weights: the same as the unbound one given them.
  const Tensor x = Tensor::Random(g.value(g.params()[0]).type, 9);
  const std::vector<Tensor> want = Interpret(g, std::vector<Tensor>{x, w, bias});
  const std::vector<Tensor> got = Interpret(bound, std::vector<Tensor>{x, Tensor(), Tensor()});
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < want[0].size(); ++i) EXPECT_EQ(got[0].Get(i), want[0].Get(i)) << i;
}

TEST(BindParams, ANameThatIsNoParameterIsRefusedListingTheParameters) {
  const Graph g = DensePlusBias();
  try {
    BindParams(g, {{"weight", Tensor(TensorType{DType::kFloat32, {4, 5}})}});
    FAIL() << "bound a parameter the graph lacks";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no parameter %weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("%x, %w, %bias"), std::string::npos) << e.what();
  }
  // A node's name is not a parameter either.
  EXPECT_THROW(BindParams(g, {{"0", Tensor(TensorType{DType::kFloat32, {3, 4}})}}), UserError);
}

TEST(BindParams, AValueOfAnotherTypeIsRefusedNamingBothTypes) {
  const Graph g = DensePlusBias();
  try {
    BindParams(g, {{"w", Tensor(TensorType{DType::kFloat32, {5, 4}})}});
    FAIL() << "bound a transposed weight";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("%w"), std::string::npos) << what;
    EXPECT_NE(what.find("Tensor[(5, 4), float32]"), std::string::npos) << what;
    EXPECT_NE(what.find("Tensor[(4, 5), float32]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fusetune
