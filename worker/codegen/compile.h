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
#include "worker/codegen/bound_weights.h"
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
  CompiledKernel(std::unique_ptr<JitCode> code, KernelFn fn, std::string symbol, CompileTimes times,
                 std::unique_ptr<BoundWeights> weights = nullptr)
      : code_(std::move(code)),
        fn_(fn),
        symbol_(std::move(symbol)),
        times_(times),
        weights_(std::move(weights)) {}
  void Run(void** buffers) const { fn_(buffers); }
  // Binds the kernel to the inputs in `buffers` (kernel_abi.h): a kernel that packs its weights
  // ahead (wpack) packs them now, so later Runs with these buffers skip that; others do nothing.
  // Call again after changing a bound input's contents. Unbind frees what Bind kept for them.
  void Bind(void** buffers) const {
    if (weights_) weights_->Bind(buffers);
  }
  void Unbind(void** buffers) const {
    if (weights_) weights_->Unbind(buffers);
  }
  bool packs_weights_ahead() const { return weights_ != nullptr; }
  KernelFn fn() const { return fn_; }
  const std::string& symbol() const { return symbol_; }
  const CompileTimes& times() const { return times_; }

 private:
  std::unique_ptr<JitCode> code_;
  KernelFn fn_;
  std::string symbol_;
  CompileTimes times_;
  std::unique_ptr<BoundWeights> weights_;  // destroyed first: the code's tables point into it
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
