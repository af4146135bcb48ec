// The task loop of the matmul emitter (matmul_emitter.h): per task, B is packed into the thread's
// scratch or, for a wpack kernel bound to its weights, found in the copy packed at bind time.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "ir/error.h"
#include "worker/codegen/templates/matmul_emitter.h"
#include "worker/codegen/templates/matmul_runtime.h"

namespace fusetune::codegen::matmul_detail {

// task(buffers, begin, end): tasks are numbered (b, n block, m block), m block fastest, so a
// thread's consecutive tasks share a packed B block when there is one k block. A kernel that
// packs A through pack_a (a folded layer norm, a computed A) and finds B packed at bind time
// numbers them (b, m block, n block) instead, so consecutive tasks share the packed A block.
Function* Emitter::EmitTask() {
  Function* f = NewFunction(d_.name + ".task", Type::getVoidTy(ctx_), {ptr_, i64_, i64_}, true);
  Value *buffers = f->getArg(0), *begin = f->getArg(1), *end = f->getArg(2);
  f->addParamAttr(0, llvm::Attribute::NoAlias);  // nothing writes the buffer array during a call
  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", f));

  const int64_t mr = t_.mr, nr = t_.nr, mc = t_.mc, nc = t_.nc, kc = t_.kc;
  const int64_t m_blocks = t_.MBlocks(l_), n_blocks = t_.NBlocks(l_);
  const int64_t panels = (nc + nr - 1) / nr;
  const int64_t b_bytes = (panels * nr * kc * 4 + 63) / 64 * 64;
  const bool a_in_scratch = d_.a.compute || d_.pack_a;
  const int64_t a_bytes = a_in_scratch ? (mc * kc * 4 + 63) / 64 * 64 : 0;
  const int64_t stage_bytes = d_.transposed_out ? nc * kStageRow * 4 : 0;
  const int64_t scratch_bytes = b_bytes + a_bytes + stage_bytes;

  auto* scratch_type = llvm::FunctionType::get(ptr_, {i64_}, false);
  auto* pack_type = llvm::FunctionType::get(Type::getVoidTy(ctx_),
                                            {ptr_, i64_, i64_, i64_, i64_, i64_, ptr_}, false);
  Value* scratch =
      b.CreateCall(scratch_type, RuntimeFn(reinterpret_cast<void*>(&fusetune_mm_scratch), b),
                   {I64(scratch_bytes)}, "scratch");
  Value* pack_fn = RuntimeFn(reinterpret_cast<void*>(&fusetune_mm_pack_b), b);
  Value* a_packed = a_in_scratch
                        ? b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), scratch, b_bytes, "a_packed")
                        : nullptr;
  Value* stage = d_.transposed_out ? b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), scratch,
                                                                  b_bytes + a_bytes, "stage")
                                   : llvm::Constant::getNullValue(ptr_);
  // swap=1: the staging rows of the output rows from n on, in a task's n block from nb0.
  auto stage_rows = [&](MatmulBuilder& b, Value* n, Value* nb0) {
    return b.CreateInBoundsGEP(f32_, stage, b.CreateMul(b.CreateSub(n, nb0), I64(kStageRow)));
  };
  auto base_of = [&](const MatmulOperand& op) -> Value* {
    if (op.compute || op.buffer < 0) return llvm::Constant::getNullValue(ptr_);
    return b.CreateAlignedLoad(ptr_, b.CreateConstInBoundsGEP1_64(ptr_, buffers, op.buffer),
                               llvm::Align(8));
  };
  Value* a_base = base_of(d_.a);
  Value* b_base = base_of(d_.b);
  // wpack: the copy packed when the kernel was bound to this B, or null (then pack per call).
  Value* bound = t_.wpack ? BoundPacked(b, b_base) : nullptr;
  Value* is_bound =
      bound ? b.CreateICmpNE(bound, llvm::Constant::getNullValue(ptr_), "is_bound") : nullptr;
  // Which (b, n block) the scratch holds; -1: none yet.
  Value* packed = b.CreateAlloca(i64_, nullptr, "packed");
  b.CreateStore(I64(-1), packed);
  // Which (b, m block) the A scratch holds, when pack_a's rows outlive a task; -1: none yet.
  const bool a_major = d_.pack_a && t_.wpack;
  Value* a_holds = b.CreateAlloca(i64_, nullptr, "a_holds");
  b.CreateStore(I64(-1), a_holds);
  struct TaskIndex {
    Value *bi, *nb, *mb, *q, *r;  // q: (b, n block), whose B block it reads; r: (b, m block)
  };
  auto index_of = [&](MatmulBuilder& b, Value* t) {
    TaskIndex x;
    if (a_major) {
      x.nb = b.CreateSRem(t, I64(n_blocks));
      x.r = b.CreateSDiv(t, I64(n_blocks));
      x.mb = b.CreateSRem(x.r, I64(m_blocks));
      x.bi = b.CreateSDiv(x.r, I64(m_blocks));
      x.q = b.CreateAdd(b.CreateMul(x.bi, I64(n_blocks)), x.nb);
    } else {
      x.mb = b.CreateSRem(t, I64(m_blocks));
      x.q = b.CreateSDiv(t, I64(m_blocks));
      x.nb = b.CreateSRem(x.q, I64(n_blocks));
      x.bi = b.CreateSDiv(x.q, I64(n_blocks));
      x.r = b.CreateAdd(b.CreateMul(x.bi, I64(m_blocks)), x.mb);
    }
    return x;
  };

  // The micro-kernel variants: full tiles, and ragged ones at the global m and n ends.
  const int m_tail = static_cast<int>(l_.m % mr);
  const int64_t n_tail = l_.n % nr;
  TileShape full{static_cast<int>(mr), static_cast<int>(nr / kLanes), kLanes};
  TileShape n_ragged{full.rows, static_cast<int>((n_tail + kLanes - 1) / kLanes),
                     static_cast<int>(n_tail % kLanes == 0 ? kLanes : n_tail % kLanes)};
  Function* tile_ff = EmitTile(full);
  Function* tile_fn = n_tail ? EmitTile(n_ragged) : tile_ff;
  Function* tile_mf = m_tail ? EmitTile({m_tail, full.vectors, full.last_lanes}) : tile_ff;
  Function* tile_mn = m_tail && n_tail ? EmitTile({m_tail, n_ragged.vectors, n_ragged.last_lanes})
                      : m_tail         ? tile_mf
                                       : tile_fn;
  b.SetInsertPoint(&f->getEntryBlock(), f->getEntryBlock().end());
  auto* tile_type = tile_ff->getFunctionType();

  EmitLoop(b, begin, end, 1, "task", [&](MatmulBuilder& b, Value* t) {
    const TaskIndex x = index_of(b, t);
    Value *mb = x.mb, *q = x.q, *nb = x.nb, *bi = x.bi;
    Value* m0 = b.CreateMul(mb, I64(mc));
    Value* m_end =
        b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(m0, I64(mc)), I64(l_.m));
    Value* nb0 = b.CreateMul(nb, I64(nc));
    Value* n_end =
        b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(nb0, I64(nc)), I64(l_.n));
    Value* n_count = b.CreateSub(n_end, nb0);
    Value* a_batch = b.CreateInBoundsGEP(f32_, a_base, b.CreateMul(bi, I64(d_.a.batch_stride)));
    Value* b_batch = b.CreateInBoundsGEP(f32_, b_base, b.CreateMul(bi, I64(d_.b.batch_stride)));
    Value* row_base = b.CreateMul(bi, I64(l_.m));
    // The B block of this thread's next task (when it packs or reads another one), else the
    // scratch: the tiles' prefetches then hit in cache and cost nothing.
    Value* next_block = scratch;
    if (prefetch_next_) {
      Value* next = b.CreateAdd(t, I64(1));
      const TaskIndex nx = index_of(b, next);
      // With k blocks every task starts again at block 0, whichever n block it has.
      Value* other_block =
          k_blocks_ > 1 ? llvm::ConstantInt::getTrue(ctx_) : b.CreateICmpNE(nx.q, q);
      Value* has_next = b.CreateAnd(b.CreateICmpSLT(next, end), other_block);
      Value* nnb = nx.nb;
      Value* nn0 = b.CreateMul(nnb, I64(nc));
      Value* nbi = nx.bi;
      // Unbound, the raw B block is streamed where it is contiguous ([n][k], all of K) or, with
      // k blocks, row by row.
      Value* src = scratch;
      if ((k_blocks_ == 1 && d_.b.k_stride == 1 && d_.b.row_stride == l_.k && !d_.b.compute) ||
          stream_row_stride_) {
        src = b.CreateGEP(f32_, b_base,
                          b.CreateAdd(b.CreateMul(nbi, I64(d_.b.batch_stride)),
                                      b.CreateMul(nn0, I64(d_.b.row_stride))));
      }
      if (bound) {
        Value* packed_next =
            b.CreateGEP(f32_, bound, PackedBlockOffset(b, nbi, nnb, I64(0)), "packed_next");
        src = b.CreateSelect(is_bound, packed_next, src);
      }
      next_block = b.CreateSelect(has_next, src, scratch);
    }

    EmitLoop(b, I64(0), I64(k_blocks_), 1, "kb", [&](MatmulBuilder& b, Value* kb) {
      Value* k0 = b.CreateMul(kb, I64(kc));
      Value* k_count =
          b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(kc), b.CreateSub(I64(l_.k), k0));
      // Pack B(b, nb0.., k0..) unless this thread's scratch already holds it (one k block only).
      Value* need_pack = k_blocks_ > 1 ? static_cast<Value*>(llvm::ConstantInt::getTrue(ctx_))
                                       : b.CreateICmpNE(b.CreateLoad(i64_, packed), q);
      if (bound) need_pack = b.CreateAnd(need_pack, b.CreateNot(is_bound));
      // Where this k block's panels are: the scratch, or the bound copy's block.
      Value* block = scratch;
      if (bound) {
        Value* block_bound =
            b.CreateInBoundsGEP(f32_, bound, PackedBlockOffset(b, bi, nb, kb), "bound_block");
        block = b.CreateSelect(is_bound, block_bound, scratch);
      }
      // What the tiles stream: the next k block of this task (bound: right after this one in
      // the copy; unbound: kc floats further along B's rows), else the next task's first block.
      Value* pf_block = next_block;
      if (prefetch_next_ && k_blocks_ > 1) {
        Value* next_k = scratch;
        if (stream_row_stride_) {
          next_k = b.CreateGEP(
              f32_, b_batch,
              b.CreateAdd(b.CreateMul(nb0, I64(d_.b.row_stride)), b.CreateAdd(k0, I64(kc))));
        }
        if (bound) {
          next_k = b.CreateSelect(
              is_bound, b.CreateInBoundsGEP(f32_, block, I64(packed_block_floats_)), scratch);
        }
        pf_block =
            b.CreateSelect(b.CreateICmpSLT(kb, I64(k_blocks_ - 1)), next_k, next_block, "pf_block");
      }
      BasicBlock* pack_block = BasicBlock::Create(ctx_, "pack", f);
      BasicBlock* compute = BasicBlock::Create(ctx_, "compute", f);
      b.CreateCondBr(need_pack, pack_block, compute);
      b.SetInsertPoint(pack_block);
      if (d_.pack_b) {
        d_.pack_b(b, buffers, bi, nb0, n_count, k0, k_count, nr, scratch);
      } else if (d_.b.compute) {
        // Prologue on B: evaluate each element into the packed layout; columns past N are zero.
        Value* n_padded =
            b.CreateMul(b.CreateSDiv(b.CreateAdd(n_count, I64(nr - 1)), I64(nr)), I64(nr));
        EmitLoop(b, I64(0), n_padded, 1, "pack_n", [&](MatmulBuilder& b, Value* j) {
          Value* n = b.CreateAdd(nb0, j);
          Value* valid = b.CreateICmpSLT(n, I64(l_.n));
          Value* n_read = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, n, I64(l_.n - 1));
          Value* panel_offset =
              b.CreateMul(b.CreateSDiv(j, I64(nr)), b.CreateMul(k_count, I64(nr)));
          Value* col = b.CreateInBoundsGEP(f32_, scratch,
                                           b.CreateAdd(panel_offset, b.CreateSRem(j, I64(nr))));
          EmitLoop(b, I64(0), k_count, 1, "pack_k", [&](MatmulBuilder& b, Value* kk) {
            Value* v = d_.b.compute(b, buffers, bi, n_read, b.CreateAdd(k0, kk));
            v = b.CreateSelect(valid, v, llvm::ConstantFP::get(f32_, 0.0));
            b.CreateAlignedStore(v, b.CreateInBoundsGEP(f32_, col, b.CreateMul(kk, I64(nr))),
                                 llvm::Align(4));
          });
        });
      } else {
        Value* b_src = b.CreateInBoundsGEP(f32_, b_batch,
                                           b.CreateAdd(b.CreateMul(nb0, I64(d_.b.row_stride)),
                                                       b.CreateMul(k0, I64(d_.b.k_stride))));
        b.CreateCall(
            pack_type, pack_fn,
            {b_src, I64(d_.b.row_stride), I64(d_.b.k_stride), n_count, k_count, I64(nr), scratch});
      }
      b.CreateStore(q, packed);
      b.CreateBr(compute);
      b.SetInsertPoint(compute);

      if (d_.pack_a) {
        // This task's rows for this k block into [mc][kc], unless the scratch holds them (one k
        // block, the previous task of this thread on the same rows).
        Value* need = k_blocks_ > 1 || !a_major
                          ? static_cast<Value*>(llvm::ConstantInt::getTrue(ctx_))
                          : b.CreateICmpNE(b.CreateLoad(i64_, a_holds), x.r);
        BasicBlock* pack_a = BasicBlock::Create(ctx_, "pack_a", f);
        BasicBlock* packed_a = BasicBlock::Create(ctx_, "packed_a", f);
        b.CreateCondBr(need, pack_a, packed_a);
        b.SetInsertPoint(pack_a);
        d_.pack_a(b, buffers, bi, m0, m_end, k0, k_count, kc, a_packed);
        b.CreateStore(x.r, a_holds);
        b.CreateBr(packed_a);
        b.SetInsertPoint(packed_a);
      } else if (d_.a.compute) {
        // Prologue on A: evaluate this task's rows for this k block into [mc][kc].
        EmitLoop(b, m0, m_end, 1, "pack_m", [&](MatmulBuilder& b, Value* m) {
          Value* dst =
              b.CreateInBoundsGEP(f32_, a_packed, b.CreateMul(b.CreateSub(m, m0), I64(kc)));
          EmitLoop(b, I64(0), k_count, 1, "pack_ak", [&](MatmulBuilder& b, Value* kk) {
            Value* v = d_.a.compute(b, buffers, bi, m, b.CreateAdd(k0, kk));
            b.CreateAlignedStore(v, b.CreateInBoundsGEP(f32_, dst, kk), llvm::Align(4));
          });
        });
      }
      Value* first = b.CreateICmpEQ(kb, I64(0));
      Value* last = b.CreateICmpEQ(kb, I64(k_blocks_ - 1));
      Value* a_k = b.CreateInBoundsGEP(f32_, a_batch, b.CreateMul(k0, I64(d_.a.k_stride)));
      auto call_tile = [&](MatmulBuilder& b, Value* m, Value* n) {
        Value* m_full = b.CreateICmpSLE(b.CreateAdd(m, I64(mr)), I64(l_.m));
        Value* n_full = b.CreateICmpSLE(b.CreateAdd(n, I64(nr)), I64(l_.n));
        Value* fn = b.CreateSelect(m_full, b.CreateSelect(n_full, tile_ff, tile_fn),
                                   b.CreateSelect(n_full, tile_mf, tile_mn));
        Value* a_ptr =
            a_in_scratch
                ? b.CreateInBoundsGEP(f32_, a_packed, b.CreateMul(b.CreateSub(m, m0), I64(kc)))
                : b.CreateInBoundsGEP(f32_, a_k, b.CreateMul(m, I64(d_.a.row_stride)));
        Value* panel = b.CreateSDiv(b.CreateSub(n, nb0), I64(nr));
        Value* bp =
            b.CreateInBoundsGEP(f32_, block, b.CreateMul(panel, b.CreateMul(k_count, I64(nr))));
        // This tile's share of the next block: tiles are numbered in loop order.
        const int64_t m_tiles = (mc + mr - 1) / mr;
        Value* mi = b.CreateSDiv(b.CreateSub(m, m0), I64(mr));
        Value* index = t_.loop == 0 ? b.CreateAdd(b.CreateMul(mi, I64(panels)), panel)
                                    : b.CreateAdd(b.CreateMul(panel, I64(m_tiles)), mi);
        // Contiguous: an equal share of the block each. Strided: whole rows each (the last tiles
        // clamped to the block's last row); a tile's k loop reaches 16 / ku rows of kc floats, so
        // with fewer tiles than nc * ku / 16 part of the block is left to the packing.
        const int64_t tiles = m_tiles * panels;
        Value* share = b.CreateMul(index, I64((nc * kc + tiles - 1) / tiles));
        if (stream_row_stride_) {
          Value* first_row = b.CreateBinaryIntrinsic(
              llvm::Intrinsic::smin, b.CreateMul(index, I64((nc + tiles - 1) / tiles)),
              I64(nc - 1));
          share = b.CreateMul(first_row, I64(stream_row_stride_));
        }
        Value* pfp = b.CreateGEP(f32_, pf_block, share);
        Value* tile_stage = d_.transposed_out ? stage_rows(b, n, nb0) : stage;
        b.CreateCall(tile_type, fn,
                     {a_ptr, bp, k_count, first, last, b.CreateAdd(row_base, m), n, buffers, pfp,
                      tile_stage});
      };
      // swap=1: after the tile at m, the staged output rows [n, n_stop) are flushed when the
      // tiles have finished their group of 16 output columns (a task's m block starts a group).
      auto flush_after = [&](MatmulBuilder& b, Value* m, Value* n, Value* n_stop) {
        if (!d_.transposed_out) return;
        Value* next = b.CreateAdd(m, I64(mr));
        Value* group = b.CreateSub(m, b.CreateSRem(m, I64(kLanes)));
        Value* done = b.CreateOr(b.CreateICmpSGE(next, b.CreateAdd(group, I64(kLanes))),
                                 b.CreateICmpSGE(next, m_end));
        // The task's last tile may reach into the next group: that one is flushed too.
        Value* next_group = b.CreateAdd(group, I64(kLanes));
        Value* tail = b.CreateAnd(b.CreateICmpSGE(next, m_end), b.CreateICmpSGT(m_end, next_group));
        auto flush_if = [&](Value* cond, Value* start) {
          BasicBlock* flush = BasicBlock::Create(ctx_, "flush", f);
          BasicBlock* go_on = BasicBlock::Create(ctx_, "flushed", f);
          b.CreateCondBr(cond, flush, go_on);
          b.SetInsertPoint(flush);
          Value* lanes = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(kLanes),
                                                 b.CreateSub(I64(l_.m), start));
          b.CreateCall(flush_fn_,
                       {buffers, stage_rows(b, n, nb0), n, b.CreateSub(n_stop, n), start, lanes});
          b.CreateBr(go_on);
          b.SetInsertPoint(go_on);
        };
        flush_if(done, group);
        flush_if(tail, next_group);
      };
      if (t_.loop == 0) {
        EmitLoop(b, m0, m_end, mr, "m", [&](MatmulBuilder& b, Value* m) {
          EmitLoop(b, nb0, n_end, nr, "n", [&](MatmulBuilder& b, Value* n) { call_tile(b, m, n); });
          flush_after(b, m, nb0, n_end);
        });
      } else {
        EmitLoop(b, nb0, n_end, nr, "n", [&](MatmulBuilder& b, Value* n) {
          EmitLoop(b, m0, m_end, mr, "m", [&](MatmulBuilder& b, Value* m) {
            call_tile(b, m, n);
            flush_after(
                b, m, n,
                b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(n, I64(nr)), n_end));
          });
        });
      }
    });
  });
  b.CreateRetVoid();
  return f;
}

