#pragma once
// Kernel IR: the small loop-nest language templates emit and lower_llvm.cc turns into LLVM IR.
//
//   kernel := buffers (parameters in ABI order, then locals) + one statement
//   stmt   := for VAR in [0, extent) {kind} stmt | store BUF[index] = expr | block | alloc BUF {
//   stmt } expr   := int | VAR | index arithmetic (+ - * floordiv mod min max, on int64)
//           | load BUF[index] | eval(ScalarExpr, args...)
//
// Loop extents are compile-time constants (shapes are static) and every loop starts at 0, which
// lets the lowering decide statically how each load behaves in a vectorized loop:
//   - vectorized(W): W consecutive iterations run as one vector iteration; the remainder runs once
//     more with a lane mask (masked loads and stores), so odd sizes have no scalar tail. Inside,
//     a load whose index does not depend on the loop variable is a scalar load (broadcast when
//     combined), one with stride 1 is a vector load, anything else a gather.
//   - parallel: the body is outlined and run by the runtime pool over contiguous chunks. Only the
//     outermost parallel loop is parallel; nested ones run serially.
//   - unrolled: the body is emitted `extent` times with the variable bound to a constant.
// Floating-point and element arithmetic are ScalarExprs (ir/scalar_expr.h) whose kArg i is the
// i-th argument of the eval node: the same trees the op catalog defines, so templates inline op
// definitions directly. Local buffers are per-thread stack arrays (accumulators, row caches).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/scalar_expr.h"

namespace fusetune::codegen {

enum class KOp { kInt, kVar, kAdd, kSub, kMul, kFloorDiv, kMod, kMin, kMax, kLoad, kEval };

struct KNode;
using KExpr = std::shared_ptr<const KNode>;

struct KNode {
  KOp op;
  int64_t value = 0;        // kInt
  int var = -1;             // kVar
  int buffer = -1;          // kLoad
  ScalarExpr scalar;        // kEval
  std::vector<KExpr> args;  // operands; kLoad: {index}; kEval: the ScalarExpr's args
  // kVar, index arithmetic and kInt are int64; kLoad has the buffer's dtype; kEval the scalar's.
};

enum class LoopKind { kSerial, kParallel, kVectorized, kUnrolled };

struct KStmtNode;
using KStmt = std::shared_ptr<const KStmtNode>;

enum class KStmtKind { kFor, kStore, kBlock, kAlloc };

struct KStmtNode {
  KStmtKind kind;
  // kFor
  int var = -1;
  int64_t extent = 0;
  LoopKind loop = LoopKind::kSerial;
  int width = 1;  // kVectorized: lanes
  // kStore / kAlloc
  int buffer = -1;
  KExpr index, value;
  // kFor / kAlloc: one body; kBlock: the statements
  std::vector<KStmt> body;
};

struct KBuffer {
  std::string name;
  DType dtype = DType::kFloat32;
  int64_t size = 0;      // elements
  int param_index = -1;  // position in `void** buffers`, or -1 for a local buffer
};

struct Kernel {
  std::string name;
  std::vector<KBuffer> buffers;
  std::vector<std::string> var_names;
  KStmt body;

  int AddParam(const std::string& name, DType dtype, int64_t size);
  int AddLocal(const std::string& name, DType dtype, int64_t size);
  int NewVar(const std::string& name);
  int num_params() const;
};

// Builders. Index arithmetic folds constants and identities so printed kernels stay readable.
namespace kir {
KExpr Int(int64_t v);
KExpr Var(int var);
KExpr Add(KExpr a, KExpr b);
KExpr Sub(KExpr a, KExpr b);
KExpr Mul(KExpr a, KExpr b);
KExpr FloorDiv(KExpr a, KExpr b);
KExpr Mod(KExpr a, KExpr b);
KExpr Min(KExpr a, KExpr b);
KExpr Max(KExpr a, KExpr b);
KExpr Load(int buffer, KExpr index);
KExpr Eval(ScalarExpr scalar, std::vector<KExpr> args);

KStmt For(int var, int64_t extent, LoopKind kind, KStmt body, int width = 1);
KStmt Store(int buffer, KExpr index, KExpr value);
KStmt Block(std::vector<KStmt> stmts);
KStmt Alloc(int buffer, KStmt body);
}  // namespace kir

// The dtype of an expression's value in `kernel` (index arithmetic: int32 stands for int64).
DType ExprDType(const Kernel& kernel, const KExpr& e);

// Human-readable listing (for `fusetune kernel --print-ir` and golden tests).
std::string PrintKernel(const Kernel& kernel);
std::string PrintScalarExpr(const ScalarExpr& e, const std::vector<std::string>& args);

}  // namespace fusetune::codegen
