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
#include "worker/codegen/templates/matmul_runtime.h"

namespace fusetune::codegen {
namespace {

constexpr int kLanes = 16;

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
    a_ms_ = d_.a.compute ? t_.kc : d_.a.row_stride;
    a_ks_ = d_.a.compute ? 1 : d_.a.k_stride;
    // A B block (nc rows of n, all of K) is one contiguous range when B is [n][k] and packed in
    // one k block: the tiles can stream the next one with one pointer.
    prefetch_next_ = t_.pb && k_blocks_ == 1 && !d_.b.compute && d_.b.k_stride == 1 &&
                     d_.b.row_stride == l_.k && t_.ku > 1;
    FT_CHECK(k_blocks_ == 1 || d_.acc_buffer >= 0,
             "matmul: k blocks need a float32 output for partial sums");
  }

  Function* Emit();

 private:
  Function* NewFunction(const std::string& name, Type* result, std::vector<Type*> params,
                        bool internal);
  Function* EmitTile(const TileShape& shape);
  Function* EmitTask();
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
  bool prefetch_next_ = false;  // pb: B blocks are contiguous and the tiles stream the next one
  Function* epilogue_fn_ = nullptr;
  Function* epilogue_tile_fn_ = nullptr;  // set for heavy epilogues
};

Function* Emitter::NewFunction(const std::string& name, Type* result, std::vector<Type*> params,
                               bool internal) {
  auto* type = llvm::FunctionType::get(result, params, false);
  Function* f = Function::Create(
      type, internal ? Function::InternalLinkage : Function::ExternalLinkage, name, module_);
  f->addFnAttr("target-cpu", target_.cpu);
  f->addFnAttr("target-features", target_.FeatureString());
  // 512-bit vectors stay 512-bit only with this (LLVM's models for this CPU prefer 256).
  if (target_.Has("avx512f")) f->addFnAttr("prefer-vector-width", "512");
  f->addFnAttr(llvm::Attribute::NoUnwind);
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
  Function* f = b.GetInsertBlock()->getParent();
  BasicBlock* pre = b.GetInsertBlock();
  BasicBlock* head = BasicBlock::Create(ctx_, name + ".head", f);
  BasicBlock* loop = BasicBlock::Create(ctx_, name + ".body", f);
  BasicBlock* exit = BasicBlock::Create(ctx_, name + ".exit", f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(i64_, 2, name);
  i->addIncoming(start, pre);
  b.CreateCondBr(b.CreateICmpSLT(i, end), loop, exit);
  b.SetInsertPoint(loop);
  body(b, i);
  Value* next = b.CreateAdd(i, I64(step), name + ".next", /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(head)->setMetadata(llvm::LLVMContext::MD_loop, NoUnroll());
  b.SetInsertPoint(exit);
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

// tile(a, bp, kcount, first, last, row, n0, buffers, pfp). `pfp`: where the tile's share of the
// next B block begins (pb knob), one line prefetched per k-loop iteration. `a` points at A(b, m0,
// k0), `bp` at the packed panel of this k block ([kcount][nr], 64-byte aligned).
Function* Emitter::EmitTile(const TileShape& s) {
  std::string name = d_.name + ".tile" + std::to_string(s.rows) + "x" + std::to_string(s.vectors) +
                     (s.last_lanes < kLanes ? "m" + std::to_string(s.last_lanes) : "");
  Function* f = NewFunction(name, Type::getVoidTy(ctx_),
                            {ptr_, ptr_, i64_, i1_, i1_, i64_, i64_, ptr_, ptr_}, true);
  f->addFnAttr(llvm::Attribute::NoInline);
  auto arg = [&](int i) { return f->getArg(i); };
  Value *a = arg(0), *bp = arg(1), *kcount = arg(2), *first = arg(3), *last = arg(4), *row = arg(5),
        *n0 = arg(6), *buffers = arg(7), *pfp = arg(8);
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
      // One 64-byte line of the next B block per iteration: spread over the tile's FMAs, so the
      // stream from memory never bursts (a burst of prefetches stalls the tile's own loads).
      b.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr_},
                        {b.CreateGEP(f32_, pfp, b.CreateMul(k, I64(kLanes / steps))), b.getInt32(0),
                         b.getInt32(2), b.getInt32(1)});
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
  for (int i = 0; i < rows; ++i) {
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

// task(buffers, begin, end): tasks are numbered (b, n block, m block), m block fastest, so a
// thread's consecutive tasks share a packed B block when there is one k block.
Function* Emitter::EmitTask() {
  Function* f = NewFunction(d_.name + ".task", Type::getVoidTy(ctx_), {ptr_, i64_, i64_}, true);
  Value *buffers = f->getArg(0), *begin = f->getArg(1), *end = f->getArg(2);
  f->addParamAttr(0, llvm::Attribute::NoAlias);  // nothing writes the buffer array during a call
  MatmulBuilder b(BasicBlock::Create(ctx_, "entry", f));

  const int64_t mr = t_.mr, nr = t_.nr, mc = t_.mc, nc = t_.nc, kc = t_.kc;
  const int64_t m_blocks = t_.MBlocks(l_), n_blocks = t_.NBlocks(l_);
  const int64_t panels = (nc + nr - 1) / nr;
  const int64_t b_bytes = (panels * nr * kc * 4 + 63) / 64 * 64;
  const int64_t scratch_bytes = b_bytes + (d_.a.compute ? mc * kc * 4 : 0);

  auto* scratch_type = llvm::FunctionType::get(ptr_, {i64_}, false);
  auto* pack_type = llvm::FunctionType::get(Type::getVoidTy(ctx_),
                                            {ptr_, i64_, i64_, i64_, i64_, i64_, ptr_}, false);
  Value* scratch =
      b.CreateCall(scratch_type, RuntimeFn(reinterpret_cast<void*>(&fusetune_mm_scratch), b),
                   {I64(scratch_bytes)}, "scratch");
  Value* pack_fn = RuntimeFn(reinterpret_cast<void*>(&fusetune_mm_pack_b), b);
  Value* a_packed = d_.a.compute
                        ? b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), scratch, b_bytes, "a_packed")
                        : nullptr;
  auto base_of = [&](const MatmulOperand& op) -> Value* {
    if (op.compute || op.buffer < 0) return llvm::Constant::getNullValue(ptr_);
    return b.CreateAlignedLoad(ptr_, b.CreateConstInBoundsGEP1_64(ptr_, buffers, op.buffer),
                               llvm::Align(8));
  };
  Value* a_base = base_of(d_.a);
  Value* b_base = base_of(d_.b);
  // Which (b, n block) the scratch holds; -1: none yet.
  Value* packed = b.CreateAlloca(i64_, nullptr, "packed");
  b.CreateStore(I64(-1), packed);

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
    Value* mb = b.CreateSRem(t, I64(m_blocks));
    Value* q = b.CreateSDiv(t, I64(m_blocks));  // (b, n block)
    Value* nb = b.CreateSRem(q, I64(n_blocks));
    Value* bi = b.CreateSDiv(q, I64(n_blocks));
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
    // The B block of this thread's next task (when it packs another one), else the scratch: the
    // tiles' prefetches then hit in cache and cost nothing.
    Value* next_block = scratch;
    if (prefetch_next_) {
      Value* next = b.CreateAdd(t, I64(1));
      Value* nq = b.CreateSDiv(next, I64(m_blocks));
      Value* has_next = b.CreateAnd(b.CreateICmpSLT(next, end), b.CreateICmpNE(nq, q));
      Value* nn0 = b.CreateMul(b.CreateSRem(nq, I64(n_blocks)), I64(nc));
      Value* nbi = b.CreateSDiv(nq, I64(n_blocks));
      Value* src = b.CreateGEP(f32_, b_base,
                               b.CreateAdd(b.CreateMul(nbi, I64(d_.b.batch_stride)),
                                           b.CreateMul(nn0, I64(d_.b.row_stride))));
      next_block = b.CreateSelect(has_next, src, scratch);
    }

    EmitLoop(b, I64(0), I64(k_blocks_), 1, "kb", [&](MatmulBuilder& b, Value* kb) {
      Value* k0 = b.CreateMul(kb, I64(kc));
      Value* k_count =
          b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(kc), b.CreateSub(I64(l_.k), k0));
      // Pack B(b, nb0.., k0..) unless this thread's scratch already holds it (one k block only).
      Value* need_pack = k_blocks_ > 1 ? static_cast<Value*>(llvm::ConstantInt::getTrue(ctx_))
                                       : b.CreateICmpNE(b.CreateLoad(i64_, packed), q);
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

      if (d_.a.compute) {
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
            d_.a.compute
                ? b.CreateInBoundsGEP(f32_, a_packed, b.CreateMul(b.CreateSub(m, m0), I64(kc)))
                : b.CreateInBoundsGEP(f32_, a_k, b.CreateMul(m, I64(d_.a.row_stride)));
        Value* panel = b.CreateSDiv(b.CreateSub(n, nb0), I64(nr));
        Value* bp =
            b.CreateInBoundsGEP(f32_, scratch, b.CreateMul(panel, b.CreateMul(k_count, I64(nr))));
        // This tile's share of the next block: tiles are numbered in loop order.
        const int64_t m_tiles = (mc + mr - 1) / mr;
        Value* mi = b.CreateSDiv(b.CreateSub(m, m0), I64(mr));
        Value* index = t_.loop == 0 ? b.CreateAdd(b.CreateMul(mi, I64(panels)), panel)
                                    : b.CreateAdd(b.CreateMul(panel, I64(m_tiles)), mi);
        Value* pfp = b.CreateGEP(
            f32_, next_block,
            b.CreateMul(index, I64((nc * l_.k + m_tiles * panels - 1) / (m_tiles * panels))));
        b.CreateCall(tile_type, fn,
                     {a_ptr, bp, k_count, first, last, b.CreateAdd(row_base, m), n, buffers, pfp});
      };
      if (t_.loop == 0) {
        EmitLoop(b, m0, m_end, mr, "m", [&](MatmulBuilder& b, Value* m) {
          EmitLoop(b, nb0, n_end, nr, "n", [&](MatmulBuilder& b, Value* n) { call_tile(b, m, n); });
        });
      } else {
        EmitLoop(b, nb0, n_end, nr, "n", [&](MatmulBuilder& b, Value* n) {
          EmitLoop(b, m0, m_end, mr, "m", [&](MatmulBuilder& b, Value* m) { call_tile(b, m, n); });
        });
      }
    });
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
  epilogue_fn_ = EmitEpilogue();
  if (!epilogue_.Cheap()) epilogue_tile_fn_ = EmitTileEpilogue();
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

}  // namespace

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
  return Emitter(module, desc, epilogue, target).Emit();
}

}  // namespace fusetune::codegen
