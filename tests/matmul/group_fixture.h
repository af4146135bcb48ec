// The common set-up of the matmul-family kernel tests: a group of a Relay snippet, the reference
// value of every value of the graph, and the group's inputs; one JIT for the whole test binary.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/runtime/thread_pool.h"

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

// The largest |got - want| over the elements; infinite where either is NaN (an element the
// kernel never wrote still holds its NaN poison).
inline double MaxAbsError(const Tensor& got, const Tensor& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double e = std::abs(got.Get(i) - want.Get(i));
    if (std::isnan(e)) return INFINITY;
    worst = std::max(worst, e);
  }
  return worst;
}

// Compiles the group with `emit(module, symbol)` (a template's Emit...Kernel), runs it at
// `threads` and returns the largest |kernel - reference| over its outputs. Float outputs are
// poisoned first, so an element the kernel never writes cannot pass.
template <class Emit>
double KernelMaxError(const GroupFixture& f, int threads, Emit emit) {
  Jit& jit = TheJit();
  auto module = jit.NewModule("group");
  std::string symbol = jit.UniqueName("group_kernel");
  emit(module->module(), symbol);
  jit.Verify(*module);
  jit.Optimize(*module, 3);
  auto code = jit.Load(std::move(module));
  auto fn = reinterpret_cast<KernelFn>(code->Lookup(symbol));

  std::vector<Tensor> outputs;
  std::vector<void*> buffers;
  for (const Tensor& t : f.inputs) buffers.push_back(const_cast<void*>(t.data()));
  for (ValueId v : f.group.outputs) {
    outputs.emplace_back(f.graph.value(v).type);
    if (outputs.back().dtype() == DType::kFloat32)
      for (int64_t i = 0; i < outputs.back().size(); ++i) outputs.back().Set(i, NAN);
    buffers.push_back(outputs.back().data());
  }
  runtime::SetNumThreads(threads);
  fn(buffers.data());
  runtime::SetNumThreads(1);
  double worst = 0;
  for (size_t o = 0; o < outputs.size(); ++o)
    worst = std::max(worst, MaxAbsError(outputs[o], f.values[f.group.outputs[o]]));
  return worst;
}

// Runs a compiled group once at `threads` on the reference's values of its inputs, its one output
// poisoned first, and returns the largest |kernel - reference|. With `bind`, the kernel is bound
// to those inputs first (weights packed once: wpack) and unbound after.
inline double CompiledMaxError(const Graph& graph, const FusedGroup& group,
                               const CompiledKernel& kernel, const std::vector<Tensor>& values,
                               int threads, bool bind = false) {
  std::vector<void*> buffers;
  for (ValueId v : group.inputs) buffers.push_back(const_cast<void*>(values[v].data()));
  Tensor out(graph.value(group.outputs[0]).type);
  for (int64_t i = 0; i < out.size(); ++i) out.Set(i, NAN);
  buffers.push_back(out.data());
  if (bind) kernel.Bind(buffers.data());
  runtime::SetNumThreads(threads);
  kernel.Run(buffers.data());
  runtime::SetNumThreads(1);
  if (bind) kernel.Unbind(buffers.data());
  return MaxAbsError(out, values[group.outputs[0]]);
}

}  // namespace fusetune::codegen::test
