// The common set-up of the matmul-family kernel tests: a group of a Relay snippet, the reference
// value of every value of the graph, and the group's inputs; one JIT for the whole test binary.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/jit.h"

namespace fusetune::codegen::test {

inline Jit& TheJit() {
  static Jit jit;
  return jit;
}

struct GroupFixture {
  Graph graph;
  FusedGroup group;
  std::vector<Tensor> values;  // reference value of every ValueId
  std::vector<Tensor> inputs;  // kernel inputs, in group.inputs order
};

// The group of the nodes `names` (e.g. "0", "1") of `text`, with random inputs drawn from `seed`.
inline GroupFixture PrepareGroup(const std::string& text, const std::vector<std::string>& names,
                                 uint64_t seed) {
  GroupFixture f{ParseRelay(text, "test.relay"), {}, {}, {}};
  std::vector<ValueId> nodes;
  for (const std::string& n : names) nodes.push_back(f.graph.FindByName(n).value());
  std::string why;
  auto group = AnalyzeGroup(f.graph, nodes, &why);
  EXPECT_TRUE(group.has_value()) << why;
  if (!group) return f;
  f.group = *group;
  f.values = InterpretAll(f.graph, RandomInputs(f.graph, seed));
  for (ValueId v : f.group.inputs) f.inputs.push_back(f.values[v]);
  return f;
}

}  // namespace fusetune::codegen::test
