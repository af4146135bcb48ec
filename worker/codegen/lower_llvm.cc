#include "worker/codegen/lower_llvm.h"

#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "ir/error.h"
#include "worker/codegen/scalar_lowering.h"

namespace fusetune::codegen {
namespace {

using llvm::Value;

unsigned LanesOf(Value* v) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return vt->getNumElements();
  return 0;
}

class Lowerer {
 public:
  Lowerer(const Kernel& kernel, Jit& jit, llvm::Module& module, std::string symbol)
      : k_(kernel),
        jit_(jit),
        m_(module),
        ctx_(module.getContext()),
        b_(ctx_),
        symbol_(std::move(symbol)) {}

  void Run() {
    var_values_.assign(k_.var_names.size(), nullptr);
    auto* fn_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false);
    llvm::Function* fn =
        llvm::Function::Create(fn_type, llvm::Function::ExternalLinkage, symbol_, m_);
    jit_.PrepareFunction(*fn);
    BeginFunction(fn, fn->getArg(0));
    if (k_.body) LowerStmt(k_.body);
    b_.CreateRetVoid();
  }

 private:
  // ---- functions -------------------------------------------------------------------------
  void BeginFunction(llvm::Function* fn, Value* buffers) {
    fn_ = fn;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    if (!buffers) {  // a parallel body: the buffers pointer is the first slot of its context
      buffers = b_.CreateIntToPtr(b_.CreateLoad(b_.getInt64Ty(), fn->getArg(0)), b_.getPtrTy());
    }
    buffers_ = buffers;
    ptrs_.assign(k_.buffers.size(), nullptr);
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const KBuffer& buf = k_.buffers[i];
      if (buf.param_index < 0) continue;
      Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), buffers, buf.param_index);
      ptrs_[i] = b_.CreateLoad(b_.getPtrTy(), slot, buf.name);
    }
  }

  // ---- statements ------------------------------------------------------------------------
  void LowerStmt(const KStmt& s) {
    switch (s->kind) {
      case KStmtKind::kBlock:
        for (const KStmt& c : s->body) LowerStmt(c);
        return;
      case KStmtKind::kAlloc: {
        const KBuffer& buf = k_.buffers.at(s->buffer);
        llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
        auto* type =
            llvm::ArrayType::get(MemoryType(ctx_, buf.dtype), static_cast<uint64_t>(buf.size));
        auto* slot = entry.CreateAlloca(type, nullptr, buf.name);
        slot->setAlignment(llvm::Align(64));
        ptrs_[s->buffer] = slot;
        for (const KStmt& c : s->body) LowerStmt(c);
        return;
      }
      case KStmtKind::kStore:
        LowerStore(*s);
        return;
      case KStmtKind::kFor:
        LowerFor(*s);
        return;
    }
  }

  // for (iv = begin; iv < end; iv += step) body(iv)
  template <typename Body>
  void EmitLoop(Value* begin, Value* end, int64_t step, Body body) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
    auto* body_block = llvm::BasicBlock::Create(ctx_, "body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, "iv");
    iv->addIncoming(begin, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, end), body_block, exit);
    b_.SetInsertPoint(body_block);
    body(iv);
    Value* next = b_.CreateAdd(iv, b_.getInt64(step), "", /*HasNUW=*/true, /*HasNSW=*/true);
    iv->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
  }

  void LowerFor(const KStmtNode& s) {
    if (s.extent <= 0) return;
    const KStmt& body = s.body.at(0);
    LoopKind kind = s.loop;
    if (kind == LoopKind::kParallel && (in_parallel_ || vec_var_ >= 0 || s.extent == 1))
      kind = LoopKind::kSerial;
    if (kind == LoopKind::kVectorized && (vec_var_ >= 0 || s.width <= 1)) kind = LoopKind::kSerial;
    switch (kind) {
      case LoopKind::kSerial:
        EmitLoop(b_.getInt64(0), b_.getInt64(s.extent), 1,
                 [&](Value* iv) { WithVar(s.var, iv, body); });
        return;
      case LoopKind::kUnrolled:
        for (int64_t i = 0; i < s.extent; ++i) WithVar(s.var, b_.getInt64(i), body);
        return;
      case LoopKind::kVectorized:
        LowerVectorized(s);
        return;
      case LoopKind::kParallel:
        LowerParallel(s);
        return;
    }
  }

  void WithVar(int var, Value* value, const KStmt& body) {
    Value* saved = var_values_[var];
    var_values_[var] = value;
    scope_.push_back(var);
    LowerStmt(body);
    scope_.pop_back();
    var_values_[var] = saved;
  }

  void LowerVectorized(const KStmtNode& s) {
    const int64_t w = s.width;
    const int64_t full = s.extent / w * w;
    const int64_t tail = s.extent - full;
    vec_var_ = s.var;
    vec_width_ = static_cast<int>(w);
    if (full > 0) {
      vec_mask_ = nullptr;
      EmitLoop(b_.getInt64(0), b_.getInt64(full), w,
               [&](Value* iv) { WithVar(s.var, iv, s.body.at(0)); });
    }
    if (tail > 0) {
      std::vector<llvm::Constant*> lanes;
      for (int64_t i = 0; i < w; ++i) lanes.push_back(b_.getInt1(i < tail));
      vec_mask_ = llvm::ConstantVector::get(lanes);
      WithVar(s.var, b_.getInt64(full), s.body.at(0));
    }
    vec_var_ = -1;
    vec_width_ = 0;
    vec_mask_ = nullptr;
  }

  // The body becomes `void <symbol>_parN(ptr ctx, i64 begin, i64 end)`; ctx holds the buffers
  // pointer and the values of the enclosing loop variables. Runs through
  // fusetune_parallel_for_chunked: iterations are independent, so stealing is safe.
  void LowerParallel(const KStmtNode& s) {
    std::vector<int> captured = scope_;
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    auto* ctx_type = llvm::ArrayType::get(b_.getInt64Ty(), captured.size() + 1);
    Value* ctx = entry.CreateAlloca(ctx_type, nullptr, "par_ctx");
    b_.CreateStore(b_.CreatePtrToInt(buffers_, b_.getInt64Ty()),
                   b_.CreateConstInBoundsGEP2_64(ctx_type, ctx, 0, 0));
    for (size_t i = 0; i < captured.size(); ++i) {
      b_.CreateStore(var_values_[captured[i]],
                     b_.CreateConstInBoundsGEP2_64(ctx_type, ctx, 0, i + 1));
    }

    auto* body_type = llvm::FunctionType::get(
        b_.getVoidTy(), {b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty()}, false);
    auto* body_fn = llvm::Function::Create(body_type, llvm::Function::InternalLinkage,
                                           fmt::format("{}_par{}", symbol_, parallel_count_++), m_);
    jit_.PrepareFunction(*body_fn);

    // Save the caller's state, emit the body function, restore.
    llvm::Function* saved_fn = fn_;
    Value* saved_buffers = buffers_;
    std::vector<Value*> saved_ptrs = ptrs_;
    std::vector<Value*> saved_vars = var_values_;
    llvm::BasicBlock* saved_block = b_.GetInsertBlock();

    Value* body_ctx = body_fn->getArg(0);
    BeginFunction(body_fn, nullptr);
    for (size_t i = 0; i < captured.size(); ++i) {
      var_values_[captured[i]] = b_.CreateLoad(
          b_.getInt64Ty(), b_.CreateConstInBoundsGEP2_64(ctx_type, body_ctx, 0, i + 1));
    }
    in_parallel_ = true;
    EmitLoop(body_fn->getArg(1), body_fn->getArg(2), 1,
             [&](Value* iv) { WithVar(s.var, iv, s.body.at(0)); });
    in_parallel_ = false;
    b_.CreateRetVoid();

    fn_ = saved_fn;
    buffers_ = saved_buffers;
    ptrs_ = saved_ptrs;
    var_values_ = saved_vars;
    b_.SetInsertPoint(saved_block);

    llvm::FunctionCallee pool = m_.getOrInsertFunction(
        "fusetune_parallel_for_chunked",
        llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt64Ty(), b_.getPtrTy(), b_.getPtrTy()},
                                false));
    b_.CreateCall(pool, {b_.getInt64(s.extent), body_fn, ctx});
  }

  void LowerStore(const KStmtNode& s) {
    memo_.clear();
    const KBuffer& buf = k_.buffers.at(s.buffer);
    Value* ptr = ptrs_.at(s.buffer);
    FT_CHECK(ptr != nullptr, fmt::format("store to {} outside its allocation", buf.name));
    llvm::Type* elem = MemoryType(ctx_, buf.dtype);
    Value* value = ToMemory(b_, ConvertTo(b_, LowerExpr(s.value, false), buf.dtype), buf.dtype);
    const llvm::Align align(DTypeSize(buf.dtype));
    if (vec_var_ < 0) {
      b_.CreateAlignedStore(value, b_.CreateInBoundsGEP(elem, ptr, LowerExpr(s.index, true)),
                            align);
      return;
    }
    std::optional<int64_t> stride = Stride(s.index);
    if (stride && *stride == 0) {
      FT_CHECK(LanesOf(value) == 0,
               fmt::format("vector value stored to one element of {}", buf.name));
      b_.CreateAlignedStore(value, b_.CreateInBoundsGEP(elem, ptr, LowerExpr(s.index, true)),
                            align);
      return;
    }
    Value* vector = Splat(b_, value, vec_width_);
    if (stride && *stride == 1) {
      Value* address = b_.CreateInBoundsGEP(elem, ptr, LowerExpr(s.index, true));
      if (vec_mask_) {
        b_.CreateMaskedStore(vector, address, align, vec_mask_);
      } else {
        b_.CreateAlignedStore(vector, address, align);
      }
      return;
    }
    Value* addresses =
        b_.CreateInBoundsGEP(elem, ptr, Splat(b_, LowerExpr(s.index, false), vec_width_));
    b_.CreateMaskedScatter(vector, addresses, align, Mask());
  }

  Value* Mask() {
    if (vec_mask_) return vec_mask_;
    return llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(vec_width_), b_.getTrue());
  }

  // ---- index analysis ----------------------------------------------------------------------
  // How an index changes from lane to lane of the vectorized loop: a constant stride, or unknown.
  std::optional<int64_t> Stride(const KExpr& e) const {
    auto both = [&](auto f) -> std::optional<int64_t> {
      auto a = Stride(e->args[0]), c = Stride(e->args[1]);
      if (!a || !c) return std::nullopt;
      return f(*a, *c);
    };
    switch (e->op) {
      case KOp::kInt:
        return 0;
      case KOp::kVar:
        return e->var == vec_var_ ? 1 : 0;
      case KOp::kAdd:
        return both([](int64_t a, int64_t c) { return a + c; });
      case KOp::kSub:
        return both([](int64_t a, int64_t c) { return a - c; });
      case KOp::kMul: {
        auto a = Stride(e->args[0]), c = Stride(e->args[1]);
        if (!a || !c) return std::nullopt;
        if (*a == 0 && *c == 0) return 0;
        if (e->args[1]->op == KOp::kInt) return *a * e->args[1]->value;
        if (e->args[0]->op == KOp::kInt) return *c * e->args[0]->value;
        return std::nullopt;
      }
      case KOp::kFloorDiv:
      case KOp::kMod: {
        auto a = Stride(e->args[0]), c = Stride(e->args[1]);
        if (!a || !c) return std::nullopt;
        if (*a == 0 && *c == 0) return 0;
        // Lanes x0 .. x0 + s(W-1) with x0 a multiple of s*W never cross a multiple of d when
        // s*W divides d: the quotient is uniform and the remainder has stride s.
        if (*c == 0 && e->args[1]->op == KOp::kInt && *a > 0) {
          int64_t span = *a * vec_width_, d = e->args[1]->value;
          int64_t align = Alignment(e->args[0]);
          if (d > 0 && d % span == 0 && (align == 0 || align % span == 0))
            return e->op == KOp::kMod ? *a : 0;
        }
        return std::nullopt;
      }
      case KOp::kMin:
      case KOp::kMax:
        if (Stride(e->args[0]) == std::optional<int64_t>(0) &&
            Stride(e->args[1]) == std::optional<int64_t>(0))
          return 0;
        return std::nullopt;
      case KOp::kLoad:
      case KOp::kEval:
        for (const KExpr& a : e->args)
          if (Stride(a) != std::optional<int64_t>(0)) return std::nullopt;
        return 0;
    }
    return std::nullopt;
  }

  // A number g such that the index's value at lane 0 is always a multiple of g (0: always 0).
  int64_t Alignment(const KExpr& e) const {
    switch (e->op) {
      case KOp::kInt:
        return e->value < 0 ? -e->value : e->value;
      case KOp::kVar:
        return e->var == vec_var_ ? vec_width_ : 1;
      case KOp::kAdd:
      case KOp::kSub:
        return std::gcd(Alignment(e->args[0]), Alignment(e->args[1]));
      case KOp::kMul: {
        int64_t a = Alignment(e->args[0]), c = Alignment(e->args[1]);
        return (a == 0 || c == 0) ? 0 : a * c;
      }
      default:
        return 1;
    }
  }

  // ---- expressions -------------------------------------------------------------------------
  // `lane0`: the value at the first lane of the vectorized loop (a scalar); otherwise the value
  // for all lanes (a vector where it varies, a scalar where it is uniform).
  Value* LowerExpr(const KExpr& e, bool lane0) {
    auto key = std::make_pair(e.get(), lane0 || vec_var_ < 0);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Value* v = LowerExprUncached(e, key.second);
    memo_.emplace(key, v);
    return v;
  }

  std::pair<Value*, Value*> Uniform(Value* a, Value* c) {
    unsigned lanes = std::max(LanesOf(a), LanesOf(c));
    return {Splat(b_, a, lanes), Splat(b_, c, lanes)};
  }

  Value* LowerExprUncached(const KExpr& e, bool lane0) {
    switch (e->op) {
      case KOp::kInt:
        return b_.getInt64(e->value);
      case KOp::kVar: {
        Value* v = var_values_.at(e->var);
        FT_CHECK(v != nullptr,
                 fmt::format("variable {} used outside its loop", k_.var_names.at(e->var)));
        if (e->var != vec_var_ || lane0) return v;
        std::vector<llvm::Constant*> steps;
        for (int i = 0; i < vec_width_; ++i) steps.push_back(b_.getInt64(i));
        return b_.CreateAdd(Splat(b_, v, vec_width_), llvm::ConstantVector::get(steps));
      }
      case KOp::kAdd:
      case KOp::kSub:
      case KOp::kMul:
      case KOp::kFloorDiv:
      case KOp::kMod:
      case KOp::kMin:
      case KOp::kMax: {
        auto [a, c] = Uniform(LowerExpr(e->args[0], lane0), LowerExpr(e->args[1], lane0));
        switch (e->op) {
          case KOp::kAdd:
            return b_.CreateAdd(a, c);
          case KOp::kSub:
            return b_.CreateSub(a, c);
          case KOp::kMul:
            return b_.CreateMul(a, c);
          case KOp::kMin:
            return b_.CreateSelect(b_.CreateICmpSLT(c, a), c, a);
          case KOp::kMax:
            return b_.CreateSelect(b_.CreateICmpSLT(a, c), c, a);
          default:
            break;
        }
        // Floor semantics (Python / the interpreter's index maps) for negative dividends.
        Value* q = b_.CreateSDiv(a, c);
        Value* r = b_.CreateSRem(a, c);
        Value* zero = llvm::Constant::getNullValue(a->getType());
        Value* fix =
            b_.CreateAnd(b_.CreateICmpNE(r, zero),
                         b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
        if (e->op == KOp::kFloorDiv) return b_.CreateSub(q, b_.CreateZExt(fix, q->getType()));
        return b_.CreateSelect(fix, b_.CreateAdd(r, c), r);
      }
      case KOp::kLoad:
        return LowerLoad(*e, lane0);
      case KOp::kEval: {
        std::vector<Value*> args;
        for (const KExpr& a : e->args) args.push_back(LowerExpr(a, lane0));
        return LowerScalarExpr(b_, e->scalar, args);
      }
    }
    FT_CHECK(false, "unknown kernel IR expression");
  }

  Value* LowerLoad(const KNode& e, bool lane0) {
    const KBuffer& buf = k_.buffers.at(e.buffer);
    Value* ptr = ptrs_.at(e.buffer);
    FT_CHECK(ptr != nullptr, fmt::format("load from {} outside its allocation", buf.name));
    llvm::Type* elem = MemoryType(ctx_, buf.dtype);
    const llvm::Align align(DTypeSize(buf.dtype));
    const KExpr& index = e.args.at(0);
    std::optional<int64_t> stride = lane0 ? std::optional<int64_t>(0) : Stride(index);
    Value* loaded;
    if (stride && *stride == 0) {
      loaded = b_.CreateAlignedLoad(elem, b_.CreateInBoundsGEP(elem, ptr, LowerExpr(index, true)),
                                    align);
    } else if (stride && *stride == 1) {
      auto* vtype = llvm::FixedVectorType::get(elem, vec_width_);
      Value* address = b_.CreateInBoundsGEP(elem, ptr, LowerExpr(index, true));
      if (vec_mask_) {
        loaded = b_.CreateMaskedLoad(vtype, address, align, vec_mask_,
                                     llvm::Constant::getNullValue(vtype));
      } else {
        loaded = b_.CreateAlignedLoad(vtype, address, align);
      }
    } else {
      auto* vtype = llvm::FixedVectorType::get(elem, vec_width_);
      Value* addresses =
          b_.CreateInBoundsGEP(elem, ptr, Splat(b_, LowerExpr(index, false), vec_width_));
      loaded = b_.CreateMaskedGather(vtype, addresses, align, Mask(),
                                     llvm::Constant::getNullValue(vtype));
    }
    return ToRegister(b_, loaded, buf.dtype);
  }

  const Kernel& k_;
  Jit& jit_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  std::string symbol_;

  llvm::Function* fn_ = nullptr;
  Value* buffers_ = nullptr;
  std::vector<Value*> ptrs_;        // by buffer id, in the current function
  std::vector<Value*> var_values_;  // by var id; the vectorized variable holds its lane-0 value
  std::vector<int> scope_;          // variables bound by enclosing loops, outermost first
  int vec_var_ = -1;
  int vec_width_ = 0;
  Value* vec_mask_ = nullptr;  // tail iteration of a vectorized loop
  bool in_parallel_ = false;
  int parallel_count_ = 0;
  std::map<std::pair<const KNode*, bool>, Value*> memo_;  // per store statement
};

}  // namespace

void LowerKernel(const Kernel& kernel, Jit& jit, JitModule& module, const std::string& symbol) {
  Lowerer(kernel, jit, module.module(), symbol).Run();
  jit.Verify(module);
}

}  // namespace fusetune::codegen