int64_t Emitter::PackedBytes() const {
  return packed_batches_ * t_.NBlocks(l_) * k_blocks_ * packed_block_floats_ * 4;
}

Value* Emitter::PackedBlockOffset(MatmulBuilder& b, Value* bi, Value* nb, Value* kb) {
  Value* batch = packed_batches_ == 1 ? I64(0) : bi;
  Value* index = b.CreateAdd(
      b.CreateMul(b.CreateAdd(b.CreateMul(batch, I64(t_.NBlocks(l_))), nb), I64(k_blocks_)), kb);
  return b.CreateMul(index, I64(packed_block_floats_));
}

void Emitter::EmitBindTables() {
  auto* table = llvm::ArrayType::get(ptr_, kBoundWeightSlots);
  auto make = [&](const std::string& name) {
    return new llvm::GlobalVariable(module_, table, /*isConstant=*/false,
                                    llvm::GlobalValue::InternalLinkage,
                                    llvm::Constant::getNullValue(table), name);
  };
  bound_src_ = make(d_.name + ".bound_src");
  bound_packed_ = make(d_.name + ".bound_packed");
  // {B's index in buffers, packed bytes}: what the binder allocates (kernel_abi.h).
  auto* info_type = llvm::ArrayType::get(i64_, 2);
  new llvm::GlobalVariable(
      module_, info_type, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantArray::get(info_type, {llvm::ConstantInt::get(i64_, d_.b.buffer),
                                           llvm::ConstantInt::get(i64_, PackedBytes())}),
      d_.name + ".bind_info");
}

