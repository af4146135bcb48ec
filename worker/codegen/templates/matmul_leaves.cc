#include "worker/codegen/templates/matmul_leaves.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>

#include <numeric>

#include "ir/error.h"
#include "worker/codegen/scalar_lowering.h"

namespace fusetune::codegen {
namespace {

using llvm::Value;

constexpr unsigned kLanes = 16;

struct LaneIndex {
  enum Kind { kUniform, kUnit, kVector } kind;
  Value* v;  // i64 (kUniform: the index; kUnit: the index of lane 0) or <16 x i64>
  // kUnit: a known divisor of lane 0's index. A unit run that starts on a multiple of 16 stays
  // inside one segment of any extent that is a multiple of 16, so dividing it by such an extent
  // is uniform and its remainder a unit run again: the split of a row into heads (k / 64,
  // k % 64) reads one vector instead of gathering 16 lanes.
  int64_t align = 1;
};

// A power-of-two divisor of `e`'s value at every position, known without the coordinates'
// values (theirs are unknown: 1), at most 2^20; all the alignment rule asks is whether 16 divides.
int64_t KnownDivisor(const IndexExpr& e) {
  constexpr int64_t kCap = int64_t{1} << 20;
  switch (e->op) {
    case IndexOp::kConst:
      return e->value == 0 ? kCap : std::gcd(e->value, kCap);
    case IndexOp::kAdd:
      return std::gcd(KnownDivisor(e->a), KnownDivisor(e->b));
    case IndexOp::kMul:
      return std::gcd(KnownDivisor(e->a) * KnownDivisor(e->b), kCap);
    default:
      return 1;
  }
}

class RowIndexer {
 public:
  RowIndexer(llvm::IRBuilderBase& b, std::span<Value* const> coords, Value* last_start,
             int64_t start_align = 1)
      : b_(b), coords_(coords), last_start_(last_start), start_align_(start_align) {}

  LaneIndex Lower(const IndexExpr& e) {
    switch (e->op) {
      case IndexOp::kConst:
        return {LaneIndex::kUniform, b_.getInt64(e->value)};
      case IndexOp::kVar:
        FT_CHECK(e->var >= 0 && e->var < static_cast<int>(coords_.size()),
                 "index variable out of range");
        if (last_start_ && e->var + 1 == static_cast<int>(coords_.size()))
          return {LaneIndex::kUnit, last_start_, start_align_};
        return {LaneIndex::kUniform, coords_[e->var]};
      case IndexOp::kAdd: {
        LaneIndex a = Lower(e->a), c = Lower(e->b);
        if (a.kind == LaneIndex::kUniform && c.kind != LaneIndex::kVector)
          return {c.kind, b_.CreateAdd(a.v, c.v), std::gcd(c.align, KnownDivisor(e->a))};
        if (c.kind == LaneIndex::kUniform && a.kind != LaneIndex::kVector)
          return {a.kind, b_.CreateAdd(a.v, c.v), std::gcd(a.align, KnownDivisor(e->b))};
        return {LaneIndex::kVector, b_.CreateAdd(Vector(a), Vector(c))};
      }
      case IndexOp::kMul: {
        LaneIndex a = Lower(e->a), c = Lower(e->b);
        if (a.kind == LaneIndex::kUniform && c.kind == LaneIndex::kUniform) {
          return {LaneIndex::kUniform, b_.CreateMul(a.v, c.v)};
        }
        if (IsOne(e->b)) return a;
        if (IsOne(e->a)) return c;
        return {LaneIndex::kVector, b_.CreateMul(Vector(a), Vector(c))};
      }
      case IndexOp::kFloorDiv:
      case IndexOp::kMod: {
        LaneIndex a = Lower(e->a), c = Lower(e->b);
        if (a.kind == LaneIndex::kUnit && a.align % kLanes == 0 && e->b->op == IndexOp::kConst &&
            e->b->value > 0 && e->b->value % kLanes == 0) {
          Value* q = FloorDiv(a.v, c.v);
          if (e->op == IndexOp::kFloorDiv) return {LaneIndex::kUniform, q};
          return {LaneIndex::kUnit, b_.CreateSub(a.v, b_.CreateMul(q, c.v)),
                  std::gcd(a.align, e->b->value)};
        }
        bool uniform = a.kind == LaneIndex::kUniform && c.kind == LaneIndex::kUniform;
        Value* x = uniform ? a.v : Vector(a);
        Value* y = uniform ? c.v : Vector(c);
        Value* q = FloorDiv(x, y);
        Value* r = e->op == IndexOp::kFloorDiv ? q : b_.CreateSub(x, b_.CreateMul(q, y));
        return {uniform ? LaneIndex::kUniform : LaneIndex::kVector, r};
      }
    }
    FT_CHECK(false, "bad IndexOp");
  }

