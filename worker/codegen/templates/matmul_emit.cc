#include "worker/codegen/templates/matmul_emit.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>

#include "ir/error.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/templates/matmul_emitter.h"

namespace fusetune::codegen {
namespace matmul_detail {

Function* Emitter::NewFunction(const std::string& name, Type* result, std::vector<Type*> params,
                               bool internal) {
  auto* type = llvm::FunctionType::get(result, params, false);
  Function* f = Function::Create(
      type, internal ? Function::InternalLinkage : Function::ExternalLinkage, name, module_);
  PrepareFunction(*f, target_);
  return f;
}

// Runtime helpers are called through their addresses in this process: the JIT need not know
// their names, and the kernel only ever runs in the process that compiled it.
Value* Emitter::RuntimeFn(void* address, MatmulBuilder& b) {
  return b.CreateIntToPtr(I64(static_cast<int64_t>(reinterpret_cast<uintptr_t>(address))), ptr_);
}

void Emitter::EmitLoop(MatmulBuilder& b, Value* start, Value* end, int64_t step,
                       const std::string& name,
                       const std::function<void(MatmulBuilder&, Value*)>& body) {
  EmitCountedLoop(b, start, end, step, name, body, NoUnroll());
}

// Loop metadata that keeps O3 from unrolling a loop: the driver's loops have constant trip
// counts that O3 would unroll fully (16 copies of a tile call, 3 k blocks), which multiplied
// compile time for no speed; the k loop is unrolled by the ku knob already.
llvm::MDNode* Emitter::NoUnroll() {
  llvm::Metadata* ops[] = {
      nullptr, llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")})};
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
  id->replaceOperandWith(0, id);  // a loop id refers to itself
  return id;
}

Value* Emitter::LaneMask(int lanes) {
  std::vector<llvm::Constant*> bits;
  for (int i = 0; i < kLanes; ++i) bits.push_back(llvm::ConstantInt::get(i1_, i < lanes ? 1 : 0));
  return llvm::ConstantVector::get(bits);
}

// tile(a, bp, kcount, first, last, row, n0, buffers, pfp, stage). `pfp`: where the tile's share of
// the next B block begins (pb knob), one line prefetched per k-loop iteration. `a` points at A(b,
// m0, k0), `bp` at the packed panel of this k block ([kcount][nr], 64-byte aligned). `stage`
// (swap=1 only): the staging rows of this panel's columns (EmitTransposedTile).
Function* Emitter::EmitTile(const TileShape& s) {
  std::string name = d_.name + ".tile" + std::to_string(s.rows) + "x" + std::to_string(s.vectors) +
                     (s.last_lanes < kLanes ? "m" + std::to_string(s.last_lanes) : "");
  Function* f = NewFunction(name, Type::getVoidTy(ctx_),
                            {ptr_, ptr_, i64_, i1_, i1_, i64_, i64_, ptr_, ptr_, ptr_}, true);
  f->addFnAttr(llvm::Attribute::NoInline);
  auto arg = [&](int i) { return f->getArg(i); };
  Value *a = arg(0), *bp = arg(1), *kcount = arg(2), *first = arg(3), *last = arg(4), *row = arg(5),
        *n0 = arg(6), *buffers = arg(7), *pfp = arg(8), *stage = arg(9);
  for (int i : {0, 1, 7}) f->addParamAttr(i, llvm::Attribute::NoAlias);
  f->addParamAttr(1, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));

  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", f));
  const int rows = s.rows, vecs = s.vectors, count = rows * vecs;
  Value* mask = s.last_lanes < kLanes ? LaneMask(s.last_lanes) : nullptr;
  Value* zero = llvm::Constant::getNullValue(vec_);
  const llvm::Align elem(4);

  // Where partial sums live between k blocks: the accumulation output at (row, n0).
  auto c_ptr = [&](MatmulBuilder& bb, int i, int j) {
    Value* off = bb.CreateAdd(bb.CreateMul(bb.CreateAdd(row, I64(i)), I64(l_.n)),
                              bb.CreateAdd(n0, I64(j * kLanes)));
    return BufferElementPtr(bb, buffers, d_.acc_buffer, off);
  };
  auto lane_mask = [&](int j) { return j == vecs - 1 ? mask : nullptr; };

  // Initial accumulators: zero, or the partial sums of earlier k blocks.
  std::vector<Value*> init(count, zero);
  BasicBlock* init_block = b.GetInsertBlock();
  if (k_blocks_ > 1) {
    BasicBlock* load = BasicBlock::Create(ctx_, "load_partial", f);
    BasicBlock* join = BasicBlock::Create(ctx_, "init", f);
    b.CreateCondBr(first, join, load);
    b.SetInsertPoint(load);
    std::vector<Value*> loaded(count);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < vecs; ++j) {
        Value* p = c_ptr(b, i, j);
        loaded[i * vecs + j] =
            lane_mask(j)
                ? static_cast<Value*>(b.CreateMaskedLoad(vec_, p, elem, lane_mask(j), zero))
                : static_cast<Value*>(b.CreateAlignedLoad(vec_, p, elem));
      }
    }
    b.CreateBr(join);
    b.SetInsertPoint(join);
    for (int x = 0; x < count; ++x) {
      llvm::PHINode* phi = b.CreatePHI(vec_, 2);
      phi->addIncoming(zero, init_block);
      phi->addIncoming(loaded[x], load);
      init[x] = phi;
    }
  }

