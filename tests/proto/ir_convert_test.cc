// IR <-> proto: every op, the examples, constants and tuples survive the wire byte for byte; every
// malformed message is refused with a message naming the value and field.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "ir/error.h"
#include "ir/op.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "proto/ir_convert.h"

namespace fusetune {
namespace {

Graph Parse(const std::string& text) { return ParseRelay(text, "test.relay"); }

// Through the wire: to proto, to bytes, back to a message, back to the IR.
Graph ThroughWire(const Graph& g) {
  std::string bytes = GraphToProto(g).SerializeAsString();
  v1::Graph message;
  EXPECT_TRUE(message.ParseFromString(bytes));
  return GraphFromProto(message);
}

// One small program per op (attributes away from their defaults where there are any).
const std::map<std::string, std::string>& OpPrograms() {
  static const auto* programs = [] {
    auto* m = new std::map<std::string, std::string>;
    const std::string a = "fn (%a: Tensor[(2, 3, 4), float32]) { ";
    for (const char* op :
         {"abs", "erf", "exp", "fast_exp", "fast_tanh", "log", "negative", "nn.relu", "ones_like",
          "rsqrt", "sigmoid", "sqrt", "tanh", "zeros_like"}) {
      (*m)[op] = a + op + "(%a) }";
    }
    const std::string ab = "fn (%a: Tensor[(2, 3, 4), float32], %b: Tensor[(3, 1), float32]) { ";
    for (const char* op :
         {"add", "divide", "maximum", "minimum", "multiply", "power", "subtract"}) {
      (*m)[op] = ab + op + "(%a, %b) }";
    }
    (*m)["broadcast_to"] = a + "broadcast_to(%a, shape=[5, 2, 3, 4]) }";
    (*m)["cast"] = a + "cast(%a, dtype=\"int32\") }";
    (*m)["clip"] = a + "clip(%a, a_min=-1f, a_max=2.5f) }";
    (*m)["concatenate"] =
        "fn (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 5), float32]) { "
        "concatenate((%a, %b), axis=1) }";
    (*m)["expand_dims"] = a + "expand_dims(%a, axis=1, num_newaxis=2) }";
    (*m)["max"] = a + "max(%a, axis=[0], exclude=True) }";
    (*m)["mean"] = a + "mean(%a) }";
    (*m)["min"] = a + "min(%a, axis=[2]) }";
    (*m)["sum"] = a + "sum(%a, axis=[1, -1], keepdims=True) }";
    (*m)["nn.batch_matmul"] =
        "fn (%a: Tensor[(2, 3, 4), float32], %b: Tensor[(2, 4, 5), float32]) { "
        "nn.batch_matmul(%a, %b, transpose_b=False) }";
    (*m)["nn.bias_add"] =
        "fn (%a: Tensor[(2, 3, 4), float32], %b: Tensor[(4,), float32]) { "
        "nn.bias_add(%a, %b, axis=-1) }";
    (*m)["nn.dense"] =
        "fn (%a: Tensor[(3, 4), float32], %w: Tensor[(5, 4), float32]) { "
        "nn.dense(%a, %w, units=5) }";
    (*m)["nn.layer_norm"] =
        "fn (%a: Tensor[(3, 4), float32], %g: Tensor[(4,), float32], %b: Tensor[(4,), float32]) "
        "{ nn.layer_norm(%a, %g, %b, epsilon=1e-12f) }";
    (*m)["nn.matmul"] =
        "fn (%a: Tensor[(3, 4), float32], %b: Tensor[(4, 5), float32]) { nn.matmul(%a, %b) }";
    (*m)["nn.softmax"] = a + "nn.softmax(%a, axis=1) }";
    (*m)["reshape"] = a + "reshape(%a, newshape=[0, -1]) }";
    (*m)["squeeze"] = "fn (%a: Tensor[(2, 1, 4), float32]) { squeeze(%a, axis=[1]) }";
    (*m)["strided_slice"] = a + "strided_slice(%a, begin=[0, 1], end=[2, 3], strides=[1, 2]) }";
    (*m)["transpose"] = a + "transpose(%a, axes=[2, 0, 1]) }";
    (*m)["where"] =
        "fn (%c: Tensor[(2, 3, 4), bool], %a: Tensor[(2, 3, 4), float32], "
        "%b: Tensor[(3, 1), float32]) { where(%c, %a, %b) }";
    return m;
  }();
  return *programs;
}

TEST(GraphProto, EveryOpRoundTrips) {
  for (const OpDef* op : AllOps()) {
    SCOPED_TRACE(op->name);
    auto it = OpPrograms().find(op->name);
    ASSERT_NE(it, OpPrograms().end()) << "add a program for " << op->name;
    Graph g = Parse(it->second);
    v1::Graph message = GraphToProto(g);
    // The node carries its op, inputs, every (normalised) attribute and its inferred type.
    const v1::Node& node = message.values(message.outputs(0)).node();
    EXPECT_EQ(node.op(), op->name);
    EXPECT_EQ(node.attrs_size(), static_cast<int>(op->attrs.size()));
    EXPECT_EQ(TensorTypeFromProto(node.type(), "type"), g.value(g.outputs()[0]).type);
    Graph back = ThroughWire(g);
    EXPECT_EQ(back, g);
    EXPECT_EQ(GraphToProto(back).SerializeAsString(), message.SerializeAsString());
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(GraphProto, ExamplesRoundTrip) {
  for (const char* name : {"bmm_where_s256.relay", "sub_exp_100x120x120.relay",
                           "bert_layer_s128.relay", "qkv_attention.relay"}) {
    SCOPED_TRACE(name);
    std::string text = ReadFile(std::string(FUSETUNE_SOURCE_DIR) + "/examples/" + name);
    ASSERT_FALSE(text.empty());
    Graph g = ParseRelay(text, name);
    EXPECT_EQ(ThroughWire(g), g);
  }
}

TEST(GraphProto, ConstantsNamesAndTuplesRoundTripBitExactly) {
  Graph g = Parse(R"(fn (%x: Tensor[(4), float32], %i: Tensor[(4), int32]) {
    %mid = multiply(%x, 0.1f);
    %1 = add(%i, 3);
    %2 = where(True, %mid, %x);
    (%2, %1, %mid)
  })");
  v1::Graph message = GraphToProto(g);
  EXPECT_TRUE(message.tuple_output());
  EXPECT_EQ(message.outputs_size(), 3);
  int constants = 0;
  for (const v1::Value& v : message.values()) constants += v.has_constant();
  EXPECT_EQ(constants, 3);
  Graph back = ThroughWire(g);
  EXPECT_EQ(back, g);
  ASSERT_TRUE(back.FindByName("mid"));

  // A tensor constant of every computable dtype, including values that only survive as raw bits.
  GraphBuilder b;
  ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {3}});
  Tensor f(TensorType{DType::kFloat32, {3}});
  f.as<float>()[0] = 0.1f;
  f.as<float>()[1] = -0.0f;
  f.as<float>()[2] = 3.4028235e38f;
  ValueId cf = b.AddConst(f);
  Tensor n(TensorType{DType::kInt32, {3}});
  n.as<int32_t>()[0] = -2147483647 - 1;
  n.as<int32_t>()[2] = 7;
  b.AddConst(n, "ints");
  Tensor c(TensorType{DType::kBool, {3}});
  c.as<uint8_t>()[1] = 1;
  ValueId cb = b.AddConst(c);
  ValueId sum = b.AddNode("add", {x, cf}, Attrs{});
  b.SetOutputs({b.AddNode("where", {cb, sum, x}, Attrs{})}, false);
  Graph built = std::move(b).Build();
  Graph wired = ThroughWire(built);
  EXPECT_EQ(wired, built);
  EXPECT_TRUE(std::signbit(wired.value(cf).data->as<float>()[1]));
}

TEST(GraphProto, AParameterWithWeightsBecomesANamedConstant) {
  v1::Graph message = GraphToProto(Parse("fn (%w: Tensor[(2), float32]) { exp(%w) }"));
  Tensor w(TensorType{DType::kFloat32, {2}});
  w.as<float>()[0] = 1.5f;
  *message.mutable_values(0)->mutable_param()->mutable_data() = TensorToProto(w);
  Graph g = GraphFromProto(message);
  EXPECT_EQ(g.params().size(), 0u);
  EXPECT_EQ(g.value(0).kind, ValueKind::kConst);
  EXPECT_EQ(g.value(0).name, "w");
  EXPECT_EQ(g.value(0).data->as<float>()[0], 1.5f);
}

TEST(GraphProto, EveryAttrKindRoundTrips) {
  for (const AttrValue& v :
       {AttrValue(NoneAttr{}), AttrValue(true), AttrValue(int64_t{-7}), AttrValue(1e-12),
        AttrValue(std::string("float32")), AttrValue(IntList{1, -1, 0})}) {
    EXPECT_EQ(AttrValueFromProto(AttrValueToProto(v), "a"), v);
  }
  EXPECT_THROW(AttrValueFromProto(v1::AttrValue(), "a"), UserError);
}

// ---- malformed messages ----

v1::Graph Seed() {
  return GraphToProto(Parse(R"(fn (%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
    %0 = add(%x, %y);
    exp(%0)
  })"));
}

std::string ErrorOf(const v1::Graph& message, const Limits& limits = {}) {
  try {
    GraphFromProto(message, limits);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

struct BadCase {
  std::string name;
  std::function<void(v1::Graph&)> mutate;
  std::string message;
};

TEST(GraphProto, MalformedMessagesNameTheProblem) {
  std::vector<BadCase> cases = {
      {"unknown op", [](v1::Graph& g) { g.mutable_values(2)->mutable_node()->set_op("fft"); },
       "graph.values[2] (node %0 = fft): unknown operator 'fft'"},
      {"no op", [](v1::Graph& g) { g.mutable_values(2)->mutable_node()->clear_op(); },
       "graph.values[2] (node %0 = ): the node has no op"},
      {"forward reference",
       [](v1::Graph& g) { g.mutable_values(2)->mutable_node()->set_inputs(1, 3); },
       "graph.values[2] (node %0 = add).inputs[1]: refers to value 3; a node may only read "
       "values 0..1 before it"},
      {"self reference",
       [](v1::Graph& g) { g.mutable_values(3)->mutable_node()->set_inputs(0, 3); },
       "graph.values[3] (node %1 = exp).inputs[0]: refers to value 3"},
      {"negative input",
       [](v1::Graph& g) { g.mutable_values(2)->mutable_node()->set_inputs(0, -1); },
       "graph.values[2] (node %0 = add).inputs[0]: refers to value -1"},
      {"arity", [](v1::Graph& g) { g.mutable_values(3)->mutable_node()->add_inputs(0); },
       "graph.values[3] (node %1 = exp): exp takes 1 input, got 2"},
      {"param without type",
       [](v1::Graph& g) { g.mutable_values(0)->mutable_param()->clear_type(); },
       "graph.values[0] (parameter %x): the parameter has no type"},
      {"bad dtype",
       [](v1::Graph& g) {
         g.mutable_values(1)->mutable_param()->mutable_type()->set_dtype(v1::DTYPE_UNSPECIFIED);
       },
       "graph.values[1] (parameter %y).type.dtype: dtype 0 is not one of"},
      {"negative dimension",
       [](v1::Graph& g) { g.mutable_values(0)->mutable_param()->mutable_type()->set_shape(1, -3); },
       "graph.values[0] (parameter %x).type.shape[1]: dimension -3 is negative"},
      {"duplicate name", [](v1::Graph& g) { g.mutable_values(1)->mutable_param()->set_name("x"); },
       "graph.values[1] (parameter %x): %x is defined twice"},
      {"bad name", [](v1::Graph& g) { g.mutable_values(1)->mutable_param()->set_name("y z"); },
       "graph.values[1] (parameter %y z): name \"y z\" is not an identifier"},
      {"empty value", [](v1::Graph& g) { g.mutable_values(1)->clear_kind(); },
       "graph.values[1]: the value is neither a parameter, a constant nor a node"},
      {"unknown attribute",
       [](v1::Graph& g) {
         v1::Attr* a = g.mutable_values(3)->mutable_node()->add_attrs();
         a->set_name("speed");
         a->mutable_value()->set_i(3);
       },
       "graph.values[3] (node %1 = exp): "},
      {"attribute without value",
       [](v1::Graph& g) { g.mutable_values(3)->mutable_node()->add_attrs()->set_name("axis"); },
       "graph.values[3] (node %1 = exp).attrs[0] (axis): the attribute has no value"},
      {"wrong annotated type",
       [](v1::Graph& g) { g.mutable_values(3)->mutable_node()->mutable_type()->set_shape(0, 5); },
       "graph.values[3] (node %1 = exp): type annotation Tensor[(5, 3), float32] does not match "
       "inferred Tensor[(2, 3), float32]"},
      {"incompatible shapes",
       [](v1::Graph& g) { g.mutable_values(1)->mutable_param()->mutable_type()->set_shape(1, 4); },
       "graph.values[2] (node %0 = add): "},
      {"no outputs", [](v1::Graph& g) { g.clear_outputs(); },
       "graph.outputs: the graph has no outputs"},
      {"output out of range", [](v1::Graph& g) { g.set_outputs(0, 9); },
       "graph.outputs[0]: refers to value 9; the graph has 4 values"},
      {"two outputs, no tuple", [](v1::Graph& g) { g.add_outputs(2); },
       "graph.outputs: 2 outputs need tuple_output = true"},
      {"constant data size",
       [](v1::Graph& g) {
         v1::Constant* c = g.add_values()->mutable_constant();
         c->mutable_value()->mutable_type()->set_dtype(v1::DTYPE_FLOAT32);
         c->mutable_value()->mutable_type()->add_shape(2);
         c->mutable_value()->set_data("abc");
       },
       "graph.values[4] (constant).value.data: holds 3 bytes; a Tensor[(2,), float32] needs 8"},
      {"bool constant byte",
       [](v1::Graph& g) {
         v1::Constant* c = g.add_values()->mutable_constant();
         c->mutable_value()->mutable_type()->set_dtype(v1::DTYPE_BOOL);
         c->mutable_value()->set_data(std::string(1, '\x02'));
       },
       "graph.values[4] (constant).value.data: bool element 0 is 2, not 0 or 1"},
      {"constant without value", [](v1::Graph& g) { g.add_values()->mutable_constant(); },
       "graph.values[4] (constant): the constant has no value"},
  };
  for (const BadCase& c : cases) {
    v1::Graph message = Seed();
    c.mutate(message);
    std::string error = ErrorOf(message);
    EXPECT_EQ(error.rfind(c.message, 0), 0u)
        << c.name << "\n got: " << error << "\nwant: " << c.message;
  }
}

TEST(GraphProto, LimitsApply) {
  Limits tight;
  tight.max_nodes = 3;
  EXPECT_NE(ErrorOf(Seed(), tight).find("max_nodes = 3"), std::string::npos)
      << ErrorOf(Seed(), tight);
  Limits small;
  small.max_elements = 4;
  EXPECT_NE(ErrorOf(Seed(), small).find("graph.values[0] (parameter %x): "), std::string::npos);
}

// ---- schedules and plans ----

TEST(PlanProto, SchedulesRoundTripAndBadKnobsAreRefused) {
  Schedule s = Schedule::Parse("vec=16,tile_n=32,tile_m=8");
  v1::Schedule message = ScheduleToProto(s);
  ASSERT_EQ(message.knobs_size(), 3);
  EXPECT_EQ(message.knobs(0).name(), "tile_m");
  EXPECT_EQ(ScheduleFromProto(message, "s"), s);
  EXPECT_EQ(ScheduleFromProto(message, "s").ToString(), "tile_m=8,tile_n=32,vec=16");

  v1::Schedule dup = message;
  *dup.add_knobs() = message.knobs(0);
  try {
    ScheduleFromProto(dup, "plan.groups[0].schedule");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "plan.groups[0].schedule.knobs[3]: knob \"tile_m\" is given twice");
  }
  v1::Schedule bad;
  bad.add_knobs()->set_name("a=b");
  EXPECT_THROW(ScheduleFromProto(bad, "s"), UserError);
}

TEST(PlanProto, BuiltInPlansRoundTripByName) {
  Graph g = Parse(R"(fn (%x: Tensor[(12, 64, 32), float32], %y: Tensor[(12, 64, 32), float32],
                        %z: Tensor[(12, 64, 64), float32]) {
    %0 = nn.batch_matmul(%x, %y);
    %1 = ones_like(%0);
    where(%z, %0, %1)
  })");
  for (Plan plan : {UnfusedPlan(g), GreedyPlan(g)}) {
    SCOPED_TRACE(plan.name);
    if (!plan.groups.empty()) plan.groups[0].schedule.Set("tile_m", 8);
    v1::Plan message = PlanToProto(g, plan);
    EXPECT_EQ(message.name(), plan.name);
    EXPECT_EQ(message.groups(0).nodes(0), "%0");
    Plan back = PlanFromProto(g, message);
    ASSERT_EQ(back.groups.size(), plan.groups.size());
    for (size_t i = 0; i < plan.groups.size(); ++i) {
      EXPECT_EQ(back.groups[i].nodes, plan.groups[i].nodes);
      EXPECT_EQ(back.groups[i].schedule, plan.groups[i].schedule);
    }
  }
  v1::Plan wrong = PlanToProto(g, UnfusedPlan(g));
  wrong.mutable_groups(1)->set_nodes(0, "%x");
  try {
    PlanFromProto(g, wrong);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "plan.groups[1].nodes[0]: \"%x\" is not a node of the graph");
  }
  v1::Plan incomplete = PlanToProto(g, UnfusedPlan(g));
  incomplete.mutable_groups()->RemoveLast();
  EXPECT_THROW(PlanFromProto(g, incomplete), UserError);  // ValidatePlan: not a cover
}

