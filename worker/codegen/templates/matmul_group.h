#pragma once
// What the matmul template (matmul.cc: one product) and horizontal fusion (horizontal_matmul.cc:
// sibling products as one GEMM) share: the kernel's buffer numbering and the epilogue that
// computes a matmul group's outputs from the accumulator tile.
#include <functional>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/group_expr.h"
#include "worker/codegen/templates/matmul_emit.h"

namespace fusetune::codegen {

// Buffer numbers of the kernel ABI (kernel_abi.h): group inputs, then outputs.
class BufferMap {
 public:
  explicit BufferMap(const FusedGroup& g) {
    int i = 0;
    for (ValueId v : g.inputs) index_[v] = i++;
    for (ValueId v : g.outputs) index_[v] = i++;
  }
  int Of(ValueId v) const {
    auto it = index_.find(v);
    FT_CHECK(it != index_.end(), fmt::format("value {} has no kernel buffer", v));
    return it->second;
  }
  bool Has(ValueId v) const { return index_.count(v) != 0; }

 private:
  std::map<ValueId, int> index_;
};

// The float pointer in buffers[index] (the kernel ABI's array of buffer pointers).
llvm::Value* BufferBase(MatmulBuilder& b, llvm::Value* buffers, int index);

// Reads one leaf of an inlined expression: `base` is its kernel buffer (null for an index leaf),
// `shape` the shape of the value it reads.
using LeafRead =
    std::function<llvm::Value*(llvm::Value* base, const ExprLeaf& leaf, const Shape& shape)>;

// `expr` lowered on its leaves, in its own dtype: each input leaf read by `read` from the buffer
// `map` numbers for it; an anchor leaf is `anchor` (which must then be given).
llvm::Value* LowerLeaves(MatmulBuilder& b, const Graph& graph, const BufferMap& map,
                         llvm::Value* buffers, const InlinedExpr& expr, const LeafRead& read,
                         llvm::Value* anchor = nullptr);

// The epilogue of matmul group `group` (one anchor): each of its outputs, all of the anchor's
// shape, computed from a tile vector and stored at row * N + column into the buffer `buffers`
// gives it (`buffers` may number a larger kernel, e.g. a horizontal group's). `acc_buffer`, when
// given, receives the buffer of the first float32 output (where partial sums can live), or -1.
std::unique_ptr<TileEpilogue> MakeGroupEpilogue(const Graph& graph, const FusedGroup& group,
                                                const BufferMap& buffers, int* acc_buffer);

}  // namespace fusetune::codegen