Value* Emitter::BoundPacked(MatmulBuilder& b, Value* b_base) {
  // A loop over the table, not a select per slot: a deep model binds one kernel to every layer's
  // weights, so the table is long and mostly empty. In a function of its own, so the task's
  // entry block stays one block.
  Function* lookup = NewFunction(d_.name + ".bound_lookup", ptr_, {ptr_}, true);
  MatmulBuilder lb(BasicBlock::Create(ctx_, "entry", lookup));
  Value* found = lb.CreateAlloca(ptr_, nullptr, "found");
  lb.CreateStore(llvm::Constant::getNullValue(ptr_), found);
  EmitLoop(lb, I64(0), I64(kBoundWeightSlots), 1, "slot", [&](MatmulBuilder& lb, Value* s) {
    Value* src = lb.CreateLoad(
        ptr_, lb.CreateInBoundsGEP(bound_src_->getValueType(), bound_src_, {I64(0), s}));
    Value* copy = lb.CreateLoad(
        ptr_, lb.CreateInBoundsGEP(bound_packed_->getValueType(), bound_packed_, {I64(0), s}));
    Value* match = lb.CreateICmpEQ(src, lookup->getArg(0));
    lb.CreateStore(lb.CreateSelect(match, copy, lb.CreateLoad(ptr_, found)), found);
  });
  lb.CreateRet(lb.CreateLoad(ptr_, found));
  return b.CreateCall(lookup->getFunctionType(), lookup, {b_base}, "bound");
}