  Value* Vector(const LaneIndex& x) {
    if (x.kind == LaneIndex::kVector) return x.v;
    Value* splat = b_.CreateVectorSplat(kLanes, x.v);
    if (x.kind == LaneIndex::kUniform) return splat;
    std::vector<llvm::Constant*> iota;
    for (unsigned i = 0; i < kLanes; ++i) iota.push_back(b_.getInt64(i));
    return b_.CreateAdd(splat, llvm::ConstantVector::get(iota));
  }

  LaneIndex Clamp(const LaneIndex& x, int64_t extent) {
    if (x.kind == LaneIndex::kUniform) return {x.kind, Clamp(x.v, extent)};
    return {LaneIndex::kVector, Clamp(Vector(x), extent)};
  }

 private:
  static bool IsOne(const IndexExpr& e) { return e->op == IndexOp::kConst && e->value == 1; }

  Value* Clamp(Value* v, int64_t extent) {
    Value* lo = llvm::Constant::getNullValue(v->getType());
    Value* hi = llvm::ConstantInt::get(v->getType(), extent - 1);
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                    b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, lo), hi);
  }

  // Floor division (rounds toward -inf), as ir/index_expr.cc defines it.
  Value* FloorDiv(Value* x, Value* y) {
    Value* q = b_.CreateSDiv(x, y);
    Value* zero = llvm::Constant::getNullValue(x->getType());
    Value* inexact = b_.CreateICmpNE(b_.CreateSRem(x, y), zero);
    Value* signs_differ = b_.CreateICmpNE(b_.CreateICmpSLT(x, zero), b_.CreateICmpSLT(y, zero));
    Value* adjust = b_.CreateZExt(b_.CreateAnd(inexact, signs_differ), x->getType());
    return b_.CreateSub(q, adjust);
  }

  llvm::IRBuilderBase& b_;
  std::span<Value* const> coords_;
  Value* last_start_;
  int64_t start_align_;
};

// The flat element offset of the leaf, from its per-dimension indices (row-major strides).
LaneIndex FlatOffset(RowIndexer& ix, llvm::IRBuilderBase& b, const ExprLeaf& leaf,
                     const Shape& shape) {
  FT_CHECK(leaf.index.size() == shape.size(), "leaf index rank differs from its shape");
  LaneIndex flat{LaneIndex::kUniform, b.getInt64(0)};
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    LaneIndex i = ix.Lower(leaf.index[d]);
    if (leaf.clamp) i = ix.Clamp(i, shape[d]);
    if (stride != 1) {
      i = i.kind == LaneIndex::kUniform
              ? LaneIndex{i.kind, b.CreateMul(i.v, b.getInt64(stride))}
              : LaneIndex{LaneIndex::kVector,
                          b.CreateMul(ix.Vector(i),
                                      ix.Vector({LaneIndex::kUniform, b.getInt64(stride)}))};
    }
    if (flat.kind == LaneIndex::kUniform && i.kind != LaneIndex::kVector) {
      flat = {i.kind, b.CreateAdd(flat.v, i.v)};
    } else if (i.kind == LaneIndex::kUniform && flat.kind != LaneIndex::kVector) {
      flat = {flat.kind, b.CreateAdd(flat.v, i.v)};
    } else {
      flat = {LaneIndex::kVector, b.CreateAdd(ix.Vector(flat), ix.Vector(i))};
    }
    stride *= shape[d];
  }
  return flat;
}