  // The k loop: `steps` k per iteration, accumulators carried in phis (never through memory).
  Function* fma = llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::fma, {vec_});
  const int64_t nr = t_.nr;
  const int64_t a_ms = a_ms_, a_ks = a_ks_;
  auto emit_k_loop = [&](Value* start, Value* end, int steps, std::vector<Value*> acc_in,
                         const std::string& nm) {
    BasicBlock* pre = b.GetInsertBlock();
    BasicBlock* head = BasicBlock::Create(ctx_, nm + ".head", f);
    BasicBlock* body = BasicBlock::Create(ctx_, nm + ".body", f);
    BasicBlock* exit = BasicBlock::Create(ctx_, nm + ".exit", f);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode* k = b.CreatePHI(i64_, 2, "k");
    k->addIncoming(start, pre);
    std::vector<llvm::PHINode*> acc_phi(count);
    for (int x = 0; x < count; ++x) {
      acc_phi[x] = b.CreatePHI(vec_, 2);
      acc_phi[x]->addIncoming(acc_in[x], pre);
    }
    b.CreateCondBr(b.CreateICmpSLT(k, end), body, exit);
    b.SetInsertPoint(body);
    std::vector<Value*> acc(acc_phi.begin(), acc_phi.end());
    if (prefetch_next_ && steps > 1) {
      // pb 64-byte lines of the next B block per iteration: spread over the tile's FMAs, so the
      // stream from memory never bursts (a burst of prefetches stalls the tile's own loads). At
      // pb=2 the tile's stream reaches twice as far, the last tiles' into the block after next:
      // with the weights from DRAM that is what helps (clamped to the next block, the gain went;
      // BENCHMARKS.md, "Weights streamed further ahead").
      for (int line = 0; line < t_.pb; ++line) {
        Value* offset =
            b.CreateAdd(b.CreateMul(k, I64(kLanes / steps * t_.pb)), I64(line * kLanes));
        if (stream_row_stride_) {
          // A strided block: the tile's share is whole rows of kc floats, stream_row_stride_ apart.
          Value* r = b.CreateUDiv(offset, I64(t_.kc));
          offset = b.CreateAdd(b.CreateMul(r, I64(stream_row_stride_)),
                               b.CreateSub(offset, b.CreateMul(r, I64(t_.kc))));
        }
        b.CreateIntrinsic(
            llvm::Intrinsic::prefetch, {ptr_},
            {b.CreateGEP(f32_, pfp, offset), b.getInt32(0), b.getInt32(2), b.getInt32(1)});
      }
    }
    if (d_.transposed_out && steps > 1) {
      // One output row a k-loop iteration, the tile's output rows in turn (the last again once
      // they are done): the lines of this tile's group of 16 columns the flush will write.
      const int64_t out_rows = static_cast<int64_t>(vecs) * kLanes;
      TileVector v;
      v.buffers = buffers;
      v.row =
          b.CreateAdd(n0, b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                                  b.CreateUDiv(k, I64(steps)), I64(out_rows - 1)));
      v.n_start = b.CreateSub(row, b.CreateSRem(row, I64(kLanes)));
      epilogue_.EmitPrefetch(b, v);
      epilogue_.EmitPrefetchStores(b, v);
    }
    for (int u = 0; u < steps; ++u) {
      Value* ku = b.CreateAdd(k, I64(u));
      std::vector<Value*> bv(vecs);
      Value* brow = b.CreateInBoundsGEP(f32_, bp, b.CreateMul(ku, I64(nr)));
      for (int j = 0; j < vecs; ++j) {
        bv[j] = b.CreateAlignedLoad(vec_, b.CreateConstInBoundsGEP1_64(f32_, brow, j * kLanes),
                                    llvm::Align(64));
      }
      if (t_.pf > 0) {
        // The B rows pf ahead, one prefetch per 64-byte line (past the panel's end a prefetch
        // is a no-op: it never faults).
        Value* ahead = b.CreateGEP(f32_, brow, I64(t_.pf * nr));
        for (int64_t line = 0; line < nr; line += kLanes) {
          b.CreateIntrinsic(
              llvm::Intrinsic::prefetch, {ptr_},
              {b.CreateGEP(f32_, ahead, I64(line)), b.getInt32(0), b.getInt32(3), b.getInt32(1)});
        }
      }
      Value* acol = b.CreateInBoundsGEP(f32_, a, b.CreateMul(ku, I64(a_ks)));
      for (int i = 0; i < rows; ++i) {
        Value* av =
            b.CreateAlignedLoad(f32_, b.CreateConstInBoundsGEP1_64(f32_, acol, i * a_ms), elem);
        Value* splat = b.CreateVectorSplat(kLanes, av);
        for (int j = 0; j < vecs; ++j)
          acc[i * vecs + j] = b.CreateCall(fma, {splat, bv[j], acc[i * vecs + j]});
      }
    }
    Value* next = b.CreateAdd(k, I64(steps), "k.next", true, true);
    k->addIncoming(next, b.GetInsertBlock());
    for (int x = 0; x < count; ++x) acc_phi[x]->addIncoming(acc[x], b.GetInsertBlock());
    b.CreateBr(head)->setMetadata(llvm::LLVMContext::MD_loop, NoUnroll());
    b.SetInsertPoint(exit);
    return std::vector<Value*>(acc_phi.begin(), acc_phi.end());
  };
  std::vector<Value*> acc = init;
  for (int i = 0; i < rows && !d_.transposed_out; ++i) {
    for (int j = 0; j < vecs; ++j) {
      TileVector v;
      v.buffers = buffers;
      v.row = b.CreateAdd(row, I64(i));
      v.n_start = b.CreateAdd(n0, I64(j * kLanes));
      epilogue_.EmitPrefetch(b, v);
    }
  }
  if (t_.ku > 1) {
    Value* main_end = b.CreateSub(kcount, b.CreateSRem(kcount, I64(t_.ku)), "k.main_end");
    acc = emit_k_loop(I64(0), main_end, t_.ku, acc, "kmain");
    acc = emit_k_loop(main_end, kcount, 1, acc, "krest");
  } else {
    acc = emit_k_loop(I64(0), kcount, 1, acc, "k");
  }

  // The finished tile: epilogue and stores after the last k block, partial sums otherwise.
  auto emit_epilogue = [&] {
    if (d_.transposed_out) {
      EmitTransposedTile(b, acc, s, stage, b.CreateSRem(row, I64(kLanes)));
      return;  // the task runs the epilogue on whole staging rows (EmitFlush)
    }
    if (epilogue_tile_fn_) {
      // A heavy epilogue runs once per tile, from the accumulators spilled to a stack block: one
      // call per tile, its constants loaded once, instead of one call per vector.
      MatmulBuilder entry(&f->getEntryBlock(), f->getEntryBlock().begin());
      llvm::AllocaInst* block = entry.CreateAlloca(vec_, I64(count), "acc_block");
      block->setAlignment(llvm::Align(64));
      for (int x = 0; x < count; ++x) {
        b.CreateAlignedStore(acc[x], b.CreateConstInBoundsGEP1_64(vec_, block, x), llvm::Align(64));
      }
      b.CreateCall(epilogue_tile_fn_,
                   {buffers, row, n0, block, I64(rows), I64(vecs), I64(s.last_lanes)});
      return;
    }
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < vecs; ++j) {
        int lanes = j == vecs - 1 ? s.last_lanes : kLanes;
        b.CreateCall(epilogue_fn_,
                     {buffers, b.CreateAdd(row, I64(i)), b.CreateAdd(n0, I64(j * kLanes)),
                      acc[i * vecs + j], I64(lanes)});
      }
    }
  };
  if (k_blocks_ > 1) {
    BasicBlock* epi = BasicBlock::Create(ctx_, "epilogue", f);
    BasicBlock* partial = BasicBlock::Create(ctx_, "store_partial", f);
    BasicBlock* done = BasicBlock::Create(ctx_, "done", f);
    b.CreateCondBr(last, epi, partial);
    b.SetInsertPoint(partial);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < vecs; ++j) {
        Value* p = c_ptr(b, i, j);
        if (lane_mask(j)) {
          b.CreateMaskedStore(acc[i * vecs + j], p, elem, lane_mask(j));
        } else {
          b.CreateAlignedStore(acc[i * vecs + j], p, elem);
        }
      }
    }
    b.CreateBr(done);
    b.SetInsertPoint(epi);
    emit_epilogue();
    b.CreateBr(done);
    b.SetInsertPoint(done);
  } else {
    emit_epilogue();  // one k block: `first` and `last` are always true
  }
  b.CreateRetVoid();
  return f;
}