TEST(PlanProto, AHorizontalGroupRoundTrips) {
  // Sibling denses reading %x: one group whose nodes share no edge (ir/fusion.h).
  Graph g = Parse(R"(fn (%x: Tensor[(8, 16), float32], %w0: Tensor[(24, 16), float32],
                        %b0: Tensor[(24,), float32], %w1: Tensor[(40, 16), float32]) {
    %0 = nn.dense(%x, %w0);
    %1 = add(%0, %b0);
    %2 = nn.dense(%x, %w1);
    (%1, %2)
  })");
  Plan plan{"tuned", {{{0, 1, 2}, Schedule::Parse("mr=4,nr=32")}}};
  plan.groups[0].nodes = {*g.FindByName("0"), *g.FindByName("1"), *g.FindByName("2")};
  v1::Plan message = PlanToProto(g, plan);
  ASSERT_EQ(message.groups_size(), 1);
  EXPECT_EQ(message.groups(0).nodes_size(), 3);
  Plan back = PlanFromProto(g, message);  // ValidatePlan inside: lowerable as one kernel
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(back.groups[0].nodes, plan.groups[0].nodes);
  EXPECT_EQ(back.groups[0].schedule, plan.groups[0].schedule);
}

TEST(PlanProto, AnAttentionGroupRoundTrips) {
  // batch_matmul, scale, softmax, batch_matmul: one group with three anchors
  // (ir/attention_pattern.h), its schedule knobs kept.
  Graph g = Parse(R"(fn (%q: Tensor[(2, 8, 4), float32], %k: Tensor[(2, 8, 4), float32],
                        %v: Tensor[(2, 4, 8), float32]) {
    %0 = nn.batch_matmul(%q, %k);
    %1 = multiply(%0, 0.5f);
    %2 = nn.softmax(%1, axis=-1);
    nn.batch_matmul(%2, %v)
  })");
  Plan plan{"tuned", {{{}, Schedule::Parse("k_block=32,rows=2")}}};
  for (const char* n : {"0", "1", "2", "3"}) plan.groups[0].nodes.push_back(*g.FindByName(n));
  v1::Plan message = PlanToProto(g, plan);
  ASSERT_EQ(message.groups_size(), 1);
  EXPECT_EQ(message.groups(0).nodes_size(), 4);
  Plan back = PlanFromProto(g, message);  // ValidatePlan inside: lowerable as one kernel
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(back.groups[0].nodes, plan.groups[0].nodes);
  EXPECT_EQ(back.groups[0].schedule, plan.groups[0].schedule);
}