// bind(buffers, packed, slot): every block of B packed by the same runtime function the
// unbound path calls, into the block the task will read, then the slot points at it.
Function* Emitter::EmitBind() {
  Function* f = NewFunction(d_.name + ".bind", Type::getVoidTy(ctx_), {ptr_, ptr_, i64_}, false);
  Value *buffers = f->getArg(0), *packed = f->getArg(1), *slot = f->getArg(2);
  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", f));
  Value* b_base = b.CreateAlignedLoad(
      ptr_, b.CreateConstInBoundsGEP1_64(ptr_, buffers, d_.b.buffer), llvm::Align(8));
  BasicBlock* pack = BasicBlock::Create(ctx_, "pack", f);
  BasicBlock* record = BasicBlock::Create(ctx_, "record", f);
  Value* has_copy = b.CreateICmpNE(packed, llvm::Constant::getNullValue(ptr_));
  b.CreateCondBr(has_copy, pack, record);

  b.SetInsertPoint(pack);
  auto* pack_type = llvm::FunctionType::get(Type::getVoidTy(ctx_),
                                            {ptr_, i64_, i64_, i64_, i64_, i64_, ptr_}, false);
  Value* pack_fn = RuntimeFn(reinterpret_cast<void*>(&fusetune_mm_pack_b), b);
  const int64_t nc = t_.nc, kc = t_.kc, nr = t_.nr;
  EmitLoop(b, I64(0), I64(packed_batches_), 1, "bind_b", [&](MatmulBuilder& b, Value* bi) {
    EmitLoop(b, I64(0), I64(t_.NBlocks(l_)), 1, "bind_n", [&](MatmulBuilder& b, Value* nb) {
      Value* n0 = b.CreateMul(nb, I64(nc));
      Value* n_count =
          b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(nc), b.CreateSub(I64(l_.n), n0));
      EmitLoop(b, I64(0), I64(k_blocks_), 1, "bind_k", [&](MatmulBuilder& b, Value* kb) {
        Value* k0 = b.CreateMul(kb, I64(kc));
        Value* k_count =
            b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(kc), b.CreateSub(I64(l_.k), k0));
        Value* src =
            b.CreateInBoundsGEP(f32_, b_base,
                                b.CreateAdd(b.CreateMul(bi, I64(d_.b.batch_stride)),
                                            b.CreateAdd(b.CreateMul(n0, I64(d_.b.row_stride)),
                                                        b.CreateMul(k0, I64(d_.b.k_stride)))));
        Value* dst = b.CreateInBoundsGEP(f32_, packed, PackedBlockOffset(b, bi, nb, kb));
        b.CreateCall(
            pack_type, pack_fn,
            {src, I64(d_.b.row_stride), I64(d_.b.k_stride), n_count, k_count, I64(nr), dst});
      });
    });
  });
  b.CreateBr(record);

  b.SetInsertPoint(record);
  Value* src_slot = b.CreateInBoundsGEP(bound_src_->getValueType(), bound_src_, {I64(0), slot});
  Value* copy_slot =
      b.CreateInBoundsGEP(bound_packed_->getValueType(), bound_packed_, {I64(0), slot});
  Value* null = llvm::Constant::getNullValue(ptr_);
  b.CreateStore(b.CreateSelect(has_copy, b_base, null), src_slot);
  b.CreateStore(packed, copy_slot);
  b.CreateRetVoid();
  return f;
}

}  // namespace fusetune::codegen::matmul_detail