// Three rounds of two-input shuffles (the unpacklo/hi of floats, of float pairs, then 128-bit
// lanes), 32 per 16 output rows, then one masked store per output row into its staging row at
// `offset` (the tile's first column within its group of 16).
void Emitter::EmitTransposedTile(MatmulBuilder& b, const std::vector<Value*>& acc,
                                 const TileShape& s, Value* stage, Value* offset) {
  Value* zero = llvm::Constant::getNullValue(vec_);
  Value* rows_mask = LaneMask(s.rows);
  auto shuffle = [&](Value* x, Value* y, auto lane_of) {
    std::vector<int> mask(kLanes);
    for (int i = 0; i < kLanes; ++i) mask[i] = lane_of(i / 4, i % 4);
    return b.CreateShuffleVector(x, y, mask);
  };
  for (int j = 0; j < s.vectors; ++j) {
    std::vector<Value*> r(kTransposeRows, zero);
    for (int i = 0; i < s.rows; ++i) r[i] = acc[i * s.vectors + j];
    // u[p][h], 128-bit lane q: rows 2p, 2p + 1 at columns 4q + 2h and 4q + 2h + 1, interleaved.
    Value* u[4][2];
    for (int p = 0; p < 4; ++p) {
      for (int h = 0; h < 2; ++h) {
        u[p][h] = shuffle(r[2 * p], r[2 * p + 1],
                          [h](int q, int e) { return 4 * q + 2 * h + e / 2 + (e % 2) * kLanes; });
      }
    }
    // v[c][g], lane q: rows 4g .. 4g + 3 at column 4q + c.
    Value* v[4][2];
    for (int g = 0; g < 2; ++g) {
      for (int h = 0; h < 2; ++h) {
        for (int odd = 0; odd < 2; ++odd) {
          v[2 * h + odd][g] = shuffle(u[2 * g][h], u[2 * g + 1][h], [odd](int q, int e) {
            return 4 * q + 2 * odd + e % 2 + (e / 2) * kLanes;
          });
        }
      }
    }
    // Column 4q + c: rows 0 .. 3 then 4 .. 7 (lanes 8 .. 15 repeat them: never stored).
    const int columns = j == s.vectors - 1 ? s.last_lanes : kLanes;
    for (int col = 0; col < columns; ++col) {
      const int q = col / 4, c = col % 4;
      Value* out = shuffle(v[c][0], v[c][1],
                           [q](int half, int e) { return 4 * q + e + (half % 2) * kLanes; });
      Value* at = b.CreateAdd(I64((j * kLanes + col) * kStageRow), offset);
      b.CreateMaskedStore(out, b.CreateInBoundsGEP(f32_, stage, at), llvm::Align(4), rows_mask);
    }
  }
}

