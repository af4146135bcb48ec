#pragma once
// The kMatmul template (ir/fusion.h): a fused group with one dense / batch_matmul / matmul anchor,
// element-wise/injective producers of its operands (the prologue) and element-wise/broadcast
// consumers of its result (the epilogue), lowered to one kernel:
//
//   prologue   evaluated element by element while the operand is packed (inside the call)
//   product    register-blocked micro-kernel over packed B (matmul_emit.h)
//   epilogue   every group output computed from the accumulator tile, row by row, and stored
//              straight from registers: no extra buffer and no second pass over the output, so a
//              fused epilogue leaves the anchor's memory behaviour as it was (TVM's seed lesson).
//              Extra inputs (a bias, the condition of a where) are read at the tile's coordinates;
//              select is a vector select, never a branch.
//
// Operands and the anchor's result must be float32 (out_dtype unset); epilogue values may be any
// supported dtype.
#include <optional>
#include <string>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "ir/plan.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/target.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace fusetune::codegen {

// The anchor's product layout.
MatmulLayout GroupMatmulLayout(const Graph& graph, const FusedGroup& group);

// The weight the group's kernel reads pre-packed when weights are packed: B, when it is a group
// input that holds data (a weight, not computed by a prologue) and the product has batch 1.
std::optional<PackedWeight> MatmulPackedWeight(const Graph& graph, const FusedGroup& group,
                                               const Schedule& schedule, int threads);

// Emits `void symbol(void** buffers)` (kernel_abi.h: group inputs, then outputs) into `module`.
// `threads` is the thread count the kernel will run with: it resolves the schedule's unset knobs
// (cache blocks that give every thread work). With `pack_weights`, the MatmulPackedWeight() operand
// is read packed instead of being packed in every call. Throws UserError naming what the template
// does not handle (an operand that is not float32, a bad schedule knob).
llvm::Function* EmitMatmulKernel(llvm::Module& module, const Graph& graph, const FusedGroup& group,
                                 const Schedule& schedule, const TargetInfo& target,
                                 const std::string& symbol, int threads, bool pack_weights);

}  // namespace fusetune::codegen
