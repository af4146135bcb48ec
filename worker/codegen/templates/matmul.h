#pragma once
// The kMatmul template (ir/fusion.h): a fused group with one dense / batch_matmul / matmul anchor,
// element-wise/injective producers of its operands (the prologue) and element-wise/broadcast
// consumers of its result (the epilogue), lowered to one kernel:
//
//   prologue   evaluated while the operand is packed (inside the call): A along k 16 lanes at a
//              time (once per row block when B is packed at bind time), else element by element
//   product    register-blocked micro-kernel over packed B (matmul_emit.h)
//   epilogue   every group output computed from the accumulator tile, row by row, and stored
//              straight from registers: no extra buffer and no second pass over the output, so a
//              fused epilogue leaves the anchor's memory behaviour as it was (TVM's seed lesson).
//              Extra inputs (a bias, the condition of a where) are read at the tile's coordinates;
//              select is a vector select, never a branch.
//
// Operands and the anchor's result must be float32 (out_dtype unset); epilogue values may be any
// supported dtype.
#include <string>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "ir/plan.h"
#include "worker/codegen/target.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace fusetune::codegen {

// The anchor's product layout (for a horizontal group, its first part's).
MatmulLayout GroupMatmulLayout(const Graph& graph, const FusedGroup& group);

// Emits `void symbol(void** buffers)` (kernel_abi.h: group inputs, then outputs) into `module`;
// a horizontal group (FusedGroup::Horizontal()) goes to EmitHorizontalMatmulKernel.
// `threads` is the thread count the kernel will run with: it resolves the schedule's unset knobs
// (cache blocks that give every thread work). Throws UserError naming what the template does not
// handle (an operand that is not float32, a bad schedule knob).
llvm::Function* EmitMatmulKernel(llvm::Module& module, const Graph& graph, const FusedGroup& group,
                                 const Schedule& schedule, const TargetInfo& target,
                                 const std::string& symbol, int threads);

}  // namespace fusetune::codegen