// flush(buffers, stage, row0, rows, n_start, lanes): the epilogue of staging rows 0 .. rows - 1
// (output rows row0 on, columns n_start + lane for lane < lanes); then, where tiles can straddle
// two groups (mr not dividing 16), each row's second half, the columns a tile wrote past the
// group's end, moves to its first.
Function* Emitter::EmitFlush() {
  Function* f = NewFunction(d_.name + ".flush", Type::getVoidTy(ctx_),
                            {ptr_, ptr_, i64_, i64_, i64_, i64_}, true);
  f->addFnAttr(llvm::Attribute::NoInline);
  for (int i : {0, 1}) f->addParamAttr(i, llvm::Attribute::NoAlias);
  Value *buffers = f->getArg(0), *stage = f->getArg(1), *row0 = f->getArg(2), *rows = f->getArg(3),
        *n_start = f->getArg(4), *lanes = f->getArg(5);
  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", f));
  EmitLoop(b, I64(0), rows, 1, "flush_row", [&](MatmulBuilder& b, Value* i) {
    Value* first = b.CreateInBoundsGEP(f32_, stage, b.CreateMul(i, I64(kStageRow)));
    Value* v = b.CreateAlignedLoad(vec_, first, llvm::Align(64));
    b.CreateCall(epilogue_fn_, {buffers, b.CreateAdd(row0, i), n_start, v, lanes});
    if (kLanes % t_.mr != 0) {
      Value* second = b.CreateConstInBoundsGEP1_64(f32_, first, kLanes);
      b.CreateAlignedStore(b.CreateAlignedLoad(vec_, second, llvm::Align(64)), first,
                           llvm::Align(64));
    }
  });
  b.CreateRetVoid();
  return f;
}

