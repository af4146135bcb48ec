#include "worker/codegen/compile.h"

#include <chrono>

#include <fmt/format.h>
#include <llvm/IR/Module.h>

#include "ir/error.h"
#include "worker/codegen/lower_llvm.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/attention.h"
#include "worker/codegen/templates/matmul.h"
#include "worker/codegen/templates/templates.h"

namespace fusetune::codegen {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// float16 / bfloat16 parse, but no kernel computes them yet: refuse them by name.
void CheckDTypes(const Graph& graph, const FusedGroup& group) {
  auto check = [&](ValueId v) {
    DType d = graph.value(v).type.dtype;
    if (!IsSupportedForCompute(d)) {
      throw UserError(fmt::format("{} is {}; kernels compute float32, int32 and bool only",
                                  graph.RefName(v), DTypeName(d)));
    }
  };
  for (ValueId v : group.inputs) check(v);
  for (ValueId v : group.nodes) check(v);
}

}  // namespace

Kernel BuildGroupKernel(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                        const TargetInfo& target, const std::string& name) {
  CheckDTypes(graph, group);
  switch (group.templ) {
    case GroupTemplate::kElementwise:
      return BuildElementwiseKernel(graph, group, ReadKnobs(schedule, group.templ, target), name);
    case GroupTemplate::kReduce:
      return BuildReduceKernel(graph, group, ReadKnobs(schedule, group.templ, target), name);
    case GroupTemplate::kComposite:
      return BuildCompositeKernel(graph, group, ReadKnobs(schedule, group.templ, target), name);
    case GroupTemplate::kMatmul:
      throw UserError("a matmul group has no kernel IR: its template emits LLVM IR directly");
    case GroupTemplate::kAttention:
      throw UserError("an attention group has no kernel IR: its template emits LLVM IR directly");
  }
  throw UserError("unknown group template");
}

std::unique_ptr<JitModule> EmitGroupModule(const Graph& graph, const FusedGroup& group,
                                           const Schedule& schedule, Jit& jit,
                                           const std::string& symbol,
                                           const CompileOptions& options) {
  CheckDTypes(graph, group);
  auto module = jit.NewModule(symbol);
  if (group.templ == GroupTemplate::kMatmul || group.Attention()) {
    int threads = options.threads > 0 ? options.threads : runtime::NumThreads();
    if (group.Attention())
      EmitAttentionKernel(module->module(), graph, group, schedule, jit.target(), symbol, threads);
    else
      EmitMatmulKernel(module->module(), graph, group, schedule, jit.target(), symbol, threads);
    jit.Verify(*module);
    return module;
  }
  Kernel kernel = BuildGroupKernel(graph, group, schedule, jit.target(), symbol);
  LowerKernel(kernel, jit, *module, symbol);
  return module;
}

std::unique_ptr<CompiledKernel> CompileGroup(const Graph& graph, const FusedGroup& group,
                                             const Schedule& schedule, Jit& jit,
                                             const CompileOptions& options) {
  CompileTimes times;
  auto start = std::chrono::steady_clock::now();
  std::string symbol = jit.UniqueName("fusetune_kernel");
  std::unique_ptr<JitModule> module = EmitGroupModule(graph, group, schedule, jit, symbol, options);
  times.lower_ms = MsSince(start);
  const bool binds = module->module().getFunction(symbol + ".bind") != nullptr;
  start = std::chrono::steady_clock::now();
  jit.Optimize(*module, options.opt_level);
  times.optimize_ms = MsSince(start);
  start = std::chrono::steady_clock::now();
  std::unique_ptr<JitCode> code = jit.Load(std::move(module));
  auto fn = reinterpret_cast<KernelFn>(code->Lookup(symbol));  // compiles (ORC is lazy)
  std::unique_ptr<BoundWeights> weights;
  if (binds) {
    auto bind = reinterpret_cast<KernelBindFn>(code->Lookup(symbol + ".bind"));
    const auto* info = static_cast<const int64_t*>(code->Lookup(symbol + ".bind_info"));
    weights = std::make_unique<BoundWeights>(bind, static_cast<int>(info[0]), info[1]);
  }
  times.codegen_ms = MsSince(start);
  return std::make_unique<CompiledKernel>(std::move(code), fn, symbol, times, std::move(weights));
}

}  // namespace fusetune::codegen
