#pragma once
// Horizontal fusion (ir/fusion.h): sibling products that read the same A, e.g. the Q, K and V
// projections of attention, computed by one GEMM kernel over their weights side by side:
//
//   A · [B1 | B2 | B3]   one virtual product of N = N1 + N2 + N3 columns (each part's columns
//                        start at a multiple of the register tile's width nr, so no tile and no
//                        packed panel straddles two parts; the padding columns are zero)
//   packing              each B block is packed from the weights it covers, by the same runtime
//                        transpose as a single product's
//   epilogue             each tile vector goes to the part whose columns it holds: that part's
//                        own epilogue (bias add, ...) stores into that part's own outputs
//
// One kernel instead of several: one parallel launch, tasks over all the columns (more work to
// share between threads), and A read by every part while it is in cache. Partial sums would need
// a buffer as wide as all parts together, so the kernel always uses one k block (kc = K).
#include <string>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "worker/codegen/target.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace fusetune::codegen {

// Emits `void symbol(void** buffers)` for a horizontal group (FusedGroup::Horizontal()); the
// schedule's knobs are the matmul template's (ir/matmul_schedule.h), resolved for the virtual
// product. Throws UserError as EmitMatmulKernel does.
llvm::Function* EmitHorizontalMatmulKernel(llvm::Module& module, const Graph& graph,
                                           const FusedGroup& group, const Schedule& schedule,
                                           const TargetInfo& target, const std::string& symbol,
                                           int threads);

}  // namespace fusetune::codegen
