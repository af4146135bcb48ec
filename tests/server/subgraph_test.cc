// Subgraph maps its values to the original graph and back, so plans cross between the two
// without reading node names.
#include "ir/subgraph.h"

#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "ir/text/signature.h"

namespace fusetune {
namespace {

TEST(Subgraph, MapsEveryValueBothWaysAndCarriesPlansAcross) {
  Graph g = ParseRelay(R"(fn (%x: Tensor[(4, 8), float32], %y: Tensor[(4, 8), float32]) {
  %0 = exp(%x);
  %1 = add(%0, %y);
  %2 = multiply(%1, 2f);
  %3 = negative(%2);
  %4 = sigmoid(%3);
  (%4, %1)
})",
                       "g.relay");
  const ValueId n1 = *g.FindByName("1"), n2 = *g.FindByName("2"), n3 = *g.FindByName("3");
  CanonicalForm canon = Canonicalize(g, std::vector<ValueId>{n2, n1, n3});
  Subgraph sub = ExtractSubgraph(g, canon.inputs, canon.nodes, canon.outputs);
  ASSERT_EQ(sub.to_original.size(), sub.graph.values().size());
  for (size_t v = 0; v < sub.graph.values().size(); ++v) {
    const ValueId original = sub.ToOriginal(static_cast<ValueId>(v));
    EXPECT_EQ(sub.ToSub(original), static_cast<ValueId>(v));
    if (sub.graph.values()[v].kind == ValueKind::kNode) {
      EXPECT_EQ(sub.graph.values()[v].op->name, g.value(original).op->name);
    }
  }
  for (size_t i = 0; i < canon.nodes.size(); ++i)
    EXPECT_EQ(sub.graph.value(sub.ToSub(canon.nodes[i])).name, "n" + std::to_string(i));

  Plan plan{"p", {{{n3}, {}}, {{n1, n2}, Schedule::Parse("vec=4")}}};
  Plan inside = sub.PlanToSub(plan);
  ASSERT_EQ(inside.groups.size(), 2u);
  EXPECT_EQ(inside.groups[0].nodes.size(), 2u) << "ordered to run: {%1, %2} before {%3}";
  EXPECT_EQ(inside.groups[0].schedule.ToString(), "vec=4");
  ValidatePlan(sub.graph, inside);
  Plan back = sub.PlanToOriginal(inside);
  EXPECT_EQ(back.groups[0].nodes, (std::vector<ValueId>{n1, n2}));
  EXPECT_EQ(back.groups[1].nodes, (std::vector<ValueId>{n3}));
}

}  // namespace
}  // namespace fusetune