// epilogue(buffers, row, n_start, acc, lanes): the group's epilogue for one tile vector.
Function* Emitter::EmitEpilogue() {
  Function* f = NewFunction(d_.name + ".epilogue", Type::getVoidTy(ctx_),
                            {ptr_, i64_, i64_, vec_, i64_}, true);
  f->addParamAttr(0, llvm::Attribute::NoAlias);
  f->addFnAttr(llvm::Attribute::AlwaysInline);  // into the tile (cheap) or the tile loop (heavy)
  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", f));
  std::vector<llvm::Constant*> iota;
  for (int i = 0; i < kLanes; ++i) iota.push_back(llvm::ConstantInt::get(i64_, i));
  TileVector v;
  v.buffers = f->getArg(0);
  v.row = f->getArg(1);
  v.n_start = f->getArg(2);
  v.acc = f->getArg(3);
  v.mask = b.CreateICmpULT(llvm::ConstantVector::get(iota),
                           b.CreateVectorSplat(kLanes, f->getArg(4)), "mask");
  epilogue_.EmitVector(b, v);
  b.CreateRetVoid();
  return f;
}

// epilogue_tile(buffers, row0, n0, acc, rows, vectors, last_lanes): the epilogue of a whole
// tile, acc[i * vectors + j] being row row0 + i, columns n0 + 16 j + lane.
Function* Emitter::EmitTileEpilogue() {
  Function* f = NewFunction(d_.name + ".epilogue_tile", Type::getVoidTy(ctx_),
                            {ptr_, i64_, i64_, ptr_, i64_, i64_, i64_}, true);
  f->addFnAttr(llvm::Attribute::NoInline);
  for (int i : {0, 3}) f->addParamAttr(i, llvm::Attribute::NoAlias);
  Value *buffers = f->getArg(0), *row0 = f->getArg(1), *n0 = f->getArg(2), *acc = f->getArg(3),
        *rows = f->getArg(4), *vecs = f->getArg(5), *last_lanes = f->getArg(6);
  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", f));
  EmitLoop(b, I64(0), rows, 1, "epi_row", [&](MatmulBuilder& b, Value* i) {
    EmitLoop(b, I64(0), vecs, 1, "epi_vec", [&](MatmulBuilder& b, Value* j) {
      Value* last = b.CreateICmpEQ(j, b.CreateSub(vecs, I64(1)));
      Value* lanes = b.CreateSelect(last, last_lanes, I64(kLanes));
      Value* v = b.CreateAlignedLoad(
          vec_, b.CreateInBoundsGEP(vec_, acc, b.CreateAdd(b.CreateMul(i, vecs), j)),
          llvm::Align(64));
      b.CreateCall(epilogue_fn_, {buffers, b.CreateAdd(row0, i),
                                  b.CreateAdd(n0, b.CreateMul(j, I64(kLanes))), v, lanes});
    });
  });
  b.CreateRetVoid();
  return f;
}

