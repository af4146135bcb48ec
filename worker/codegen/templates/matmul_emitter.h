#pragma once
// The matmul emitter's internals, shared by its two source files: matmul_emit.cc (the tile
// micro-kernels, the epilogue and the kernel entry) and matmul_task.cc (the task loop that packs
// or finds B and calls the tiles, and the weight binding of wpack kernels). Not for other users:
// matmul_emit.h is the interface.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/templates/matmul_emit.h"

namespace fusetune::codegen::matmul_detail {

constexpr int kLanes = 16;
constexpr int kTransposeRows = 8;  // swap=1's in-register transpose: 8 rows x 16 lanes
// swap=1's staging row per output row: a group of 16 columns and what a tile writes past it.
constexpr int kStageRow = 2 * kLanes;

using llvm::BasicBlock;
using llvm::Function;
using llvm::Type;
using llvm::Value;

// One micro-kernel variant: `rows` x `vectors` accumulators, `last_lanes` valid in the last one.
struct TileShape {
  int rows;
  int vectors;
  int last_lanes;
  bool operator==(const TileShape&) const = default;
};

class Emitter {
 public:
  Emitter(llvm::Module& module, const MatmulKernelDesc& desc, TileEpilogue& epilogue,
          const TargetInfo& target)
      : module_(module),
        ctx_(module.getContext()),
        d_(desc),
        l_(desc.layout),
        t_(desc.tiling),
        epilogue_(epilogue),
        target_(target),
        f32_(Type::getFloatTy(ctx_)),
        i64_(Type::getInt64Ty(ctx_)),
        i1_(Type::getInt1Ty(ctx_)),
        ptr_(llvm::PointerType::get(ctx_, 0)),
        vec_(llvm::FixedVectorType::get(f32_, kLanes)) {
    k_blocks_ = t_.KBlocks(l_);
    // A computed A is packed as [mc][kc]; A in memory is read where it lies.
    const bool a_in_scratch = d_.a.compute || d_.pack_a;
    a_ms_ = a_in_scratch ? t_.kc : d_.a.row_stride;
    a_ks_ = a_in_scratch ? 1 : d_.a.k_stride;
    // A B block (nc rows of n, all of K) is one contiguous range when B is [n][k] and packed in
    // one k block: the tiles can stream the next one with one pointer.
    prefetch_next_ = t_.pb && k_blocks_ == 1 && !d_.b.compute && d_.b.k_stride == 1 &&
                     d_.b.row_stride == l_.k && t_.ku > 1;
    // wpack: B as one buffer of packed blocks, (batch, n block, k block) in task order, each
    // block the scratch's panel layout, so a bound task reads its block where the bind put it.
    // A bound kernel's next block is contiguous in that buffer whatever B's own layout is.
    if (t_.wpack) {
      FT_CHECK(!d_.b.compute && !d_.pack_b && d_.b.buffer >= 0,
               "matmul: wpack needs B to be a plain kernel input");
      const int64_t panels = (t_.nc + t_.nr - 1) / t_.nr;
      packed_block_floats_ = panels * t_.nr * t_.kc;
      packed_batches_ = d_.b.batch_stride == 0 ? 1 : l_.batch;
      // Bound, every next block is contiguous, k blocks or not: the next k block of the same n
      // block follows this one in the copy (K = 3072 has six: BERT's FFN 2).
      prefetch_next_ = prefetch_next_ || (t_.pb && t_.ku > 1);
    }
    // Packed in the call with k blocks from a [n][k] B (BERT's FFN 2 on its default schedule):
    // the next block is nc rows of kc floats, K apart. The tiles stream it row by row, so the
    // next packing reads L2 instead of memory.
    if (!prefetch_next_ && t_.pb && t_.ku > 1 && k_blocks_ > 1 && !t_.wpack && !d_.b.compute &&
        !d_.pack_b && d_.b.buffer >= 0 && d_.b.k_stride == 1) {
      prefetch_next_ = true;
      stream_row_stride_ = d_.b.row_stride;
    }
    FT_CHECK(k_blocks_ == 1 || d_.acc_buffer >= 0,
             "matmul: k blocks need a float32 output for partial sums");
    FT_CHECK(!d_.transposed_out ||
                 (k_blocks_ == 1 && t_.mr <= kTransposeRows && l_.batch == 1 && !t_.wpack),
             "matmul: a transposed output needs one batch, one k block, at most 8 tile rows");
  }

