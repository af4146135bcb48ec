#pragma once
// Fused group -> running kernel: template (by GroupTemplate) -> kernel IR -> LLVM IR -> O3 ->
// ORC JIT; the matmul template skips the kernel IR and emits LLVM IR directly. The kernel follows
// kernel_abi.h: buffers = group inputs then outputs. No LLVM header here, so the executor and
// tools use it without LLVM's include path.
#include <memory>
#include <string>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/kernel_ir.h"

namespace fusetune::codegen {

struct CompileTimes {
  double lower_ms = 0;     // template to LLVM IR (through the kernel IR, except for matmul)
  double optimize_ms = 0;  // the O3 pipeline
  double codegen_ms = 0;   // instruction selection and JIT linking (first lookup)
  double total_ms() const { return lower_ms + optimize_ms + codegen_ms; }
};

// A kernel in the JIT; removed from it when destroyed.
class CompiledKernel {
 public:
  CompiledKernel(std::unique_ptr<JitCode> code, KernelFn fn, std::string symbol, CompileTimes times)
      : code_(std::move(code)), fn_(fn), symbol_(std::move(symbol)), times_(times) {}
  void Run(void** buffers) const { fn_(buffers); }
  KernelFn fn() const { return fn_; }
  const std::string& symbol() const { return symbol_; }
  const CompileTimes& times() const { return times_; }

 private:
  std::unique_ptr<JitCode> code_;
  KernelFn fn_;
  std::string symbol_;
  CompileTimes times_;
};

struct CompileOptions {
  int opt_level = 3;
  int threads = 0;  // threads the kernel will run with (matmul blocking); 0: the runtime's current
};

// The kernel IR of a non-matmul group (the matmul template emits LLVM IR directly, so a kMatmul
// group is a UserError, as are a bad schedule knob and a group the templates do not handle).
Kernel BuildGroupKernel(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                        const TargetInfo& target, const std::string& name);

// LLVM IR of the group's kernel as `symbol`, verified, not yet optimised.
std::unique_ptr<JitModule> EmitGroupModule(const Graph& graph, const FusedGroup& group,
                                           const Schedule& schedule, Jit& jit,
                                           const std::string& symbol,
                                           const CompileOptions& options = {});

std::unique_ptr<CompiledKernel> CompileGroup(const Graph& graph, const FusedGroup& group,
                                             const Schedule& schedule, Jit& jit,
                                             const CompileOptions& options = {});

}  // namespace fusetune::codegen
