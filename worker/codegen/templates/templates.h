#pragma once
// The kernel-IR templates for non-matmul groups (ir/fusion.h GroupTemplate), each building one
// Kernel whose parameters follow kernel_abi.h. Schedule knobs (all optional):
//
//   vector    lanes of the vectorized innermost loop (16 = 512-bit on AVX-512; 8, 4; 1 = scalar)
//   parallel  1: the outer loop runs on the thread pool; 0: serial
//   tile      element-wise only; 1 (default): when a read gathers along the innermost loop (a
//             transpose), visit blocks of T outer positions x W columns so gathered lines are
//             reused from L1; 0: plain row order
//
// kElementwise  iterate the sink's output; adjacent axes that every read sees as one contiguous
//               range are collapsed into one loop, the innermost is vectorized (masked tail),
//               the outer ones flattened into one parallel loop.
// kReduce       sum/max/min/mean. Last input axis reduced: per output element, a vector
//               accumulator along that axis, horizontal combine, epilogue, scalar store. Last axis
//               kept: a row of accumulators vectorized along it, reduced axes looped outside.
// kComposite    nn.softmax / nn.layer_norm as whole-row kernels: the prologue is evaluated once
//               per element into a row cache, then max/sum (mean/variance) passes, then the
//               normalised row goes through the epilogue to the outputs.
// kMatmul groups are not here: templates/matmul.h emits their LLVM IR directly.
#include <string>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "worker/codegen/kernel_ir.h"
#include "worker/codegen/target.h"

namespace fusetune::codegen {

struct TemplateKnobs {
  int vector = 16;
  bool parallel = true;
  bool tile = true;     // element-wise: tile outer x inner when the inner loop gathers (transposes)
  bool online = false;  // composite: a row's statistics in one pass (composite.cc)
};

// Reads the knobs `templ` understands; throws UserError on an unknown key or a bad value.
TemplateKnobs ReadKnobs(const Schedule& schedule, GroupTemplate templ, const TargetInfo& target);

Kernel BuildElementwiseKernel(const Graph& graph, const FusedGroup& group,
                              const TemplateKnobs& knobs, const std::string& name);
Kernel BuildReduceKernel(const Graph& graph, const FusedGroup& group, const TemplateKnobs& knobs,
                         const std::string& name);
Kernel BuildCompositeKernel(const Graph& graph, const FusedGroup& group, const TemplateKnobs& knobs,
                            const std::string& name);

}  // namespace fusetune::codegen
