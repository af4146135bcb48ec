#pragma once
// Runs a whole graph under a Plan (ir/plan.h) as its sequence of JIT-compiled kernels. A value
// that crosses a kernel boundary is stored (values inside a group never are): a graph output in
// a buffer of its own, the others in blocks reused once their last reader has run
// (worker/buffer_plan.h).
// Times each kernel and the whole sequence; worker/output_check.h judges the outputs. No LLVM
// header: code generation is behind worker/codegen/compile.h.
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"
#include "ir/tensor.h"
#include "worker/codegen/compile.h"
#include "worker/kernel_cache.h"
#include "worker/timing.h"

namespace fusetune {

struct KernelTiming {
  std::vector<ValueId> nodes;
  Schedule schedule;
  Timing timing;
  codegen::CompileTimes compile;
  bool shared = false;  // its kernel was compiled for an earlier group (the same key), not for it
};

struct PlanProfile {
  std::vector<KernelTiming> kernels;
  Timing total;  // the whole sequence of kernels per call
};

// A kernel the executor needs for one group of a plan: its key in a KernelCache and what to
// compile under it. The executor and whoever compiles its kernels ahead (worker/job_runner.h)
// both take them from here, so a kernel compiled ahead is the one the executor would compile.
struct KernelOrder {
  std::string key;
  KernelShare share;  // which other groups' kernels can serve this one
  FusedGroup group;
  Schedule schedule;
};
// One per group of `plan`, in plan order. Throws UserError for a group that is not lowerable.
std::vector<KernelOrder> PlanKernels(const Graph& graph, const Plan& plan, const codegen::Jit& jit,
                                     int threads);
// Compiles `order`'s kernel as the executor would.
std::shared_ptr<const codegen::CompiledKernel> CompileKernel(const Graph& graph,
                                                             const KernelOrder& order,
                                                             codegen::Jit& jit, int threads);

class PlanExecutor {
 public:
  // Validates the plan and compiles its kernels for `threads` threads (which it also sets on the
  // runtime pool): one per distinct KernelKey, shared by the groups with that key (a deep
  // model's identical layers), taking the kernels `kernels` already holds from there and adding
  // the others; those it compiles, on up to `compile_threads` threads at once. Throws UserError
  // for a bad plan or a group the code generator refuses.
  PlanExecutor(const Graph& graph, const Plan& plan, codegen::Jit& jit, int threads,
               KernelCache* kernels = nullptr, int compile_threads = 1);
  ~PlanExecutor();

  // Parameter values, in either form ir/interpreter.h accepts (one per parameter, or one per
  // parameter without data). Types must match exactly.
  void SetInputs(std::span<const Tensor> inputs);
  // The graph's output tensors themselves (not copies; an empty Tensor for one kept in a shared
  // block), and writing the outputs into such tensors of another executor of the same graph
  // instead of its own (before SetInputs). Plans timed against each other then read and write
  // the same memory and only their kernels differ: with outputs of their own, one plan of the
  // seed at S = 512 timed 3-9% apart from itself (BENCHMARKS.md).
  std::vector<Tensor> OutputBuffers() const;
  void UseOutputs(std::span<const Tensor> buffers);
  // Runs every kernel once, in plan order.
  void Run();
  // The graph's outputs after Run (copies).
  std::vector<Tensor> Outputs() const;
  // Times the whole sequence, and each kernel as `kernel_times` says. A plan of one kernel is
  // timed once: its kernel's figure is the whole's.
  enum class KernelTimes {
    kSeparately,  // each kernel alone, like the whole (`fusetune run`'s per-kernel figures)
    kInSequence,  // from clock reads between the kernels during the whole's own repeats
                  // (jobs, where only the whole decides and the kernels' figures are for
                  // calibration): no extra runs
  };
  PlanProfile Measure(const TimingOptions& options,
                      KernelTimes kernel_times = KernelTimes::kSeparately);

  int num_kernels() const;
  // Kernels compiled: one per distinct key not found in the cache (at most num_kernels()).
  int num_compiled() const { return compiled_; }
  // Blocks the values between kernels share (the graph's outputs have their own buffers).
  int num_shared_blocks() const { return static_cast<int>(blocks_.size()); }

 private:
  struct Step;
  void UnbindAll();
  void AllocateOutputs();
  void* BufferOf(ValueId v);  // where v is: its own tensor, or its shared block
  const Graph& graph_;
  Plan plan_;
  int threads_;
  std::vector<Step> steps_;
  std::vector<Tensor> values_;  // by ValueId: params, constants, and the graph's outputs
  std::vector<Tensor> blocks_;  // shared by the other values kernels write
  std::unordered_map<ValueId, int> block_of_;
  int compiled_ = 0;
};

}  // namespace fusetune