TEST(PlanProto, ARecomputingPlanRoundTrips) {
  // x - mean in both groups that read it (ir/plan.h): each recomputes it, none stores it.
  Graph g = Parse(R"(fn (%x: Tensor[(4, 8), float32]) {
    %0 = mean(%x, axis=[-1], keepdims=True);
    %1 = subtract(%x, %0);
    %2 = multiply(%1, %1);
    %3 = mean(%2, axis=[-1], keepdims=True);
    divide(%1, %3)
  })");
  auto id = [&](const char* n) { return *g.FindByName(n); };
  Plan plan{"tuned",
            {{{id("0")}, {}},
             {{id("1"), id("2"), id("3")}, Schedule::Parse("vector=8")},
             {{id("1"), id("4")}, {}}}};
  Plan back = PlanFromProto(g, PlanToProto(g, plan));  // ValidatePlan inside
  ASSERT_EQ(back.groups.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(back.groups[i].nodes, plan.groups[i].nodes);
  EXPECT_EQ(RecomputedNodes(back.groups)[2], std::vector<ValueId>{id("1")});
  // Without the division's copy, the division reads a value no group stores.
  v1::Plan bad = PlanToProto(g, plan);
  bad.mutable_groups(2)->clear_nodes();
  bad.mutable_groups(2)->add_nodes("%4");
  EXPECT_THROW(PlanFromProto(g, bad), UserError);
}

}  // namespace
}  // namespace fusetune
