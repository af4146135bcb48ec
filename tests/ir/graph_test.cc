// GraphBuilder: arity, naming, duplicate names, dtype support, annotations, limits; Graph
// equality and queries.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/graph.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// The seed example: where(z, batch_matmul(x, y), ones_like(...)).
Graph Seed(const std::string& final_name = "") {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({12, 256, 64}));
  ValueId y = b.AddParam("y", F32({12, 256, 64}));
  ValueId z = b.AddParam("z", F32({12, 256, 256}));
  ValueId mm = b.AddNode("nn.batch_matmul", {x, y}, {});
  ValueId ones = b.AddNode("ones_like", {mm}, {});
  ValueId w = b.AddNode("where", {z, mm, ones}, {}, final_name);
  b.SetOutputs({w}, false);
  return std::move(b).Build();
}

TEST(Graph, BuildsTheSeedWithNumberedNames) {
  Graph g = Seed();
  ASSERT_EQ(g.values().size(), 6u);
  EXPECT_EQ(g.num_nodes(), 3);
  EXPECT_EQ(g.params(), (std::vector<ValueId>{0, 1, 2}));
  EXPECT_EQ(g.value(3).name, "0");
  EXPECT_EQ(g.value(4).name, "1");
  EXPECT_EQ(g.value(5).name, "2");
  EXPECT_EQ(g.value(3).type, F32({12, 256, 256}));
  EXPECT_EQ(g.value(3).op->name, "nn.batch_matmul");
  EXPECT_TRUE(g.value(3).attrs.GetBool("transpose_b"));
  EXPECT_EQ(g.Users(3), (std::vector<ValueId>{4, 5}));
  EXPECT_EQ(g.Users(2), (std::vector<ValueId>{5}));
  EXPECT_TRUE(g.Users(5).empty());
  EXPECT_EQ(g.RefName(0), "%x");
  EXPECT_EQ(g.RefName(4), "%1");
  EXPECT_EQ(g.FindByName("1"), std::optional<ValueId>(4));
  EXPECT_EQ(g.FindByName("q"), std::nullopt);
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{5}));
  EXPECT_FALSE(g.tuple_output());
}

TEST(Graph, EqualityIsStructural) {
  EXPECT_TRUE(Seed() == Seed());
  EXPECT_FALSE(Seed() == Seed("out"));  // names count

  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({3}));
  ValueId c = b.AddConst(Tensor::Scalar(DType::kFloat32, 2.0));
  b.SetOutputs({b.AddNode("add", {x, c}, {})}, false);
  Graph g1 = std::move(b).Build();
  GraphBuilder b2;
  x = b2.AddParam("x", F32({3}));
  c = b2.AddConst(Tensor::Scalar(DType::kFloat32, 3.0));
  b2.SetOutputs({b2.AddNode("add", {x, c}, {})}, false);
  Graph g2 = std::move(b2).Build();
  EXPECT_FALSE(g1 == g2);  // constant data counts
  EXPECT_EQ(g1.RefName(1), "2f");

  GraphBuilder b3;
  x = b3.AddParam("x", F32({2, 3}));
  b3.SetOutputs({b3.AddNode("sum", {x}, Attrs({{"axis", int64_t{1}}}))}, false);
  GraphBuilder b4;
  x = b4.AddParam("x", F32({2, 3}));
  b4.SetOutputs({b4.AddNode("sum", {x}, Attrs({{"axis", int64_t{0}}}))}, false);
  EXPECT_FALSE(std::move(b3).Build() == std::move(b4).Build());  // attributes count
}

TEST(Graph, NamesSkipUsedNumbersAndForbidDuplicates) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({2}));
  ValueId a = b.AddNode("exp", {x}, {}, "0");
  ValueId c = b.AddNode("exp", {a}, {}, "5");
  ValueId d = b.AddNode("exp", {c}, {});
  EXPECT_EQ(b.TypeOf(d), F32({2}));
  ValueId e = b.AddNode("exp", {d}, {}, "named");
  ValueId f = b.AddNode("exp", {e}, {});
  b.SetOutputs({d, f}, true);
  Graph g = std::move(b).Build();
  EXPECT_EQ(g.value(d).name, "6");  // next number after the highest explicit one
  EXPECT_EQ(g.value(f).name, "7");
  GraphBuilder twice;
  ValueId t = twice.AddParam("t", F32({2}));
  twice.SetOutputs({twice.AddNode("add", {t, t}, {})}, false);
  EXPECT_EQ(std::move(twice).Build().Users(0), (std::vector<ValueId>{1}));
  EXPECT_TRUE(g.tuple_output());

  GraphBuilder dup;
  x = dup.AddParam("x", F32({2}));
  dup.AddNode("exp", {x}, {}, "a");
  EXPECT_EQ(ErrorOf([&] { dup.AddNode("exp", {x}, {}, "a"); }), "%a is defined twice");
  EXPECT_EQ(ErrorOf([&] { dup.AddParam("x", F32({2})); }), "%x is defined twice");
}