  Function* Emit();

 private:
  Function* NewFunction(const std::string& name, Type* result, std::vector<Type*> params,
                        bool internal);
  Function* EmitTile(const TileShape& shape);
  Function* EmitTask();
  // wpack: `void <name>.bind(void** buffers, float* packed, i64 slot)` and the tables it fills
  // (kernel_abi.h, "Weights packed at bind time").
  void EmitBindTables();
  Function* EmitBind();
  int64_t PackedBytes() const;
  // Where block (bi, nb, kb) of the packed B starts, in floats from the buffer's start.
  Value* PackedBlockOffset(MatmulBuilder& b, Value* bi, Value* nb, Value* kb);
  // The packed copy bound to this call's B, or null: the slot whose source is buffers[B].
  Value* BoundPacked(MatmulBuilder& b, Value* b_base);
  // swap=1. A tile's columns are output rows and its rows output columns: each tile is
  // transposed in registers and its rows stored into per-thread staging rows (kStageRow floats
  // per output row of the task's n block, at the tile's first column mod 16), and whenever the
  // tiles have finished a group of 16 output columns the task flushes it: the epilogue then sees
  // whole 16-lane rows of output, stored as whole cache lines. (Stored by the tile itself, a few
  // floats to each of 64 rows N floats apart, the rows fell into one L1 set at N = 3072.)
  void EmitTransposedTile(MatmulBuilder& b, const std::vector<Value*>& acc, const TileShape& s,
                          Value* stage, Value* offset);
  Function* EmitFlush();
  Function* EmitEpilogue();
  Function* EmitTileEpilogue();
  Value* I64(int64_t v) { return llvm::ConstantInt::get(i64_, v); }
  Value* RuntimeFn(void* address, MatmulBuilder& b);
  // for (i = start; i < end; i += step) body(i): a counted loop at the builder's position.
  void EmitLoop(MatmulBuilder& b, Value* start, Value* end, int64_t step, const std::string& name,
                const std::function<void(MatmulBuilder&, Value*)>& body);
  Value* LaneMask(int lanes);
  llvm::MDNode* NoUnroll();

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  const MatmulKernelDesc& d_;
  const MatmulLayout& l_;
  const MatmulTiling& t_;
  TileEpilogue& epilogue_;
  const TargetInfo& target_;
  Type* f32_;
  Type* i64_;
  Type* i1_;
  llvm::PointerType* ptr_;
  llvm::FixedVectorType* vec_;
  int64_t k_blocks_ = 1;
  int64_t a_ms_ = 0, a_ks_ = 0;
  bool prefetch_next_ = false;  // pb: the tiles stream the B block their thread uses next
  // 0: the streamed block is contiguous; else its rows of kc floats lie this many floats apart
  // (B unbound, packed in the call, with k blocks).
  int64_t stream_row_stride_ = 0;
  int64_t packed_block_floats_ = 0, packed_batches_ = 0;  // wpack's packed B
  llvm::GlobalVariable* bound_src_ = nullptr;     // [kBoundWeightSlots x ptr]: buffers[B] per slot
  llvm::GlobalVariable* bound_packed_ = nullptr;  // [kBoundWeightSlots x ptr]: its packed copy
  Function* epilogue_fn_ = nullptr;
  Function* epilogue_tile_fn_ = nullptr;  // set for heavy epilogues
  Function* flush_fn_ = nullptr;          // set for swap=1
};

}  // namespace fusetune::codegen::matmul_detail