// kIndex leaves: the integer value of index[0], as int32.
Value* IndexValue(RowIndexer& ix, llvm::IRBuilderBase& b, const ExprLeaf& leaf) {
  LaneIndex i = ix.Lower(leaf.index.at(0));
  Value* v = i.kind == LaneIndex::kUniform ? i.v : ix.Vector(i);
  return b.CreateTrunc(v, v->getType()->getWithNewType(b.getInt32Ty()));
}

}  // namespace

Value* LoadLeafScalar(llvm::IRBuilderBase& b, Value* base, const ExprLeaf& leaf, const Shape& shape,
                      std::span<Value* const> coords) {
  RowIndexer ix(b, coords, nullptr);
  if (leaf.kind == ExprLeaf::Kind::kIndex) return IndexValue(ix, b, leaf);
  FT_CHECK(leaf.kind == ExprLeaf::Kind::kInput, "only input leaves are loaded");
  LaneIndex flat = FlatOffset(ix, b, leaf, shape);
  llvm::Type* mem = MemoryType(b.getContext(), leaf.dtype);
  Value* p = b.CreateInBoundsGEP(mem, base, flat.v);
  return ToRegister(b, b.CreateAlignedLoad(mem, p, llvm::Align(mem->getScalarSizeInBits() / 8)),
                    leaf.dtype);
}

Value* LoadLeafRow(llvm::IRBuilderBase& b, Value* base, const ExprLeaf& leaf, const Shape& shape,
                   std::span<Value* const> coords, Value* last_start, Value* mask,
                   int64_t start_align) {
  RowIndexer ix(b, coords, last_start, start_align);
  if (leaf.kind == ExprLeaf::Kind::kIndex) return IndexValue(ix, b, leaf);
  FT_CHECK(leaf.kind == ExprLeaf::Kind::kInput, "only input leaves are loaded");
  LaneIndex flat = FlatOffset(ix, b, leaf, shape);
  llvm::Type* mem = MemoryType(b.getContext(), leaf.dtype);
  llvm::Align align(mem->getScalarSizeInBits() / 8);
  auto* vec = llvm::FixedVectorType::get(mem, kLanes);
  Value* loaded = nullptr;
  switch (flat.kind) {
    case LaneIndex::kUniform:
      loaded = b.CreateAlignedLoad(mem, b.CreateInBoundsGEP(mem, base, flat.v), align);
      break;
    case LaneIndex::kUnit: {
      Value* p = b.CreateInBoundsGEP(mem, base, flat.v);
      loaded = mask ? static_cast<Value*>(b.CreateMaskedLoad(vec, p, align, mask,
                                                             llvm::Constant::getNullValue(vec)))
                    : static_cast<Value*>(b.CreateAlignedLoad(vec, p, align));
      break;
    }
    case LaneIndex::kVector: {
      Value* ptrs = b.CreateInBoundsGEP(mem, base, flat.v);
      loaded = b.CreateMaskedGather(vec, ptrs, align, mask, llvm::Constant::getNullValue(vec));
      break;
    }
  }
  return ToRegister(b, loaded, leaf.dtype);
}

Value* LanesBelow(llvm::IRBuilderBase& b, Value* start, Value* limit) {
  std::vector<llvm::Constant*> steps;
  for (unsigned i = 0; i < kLanes; ++i) steps.push_back(b.getInt64(i));
  Value* lanes = b.CreateAdd(b.CreateVectorSplat(kLanes, start), llvm::ConstantVector::get(steps));
  return b.CreateICmpSLT(lanes, b.CreateVectorSplat(kLanes, limit));
}

Value* LeafRowAddress(llvm::IRBuilderBase& b, Value* base, const ExprLeaf& leaf, const Shape& shape,
                      std::span<Value* const> coords, Value* last_start, int64_t start_align) {
  if (leaf.kind != ExprLeaf::Kind::kInput) return nullptr;
  RowIndexer ix(b, coords, last_start, start_align);
  LaneIndex flat = FlatOffset(ix, b, leaf, shape);
  if (flat.kind != LaneIndex::kUnit) return nullptr;
  return b.CreateInBoundsGEP(MemoryType(b.getContext(), leaf.dtype), base, flat.v);
}

}  // namespace fusetune::codegen
