#pragma once
// Reads of a matmul group's extra inputs (the leaves of its inlined prologue and epilogue
// expressions, ir/group_expr.h) at given coordinates. Index maps are lowered with a small lattice
// that keeps the common cases cheap along the 16 lanes of a tile row (the last output axis):
//   uniform  the same index in every lane (a per-row value)       -> one scalar load
//   unit     base + lane (the leaf is contiguous along the row)   -> one (masked) vector load
//   vector   anything else                                        -> a masked gather
#include <span>
#include <vector>

#include "ir/group_expr.h"
#include "ir/tensor.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace fusetune::codegen {

// Every coordinate is a scalar i64: a scalar load, in register form (float, i32, i1).
// `leaf_shape` is the shape of the leaf's value; kIndex leaves need no buffer.
llvm::Value* LoadLeafScalar(llvm::IRBuilderBase& b, llvm::Value* base, const ExprLeaf& leaf,
                            const Shape& leaf_shape, std::span<llvm::Value* const> coords);

// `coords` are scalar i64 except the last, whose lane i is `last_start` + i (the last value of
// `coords` is ignored). Lanes where `mask` (<16 x i1>, may be null = all) is false are not read.
// `start_align`: a known divisor of `last_start` (a multiple of 16 lets a split of the last axis
// into segments of a multiple of 16 read one vector). Returns a scalar (uniform) or a 16-lane
// vector, in register form.
llvm::Value* LoadLeafRow(llvm::IRBuilderBase& b, llvm::Value* base, const ExprLeaf& leaf,
                         const Shape& leaf_shape, std::span<llvm::Value* const> coords,
                         llvm::Value* last_start, llvm::Value* mask, int64_t start_align = 1);

// The mask of the 16 lanes start + i < limit (`start`, `limit` scalar i64): the lanes of a row
// read from `start` that lie inside it.
llvm::Value* LanesBelow(llvm::IRBuilderBase& b, llvm::Value* start, llvm::Value* limit);

// The address of lane 0 of LoadLeafRow's read when it is one contiguous vector load (what a
// prefetch wants), or nullptr when the read is uniform, a gather, or not a load.
llvm::Value* LeafRowAddress(llvm::IRBuilderBase& b, llvm::Value* base, const ExprLeaf& leaf,
                            const Shape& leaf_shape, std::span<llvm::Value* const> coords,
                            llvm::Value* last_start, int64_t start_align = 1);

}  // namespace fusetune::codegen
