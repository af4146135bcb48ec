#pragma once
// Lowering of ir ScalarExprs (the op catalog's element-wise definitions) to LLVM values. Used by
// the kernel-IR lowering for every `eval` node and by the matmul template for its epilogue, which
// applies the inlined epilogue expression to accumulator vectors before the store.
//
// Value representation in registers: float32 -> float, int32 -> i32, bool -> i1; vectors of
// them for vector code (<16 x float> on AVX-512). In memory bool is one byte (see
// LoadElement / StoreElement). Arguments may mix scalars and vectors of one lane count: a scalar
// is broadcast where it meets a vector, so uniform values (a per-row max, a bias element) stay
// scalar until needed. Transcendentals go through vector_math.h (polynomials, no libm calls).
#include <span>

#include "ir/dtype.h"
#include "ir/scalar_expr.h"

namespace llvm {
class IRBuilderBase;
class LLVMContext;
class Type;
class Value;
}  // namespace llvm

namespace fusetune::codegen {

// Lowers `expr` with kArg i := args[i] (converted to the kArg's dtype when the given value has
// another representation: an i64 index becomes i32 or float, a float becomes i32 by truncation).
// Shared subtrees are lowered once per call.
llvm::Value* LowerScalarExpr(llvm::IRBuilderBase& builder, const ScalarExpr& expr,
                             std::span<llvm::Value* const> args);

// One ScalarOp on already-lowered operands (same rules as above); `result` is the node's dtype.
llvm::Value* LowerScalarOp(llvm::IRBuilderBase& builder, ScalarOp op, DType result, double constant,
                           std::span<llvm::Value* const> operands,
                           std::span<const DType> operand_dtypes);

// Register type of one element of `dtype` (float, i32, i1).
llvm::Type* RegisterType(llvm::LLVMContext& context, DType dtype);
// Memory type of one element (float, i32, i8).
llvm::Type* MemoryType(llvm::LLVMContext& context, DType dtype);
// Converts `value` (scalar or vector, any of float/i32/i1/i64) to `dtype`'s register form with
// the catalog's cast semantics (float->int truncates and saturates, NaN -> 0; ->bool is != 0).
llvm::Value* ConvertTo(llvm::IRBuilderBase& builder, llvm::Value* value, DType dtype);
// Memory <-> register form (bool: i8 <-> i1; others unchanged).
llvm::Value* ToRegister(llvm::IRBuilderBase& builder, llvm::Value* loaded, DType dtype);
llvm::Value* ToMemory(llvm::IRBuilderBase& builder, llvm::Value* value, DType dtype);
// Broadcasts a scalar to `lanes` lanes (returns vectors unchanged); lanes 0 = leave scalar.
llvm::Value* Splat(llvm::IRBuilderBase& builder, llvm::Value* value, unsigned lanes);

}  // namespace fusetune::codegen
