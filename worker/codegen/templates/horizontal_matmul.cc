#include "worker/codegen/templates/horizontal_matmul.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/matmul_schedule.h"
#include "worker/codegen/templates/matmul.h"
#include "worker/codegen/templates/matmul_emit.h"
#include "worker/codegen/templates/matmul_group.h"
#include "worker/codegen/templates/matmul_runtime.h"

namespace fusetune::codegen {
namespace {

using llvm::BasicBlock;
using llvm::Value;

constexpr int kLanes = 16;

// One part's columns of the virtual product and where its weight lives.
struct Segment {
  int64_t offset = 0;  // first virtual column, a multiple of nr
  int64_t width = 0;   // the part's N
  MatmulOperand b;     // its B, as a single product would read it
  std::unique_ptr<TileEpilogue> epilogue;
};

// Sends each tile vector to the part whose columns it holds, with columns counted from that
// part's first and lanes past the part's N masked off.
class HorizontalEpilogue : public TileEpilogue {
 public:
  explicit HorizontalEpilogue(std::vector<Segment>& segments) : segments_(segments) {}

  void EmitVector(MatmulBuilder& b, const TileVector& v) override {
    Dispatch(b, v, /*mask=*/true,
             [&](TileEpilogue& e, const TileVector& local) { e.EmitVector(b, local); });
  }
  void EmitPrefetch(MatmulBuilder& b, const TileVector& v) override {
    Dispatch(b, v, /*mask=*/false,
             [&](TileEpilogue& e, const TileVector& local) { e.EmitPrefetch(b, local); });
  }
  bool Cheap() const override {
    for (const Segment& s : segments_)
      if (!s.epilogue->Cheap()) return false;
    return true;
  }

 private:
  template <typename Fn>
  void Dispatch(MatmulBuilder& b, const TileVector& v, bool mask, Fn&& emit) {
    llvm::LLVMContext& ctx = b.getContext();
    llvm::Function* f = b.GetInsertBlock()->getParent();
    BasicBlock* done = BasicBlock::Create(ctx, "part.done", f);
    // Vector starts are multiples of 16 and parts start at multiples of nr: a vector lies in
    // exactly one part, the last whose offset it reaches.
    for (size_t s = 0; s < segments_.size(); ++s) {
      Segment& seg = segments_[s];
      BasicBlock* here = BasicBlock::Create(ctx, fmt::format("part{}", s), f);
      if (s + 1 < segments_.size()) {
        BasicBlock* next = BasicBlock::Create(ctx, fmt::format("part{}.not", s), f);
        b.CreateCondBr(b.CreateICmpSLT(v.n_start, b.getInt64(segments_[s + 1].offset)), here, next);
        b.SetInsertPoint(here);
        EmitPart(b, v, seg, mask, emit);
        b.CreateBr(done);
        b.SetInsertPoint(next);
      } else {
        b.CreateBr(here);
        b.SetInsertPoint(here);
        EmitPart(b, v, seg, mask, emit);
        b.CreateBr(done);
      }
    }
    b.SetInsertPoint(done);
  }

  template <typename Fn>
  void EmitPart(MatmulBuilder& b, const TileVector& v, Segment& seg, bool mask, Fn&& emit) {
    TileVector local = v;
    local.n_start = b.CreateSub(v.n_start, b.getInt64(seg.offset));
    if (mask && v.mask) {
      std::vector<llvm::Constant*> iota;
      for (int i = 0; i < kLanes; ++i) iota.push_back(b.getInt64(i));
      Value* column =
          b.CreateAdd(llvm::ConstantVector::get(iota), b.CreateVectorSplat(kLanes, local.n_start));
      Value* inside = b.CreateICmpSLT(column, b.CreateVectorSplat(kLanes, b.getInt64(seg.width)));
      local.mask = b.CreateAnd(v.mask, inside);
    }
    emit(*seg.epilogue, local);
  }