TEST(Graph, ReportsArityOpAttrsAndTypes) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({4, 3}));
  ValueId w = b.AddParam("w", F32({5, 3}));
  EXPECT_EQ(ErrorOf([&] {
              b.AddNode("nn.dense", {x, w, w}, {});
            }),
            "nn.dense takes 2 inputs, got 3");
  EXPECT_EQ(ErrorOf([&] { b.AddNode("exp", {}, {}); }), "exp takes 1 input, got 0");
  EXPECT_EQ(ErrorOf([&] { b.AddNode("concatenate", {}, {}); }),
            "concatenate takes at least 1 input, got 0");
  EXPECT_EQ(ErrorOf([&] { b.AddNode("nn.conv2d", {x}, {}); }), "unknown operator 'nn.conv2d'");
  EXPECT_EQ(ErrorOf([&] {
              b.AddNode("nn.softmax", {x}, Attrs({{"axes", int64_t{1}}}));
            }),
            "nn.softmax has no attribute 'axes' (it has: axis)");
  EXPECT_EQ(ErrorOf([&] {
              b.AddNode("add", {x, w}, {});
            }),
            "add: cannot broadcast Tensor[(4, 3), float32] with Tensor[(5, 3), float32]");
  ValueId d = b.AddNode("nn.dense", {x, w}, {});
  EXPECT_EQ(b.TypeOf(d), F32({4, 5}));
  EXPECT_NO_THROW(b.CheckAnnotatedType(d, F32({4, 5})));
  EXPECT_EQ(
      ErrorOf([&] {
        b.CheckAnnotatedType(d, F32({4, 6}));
      }),
      "type annotation Tensor[(4, 6), float32] does not match inferred Tensor[(4, 5), float32]");

  ValueId h = b.AddParam("h", TensorType{DType::kFloat16, {3}});  // parses, but cannot compute
  EXPECT_EQ(
      ErrorOf([&] { b.AddNode("exp", {h}, {}); }),
      "exp: input 0 (%h) has type Tensor[(3,), float16]; float16 is not supported for computation "
      "(supported: float32, int32, bool)");
  EXPECT_EQ(ErrorOf([&] {
              b.AddNode("cast", {x}, Attrs({{"dtype", std::string("bfloat16")}}));
            }),
            "cast: result type Tensor[(4, 3), bfloat16] is not supported for computation "
            "(supported: float32, "
            "int32, bool)");
  GraphBuilder empty;
  EXPECT_EQ(ErrorOf([&] { std::move(empty).Build(); }), "the graph has no outputs");
}

TEST(Graph, LimitsAreEnforced) {
  Limits limits;
  limits.max_nodes = 4;
  limits.max_rank = 3;
  limits.max_elements = 1000;
  GraphBuilder b(limits);
  EXPECT_EQ(
      ErrorOf([&] {
        b.AddParam("r", F32({1, 1, 1, 1}));
      }),
      "parameter %r has type Tensor[(1, 1, 1, 1), float32] of rank 4, above the limit max_rank = 3 "
      "(raise max_rank to accept it)");
  EXPECT_EQ(ErrorOf([&] {
              b.AddParam("big", F32({10, 10, 11}));
            }),
            "parameter %big has type Tensor[(10, 10, 11), float32] with more than max_elements = "
            "1000 elements "
            "per tensor (raise max_elements to accept it)");
  // Overflowing products are caught too.
  EXPECT_NE(ErrorOf([&] { b.AddParam("huge", F32({int64_t{1} << 40, int64_t{1} << 40})); }), "");
  EXPECT_EQ(ErrorOf([&] {
              b.AddParam("neg", F32({2, -1}));
            }),
            "parameter %neg has type Tensor[(2, -1), float32] with a negative dimension");
  ValueId x = b.AddParam("x", F32({10, 10}));
  // An op whose result exceeds the limit.
  EXPECT_EQ(ErrorOf([&] {
              b.AddNode("broadcast_to", {x}, Attrs({{"shape", IntList{20, 10, 10}}}));
            }),
            "%0 = broadcast_to(...) has type Tensor[(20, 10, 10), float32] with more than "
            "max_elements = 1000 "
            "elements per tensor (raise max_elements to accept it)");
  ValueId v = b.AddNode("exp", {x}, {});
  v = b.AddNode("exp", {v}, {});
  v = b.AddNode("exp", {v}, {});
  EXPECT_EQ(ErrorOf([&] { b.AddNode("exp", {v}, {}); }),
            "graph has more than max_nodes = 4 values (parameters, constants and calls); raise "
            "max_nodes to "
            "accept it");
  Limits defaults;
  EXPECT_EQ(defaults.max_rank, 8);
}

}  // namespace
}  // namespace fusetune