Function* Emitter::Emit() {
  if (t_.wpack) {
    EmitBindTables();
    EmitBind();
  }
  epilogue_fn_ = EmitEpilogue();
  if (d_.transposed_out) {
    flush_fn_ = EmitFlush();
  } else if (!epilogue_.Cheap()) {
    epilogue_tile_fn_ = EmitTileEpilogue();
  }
  Function* task = EmitTask();
  Function* kernel = NewFunction(d_.name, Type::getVoidTy(ctx_), {ptr_}, false);
  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", kernel));
  Value* buffers = kernel->getArg(0);
  const int64_t tasks = t_.Tasks(l_);
  if (tasks == 1) {
    b.CreateCall(task, {buffers, I64(0), I64(1)});
  } else {
    llvm::FunctionCallee parallel_for = module_.getOrInsertFunction(
        "fusetune_parallel_for",
        llvm::FunctionType::get(Type::getVoidTy(ctx_), {i64_, ptr_, ptr_}, false));
    b.CreateCall(parallel_for, {I64(tasks), task, buffers});
  }
  b.CreateRetVoid();
  return kernel;
}

}  // namespace matmul_detail

using llvm::Type;
using llvm::Value;

void EmitCountedLoop(MatmulBuilder& b, Value* start, Value* end, int64_t step,
                     const std::string& name,
                     const std::function<void(MatmulBuilder&, Value*)>& body,
                     llvm::MDNode* loop_md) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, name + ".head", f);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, name + ".body", f);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, name + ".exit", f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, name);
  i->addIncoming(start, pre);
  b.CreateCondBr(b.CreateICmpSLT(i, end), loop, exit);
  b.SetInsertPoint(loop);
  body(b, i);
  Value* next = b.CreateAdd(i, b.getInt64(step), name + ".next", /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, b.GetInsertBlock());
  llvm::BranchInst* back = b.CreateBr(head);
  if (loop_md) back->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
  b.SetInsertPoint(exit);
}

MatmulOperand OperandA(const MatmulLayout& l, int buffer, bool batch_broadcast) {
  MatmulOperand op;
  op.buffer = buffer;
  op.batch_stride = batch_broadcast ? 0 : l.m * l.k;
  op.row_stride = l.transpose_a ? 1 : l.k;
  op.k_stride = l.transpose_a ? l.m : 1;
  return op;
}

MatmulOperand OperandB(const MatmulLayout& l, int buffer, bool batch_broadcast) {
  MatmulOperand op;
  op.buffer = buffer;
  op.batch_stride = batch_broadcast ? 0 : l.n * l.k;
  op.row_stride = l.transpose_b ? l.k : 1;
  op.k_stride = l.transpose_b ? 1 : l.n;
  return op;
}

Value* BufferElementPtr(MatmulBuilder& b, Value* buffers, int index, Value* offset) {
  llvm::LLVMContext& ctx = b.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  Value* base =
      b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, buffers, index), llvm::Align(8));
  return b.CreateInBoundsGEP(Type::getFloatTy(ctx), base, offset);
}

void StoreEpilogue::EmitVector(MatmulBuilder& b, const TileVector& v) {
  Value* offset = b.CreateAdd(b.CreateMul(v.row, b.getInt64(n_)), v.n_start);
  b.CreateMaskedStore(v.acc, BufferElementPtr(b, v.buffers, out_buffer_, offset), llvm::Align(4),
                      v.mask);
}

llvm::Function* EmitMatmulFunction(llvm::Module& module, const MatmulKernelDesc& desc,
                                   TileEpilogue& epilogue, const TargetInfo& target) {
  return matmul_detail::Emitter(module, desc, epilogue, target).Emit();
}

}  // namespace fusetune::codegen