  std::vector<Segment>& segments_;
};

MatmulLayout LayoutOfAnchor(const Graph& graph, ValueId anchor) {
  const fusetune::Value& a = graph.value(anchor);
  std::vector<TensorType> in_types;
  for (ValueId v : a.inputs) in_types.push_back(graph.value(v).type);
  return a.op->matmul(in_types, a.attrs);
}

// The virtual product's columns: each part at the next multiple of nr.
int64_t PlaceSegments(std::vector<Segment>& segments, int64_t nr) {
  int64_t offset = 0;
  for (Segment& s : segments) {
    s.offset = offset;
    offset = (offset + s.width + nr - 1) / nr * nr;
  }
  return segments.back().offset + segments.back().width;
}

}  // namespace

llvm::Function* EmitHorizontalMatmulKernel(llvm::Module& module, const Graph& graph,
                                           const FusedGroup& group, const Schedule& schedule,
                                           const TargetInfo& target, const std::string& symbol,
                                           int threads) {
  FT_CHECK(group.Horizontal(), "not a horizontal matmul group");
  BufferMap buffers(group);
  const ValueId a_value = graph.value(group.parts[0].anchor).inputs[0];
  std::vector<Segment> segments;
  for (const FusedGroup& part : group.parts) {
    const fusetune::Value& anchor = graph.value(part.anchor);
    for (ValueId v : {anchor.inputs[0], anchor.inputs[1], part.anchor}) {
      if (graph.value(v).type.dtype != DType::kFloat32)
        throw UserError(
            fmt::format("matmul template: {} of {} is {}; only float32 products are generated",
                        graph.RefName(v), anchor.op->name, DTypeName(graph.value(v).type.dtype)));
    }
    const MatmulLayout l = LayoutOfAnchor(graph, part.anchor);
    Segment s;
    s.width = l.n;
    s.b = OperandB(l, buffers.Of(anchor.inputs[1]), false);
    s.epilogue = MakeGroupEpilogue(graph, part, buffers, nullptr);
    segments.push_back(std::move(s));
  }

  // The tiling depends on N and the part offsets on nr: resolve for the unpadded width, place the
  // parts, and resolve the cache blocks again for the padded width with that register tile.
  MatmulLayout layout = LayoutOfAnchor(graph, group.parts[0].anchor);
  layout.n = 0;
  for (const Segment& s : segments) layout.n += s.width;
  MatmulTiling tiling = ResolveMatmulTiling(layout, schedule, threads);
  layout.n = PlaceSegments(segments, tiling.nr);
  Schedule padded = schedule;
  padded.Set("mr", tiling.mr);
  padded.Set("nr", tiling.nr);
  const int nr = tiling.nr;
  tiling = ResolveMatmulTiling(layout, padded, threads);
  FT_CHECK(tiling.nr == nr, "horizontal matmul: the register tile changed with the padded width");
  tiling.kc = layout.k;  // one k block: no buffer spans every part's columns for partial sums

  MatmulKernelDesc desc;
  desc.name = symbol;
  desc.layout = layout;
  desc.tiling = tiling;
  desc.a = OperandA(layout, buffers.Of(a_value), false);
  desc.b = MatmulOperand{};  // packed by pack_b below
  desc.acc_buffer = -1;
  desc.pack_b = [&segments](MatmulBuilder& b, Value* bufs, Value* bi, Value* n0, Value* n_count,
                            Value* k0, Value* k_count, int64_t panel, Value* out) {
    llvm::LLVMContext& ctx = b.getContext();
    llvm::Function* f = b.GetInsertBlock()->getParent();
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* i64 = b.getInt64Ty();
    auto* pack_type =
        llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64, i64, i64, i64, ptr}, false);
    // Called through its address: the kernel runs only in the process that compiled it.
    Value* pack_fn = b.CreateIntToPtr(
        b.getInt64(static_cast<int64_t>(reinterpret_cast<uintptr_t>(&fusetune_mm_pack_b))), ptr);
    Value* n_end = b.CreateAdd(n0, n_count);
    for (size_t s = 0; s < segments.size(); ++s) {
      const Segment& seg = segments[s];
      // The part's columns inside the block: [lo, hi), lo a panel boundary.
      Value* lo = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, n0, b.getInt64(seg.offset));
      Value* hi =
          b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, n_end, b.getInt64(seg.offset + seg.width));
      BasicBlock* pack = BasicBlock::Create(ctx, fmt::format("pack_part{}", s), f);
      BasicBlock* next = BasicBlock::Create(ctx, fmt::format("pack_part{}.done", s), f);
      b.CreateCondBr(b.CreateICmpSLT(lo, hi), pack, next);
      b.SetInsertPoint(pack);
      Value* base = b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, bufs, seg.b.buffer),
                                        llvm::Align(8));
      Value* first = b.CreateSub(lo, b.getInt64(seg.offset));
      Value* src_offset = b.CreateAdd(b.CreateMul(bi, b.getInt64(seg.b.batch_stride)),
                                      b.CreateAdd(b.CreateMul(first, b.getInt64(seg.b.row_stride)),
                                                  b.CreateMul(k0, b.getInt64(seg.b.k_stride))));
      Value* src = b.CreateInBoundsGEP(b.getFloatTy(), base, src_offset);
      Value* panels_before = b.CreateSDiv(b.CreateSub(lo, n0), b.getInt64(panel));
      Value* dst = b.CreateInBoundsGEP(
          b.getFloatTy(), out, b.CreateMul(panels_before, b.CreateMul(k_count, b.getInt64(panel))));
      b.CreateCall(pack_type, pack_fn,
                   {src, b.getInt64(seg.b.row_stride), b.getInt64(seg.b.k_stride),
                    b.CreateSub(hi, lo), k_count, b.getInt64(panel), dst});
      b.CreateBr(next);
      b.SetInsertPoint(next);
    }
  };
  HorizontalEpilogue epilogue(segments);
  return EmitMatmulFunction(module, desc, epilogue, target);
}

}  // namespace fusetune::codegen
