#include "worker/codegen/templates/attention.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "ir/attention_schedule.h"
#include "ir/error.h"
#include "ir/group_expr.h"
#include "ir/index_simplify.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/scalar_lowering.h"
#include "worker/codegen/templates/matmul_emit.h"
#include "worker/codegen/templates/matmul_group.h"
#include "worker/codegen/templates/matmul_leaves.h"
#include "worker/codegen/templates/matmul_runtime.h"
#include "worker/codegen/vector_math.h"

namespace fusetune::codegen {
namespace {

using llvm::BasicBlock;
using llvm::Function;
using llvm::Type;
using llvm::Value;
using Builder = llvm::IRBuilder<>;
using Slots = std::vector<Value*>;

constexpr int kLanes = 16;

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// A float below the running max by more than this has an exp that rounds to 0 in float32.
constexpr double kExpUnderflow = 104.0;

// The chain's last step when it is a `where` that gives masked scores a constant (GPT-2's causal
// mask: -FLT_MAX) and decides from the mask alone, not the scores. A key block masked in every
// query row of a call then adds nothing to the softmax once each row has a score more than
// kExpUnderflow above the constant, so its products are skipped: a causal mask skips nearly half
// the blocks. Only the mask's values tell, so the tuner's random masks never see the saving.
struct MaskStep {
  InlinedExpr cond;  // the where's condition, over the chain's leaves
  bool masked_when;  // the value of `cond` that selects the constant
  double value;      // the constant
};

bool ReadsAnchor(const ScalarExpr& e, const std::vector<ExprLeaf>& leaves) {
  if (e->op == ScalarOp::kArg) return leaves[e->arg_index].kind == ExprLeaf::Kind::kAnchor;
  return std::any_of(e->operands.begin(), e->operands.end(),
                     [&](const ScalarExpr& o) { return ReadsAnchor(o, leaves); });
}

std::optional<MaskStep> FindMaskStep(const InlinedExpr& chain) {
  const ScalarNode& root = *chain.expr;
  if (root.op != ScalarOp::kSelect || ReadsAnchor(root.operands[0], chain.leaves))
    return std::nullopt;
  for (int branch : {1, 2})
    if (root.operands[branch]->op == ScalarOp::kConst)
      return MaskStep{{root.operands[0], chain.leaves}, branch == 1, root.operands[branch]->value};
  return std::nullopt;
}

// One operand (Q, K or V) element by element: `row` is the query or key index, `col` the depth
// (Q, K) or the value column (V). The operand's stored layout decides which coordinate comes
// first; a prologue inside the group is inlined (ir/group_expr.h).
class OperandReader {
 public:
  OperandReader(const Graph& graph, const FusedGroup& group, const BufferMap& buffers,
                ValueId value, bool swapped)
      : graph_(graph), buffers_(buffers), swapped_(swapped) {
    InlineOptions options;
    options.stop_at_anchor = false;
    const Shape& shape = graph.value(value).type.shape;
    expr_ =
        InlineValue(graph, group, value, IdentityCoords(static_cast<int>(shape.size())), options);
    // A head split (slice, reshape, transpose) reads the projection's output through divisions
    // and mods that the operand's own extents make trivial: without this, each element costs
    // integer divisions (per lane in the packing's 16-lane reads).
    for (ExprLeaf& leaf : expr_.leaves)
      for (IndexExpr& index : leaf.index) index = DropTrivial(index, shape);
  }

  Value* operator()(Builder& b, Value* buffers, Value* bi, Value* row, Value* col) const {
    std::vector<Value*> coords =
        swapped_ ? std::vector<Value*>{bi, col, row} : std::vector<Value*>{bi, row, col};
    return Evaluate(b, buffers, [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
      return LoadLeafScalar(b, base, leaf, shape, coords);
    });
  }

  // 16 elements along the operand's stored last axis, lanes from `last_start`, at `outer` on the
  // middle axis (the query or key index, or the depth / value column when swapped); lanes where
  // `mask` is false read nothing and are 0.
  Value* Lanes(Builder& b, Value* buffers, Value* bi, Value* outer, Value* last_start,
               Value* mask) const {
    std::vector<Value*> coords{bi, outer, last_start};
    Value* x = Splat(b,
                     Evaluate(b, buffers,
                              [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
                                return LoadLeafRow(b, base, leaf, shape, coords, last_start, mask);
                              }),
                     kLanes);
    return b.CreateSelect(mask, x, llvm::Constant::getNullValue(x->getType()));
  }

  bool swapped() const { return swapped_; }

 private:
  // The operand's expression as float32, each leaf read by `read`.
  Value* Evaluate(Builder& b, Value* buffers, const LeafRead& read) const {
    return ConvertTo(b, LowerLeaves(b, graph_, buffers_, buffers, expr_, read), DType::kFloat32);
  }

  const Graph& graph_;
  const BufferMap& buffers_;
  bool swapped_;
  InlinedExpr expr_;
};

class Emitter {
 public:
  Emitter(llvm::Module& module, const Graph& graph, const FusedGroup& group,
          const AttentionTiling& tiling, const TargetInfo& target, const std::string& name)
      : module_(module),
        ctx_(module.getContext()),
        graph_(graph),
        group_(group),
        s_(AttentionShapeOf(graph, group)),
        t_(tiling),
        target_(target),
        name_(name),
        buffers_(group),
        f32_(Type::getFloatTy(ctx_)),
        i64_(Type::getInt64Ty(ctx_)),
        ptr_(llvm::PointerType::get(ctx_, 0)),
        vec_(llvm::FixedVectorType::get(f32_, kLanes)) {
    const AttentionNodes& a = group.attention;
    const fusetune::Value& scores = graph.value(a.scores);
    const fusetune::Value& out = graph.value(a.output);
    q_.emplace(graph, group, buffers_, scores.inputs[0], scores.attrs.GetBool("transpose_a"));
    k_.emplace(graph, group, buffers_, scores.inputs[1], !scores.attrs.GetBool("transpose_b"));
    v_.emplace(graph, group, buffers_, out.inputs[1], out.attrs.GetBool("transpose_b"));
    // Operands read straight from a kernel input: K and V are packed by the runtime's vector
    // transpose, Q rows are read in place; computed ones go element by element.
    auto direct = [&](ValueId v) {
      return std::binary_search(group.inputs.begin(), group.inputs.end(), v);
    };
    if (direct(scores.inputs[0]) && !scores.attrs.GetBool("transpose_a"))
      q_direct_ = buffers_.Of(scores.inputs[0]);
    if (direct(scores.inputs[1])) {
      k_direct_ = buffers_.Of(scores.inputs[1]);
      k_swapped_ = !scores.attrs.GetBool("transpose_b");
    }
    if (direct(out.inputs[1])) {
      v_direct_ = buffers_.Of(out.inputs[1]);
      v_swapped_ = out.attrs.GetBool("transpose_b");
    }
    if (!a.chain.empty()) {
      // The steps between the scores and the softmax, with the scores as the anchor leaf.
      FusedGroup steps;
      steps.templ = GroupTemplate::kMatmul;
      steps.anchor = a.scores;
      steps.nodes = a.chain;
      steps.nodes.push_back(a.scores);
      std::sort(steps.nodes.begin(), steps.nodes.end());
      // The last step may hold the scores with leading 1s ([1, heads, M, N]): those axes are 0.
      std::vector<IndexExpr> coords = IdentityCoords(3);
      const int64_t rank = graph.value(a.chain.back()).type.rank();
      if (rank > 3) coords.insert(coords.begin(), rank - 3, ix::Const(0));
      chain_ = InlineValue(graph, steps, a.chain.back(), coords);
      mask_ = FindMaskStep(*chain_);
    }
    e_pad_ = RoundUp(s_.e, kLanes);
    k_blocks_ = (s_.n + t_.k_block - 1) / t_.k_block;
    kt_floats_ = RoundUp(k_blocks_ * s_.d * t_.k_block, kLanes);
    vp_floats_ = RoundUp(s_.n, kLanes) * e_pad_;  // rows past N: a 16-key read's spill room
    qs_floats_ = RoundUp(t_.q_rows * s_.d, kLanes);
    // The online form keeps one key block of P per row, the two-pass form every key's score; the
    // blocked form that of all the task's rows, each row a line longer than its keys so that
    // rows a power of two apart do not all fall in the same few L1 sets.
    p_stride_ = t_.online ? t_.k_block : k_blocks_ * t_.k_block + (t_.blocked ? kLanes : 0);
    p_floats_ = RoundUp((t_.blocked ? t_.q_rows : t_.rows) * p_stride_, kLanes);
    // Blocked: the task's output rows between value blocks, each row's 1 / sum and max, and each
    // group's end of computed scores (at most q_rows groups of an i64).
    o_floats_ = t_.blocked ? t_.q_rows * e_pad_ + 4 * RoundUp(t_.q_rows, kLanes) : 0;
  }

  Function* Emit() {
    Function* pack = EmitPackKV();
    Function* rows_r = EmitRows(t_.rows);
    Function* rows_1 = t_.rows > 1 ? EmitRows(1) : rows_r;
    Function* task = EmitTask(pack, rows_r, rows_1);
    Function* kernel = NewFunction(name_, Type::getVoidTy(ctx_), {ptr_}, false);
    Builder b(BasicBlock::Create(ctx_, "entry", kernel));
    const int64_t tasks = t_.Tasks(s_);
    if (tasks == 1) {
      b.CreateCall(task, {kernel->getArg(0), I64(0), I64(1)});
    } else {
      llvm::FunctionCallee parallel_for = module_.getOrInsertFunction(
          "fusetune_parallel_for",
          llvm::FunctionType::get(Type::getVoidTy(ctx_), {i64_, ptr_, ptr_}, false));
      b.CreateCall(parallel_for, {I64(tasks), task, kernel->getArg(0)});
    }
    b.CreateRetVoid();
    return kernel;
  }

 private:
  Value* I64(int64_t v) { return llvm::ConstantInt::get(i64_, v); }

  Function* NewFunction(const std::string& name, Type* result, std::vector<Type*> params,
                        bool internal) {
    auto* type = llvm::FunctionType::get(result, params, false);
    Function* f = Function::Create(
        type, internal ? Function::InternalLinkage : Function::ExternalLinkage, name, module_);
    PrepareFunction(*f, target_);
    return f;
  }

  void Loop(Builder& b, Value* start, Value* end, int64_t step, const std::string& name,
            const std::function<void(Builder&, Value*)>& body) {
    EmitCountedLoop(b, start, end, step, name, body);
  }

  Value* Mask(int lanes) {
    std::vector<llvm::Constant*> bits;
    for (int i = 0; i < kLanes; ++i)
      bits.push_back(llvm::ConstantInt::get(Type::getInt1Ty(ctx_), i < lanes ? 1 : 0));
    return llvm::ConstantVector::get(bits);
  }

  // How many of 16 lanes from `start` are below `limit` (0..16).
  static int LanesLeft(int64_t limit, int64_t start) {
    return static_cast<int>(std::clamp<int64_t>(limit - start, 0, kLanes));
  }

  // The lanes of the vector from key v0 that hold one of a block's `count` keys, or nullptr when
  // all 16 do.
  Value* KeyLanes(int64_t count, int64_t v0) {
    const int lanes = LanesLeft(count, v0);
    return lanes < kLanes ? Mask(lanes) : nullptr;
  }

  // Scores `x` with -inf in the lanes past the block's keys (none when `lanes` is null): the
  // softmax gives them 0.
  Value* PadPastKeys(Builder& b, Value* x, Value* lanes) {
    if (!lanes) return x;
    return b.CreateSelect(lanes, x,
                          b.CreateVectorSplat(kLanes, llvm::ConstantFP::getInfinity(f32_, true)));
  }

  Value* FloatAt(Builder& b, Value* base, Value* offset) {
    return b.CreateInBoundsGEP(f32_, base, offset);
  }

  // pack(buffers, b, kt, vp): K(b) as [key block][d][k_block] (keys past N zero), V(b) as
  // [key][e_pad] (columns past E zero).
  Function* EmitPackKV() {
    Function* f =
        NewFunction(name_ + ".pack_kv", Type::getVoidTy(ctx_), {ptr_, i64_, ptr_, ptr_}, true);
    f->addFnAttr(llvm::Attribute::NoInline);
    Value *buffers = f->getArg(0), *bi = f->getArg(1), *kt = f->getArg(2), *vp = f->getArg(3);
    Builder b(BasicBlock::Create(ctx_, "entry", f));
    const int64_t kb = t_.k_block;
    Value* zero = llvm::ConstantFP::get(f32_, 0.0);
    // fusetune_mm_pack_b(src, n_stride, k_stride, n_count, k_count, nr, out): panels of nr
    // columns, [panel][k][nr], which is K's [key block][d][k_block] with n = key, k = d, and V's
    // [key][e_pad] with n = e, k = key, nr = e_pad.
    auto* pack_type = llvm::FunctionType::get(Type::getVoidTy(ctx_),
                                              {ptr_, i64_, i64_, i64_, i64_, i64_, ptr_}, false);
    Value* pack_fn = b.CreateIntToPtr(
        I64(static_cast<int64_t>(reinterpret_cast<uintptr_t>(&fusetune_mm_pack_b))), ptr_);
    auto matrix = [&](int buffer, int64_t elements) {
      return FloatAt(b, BufferBase(b, buffers, buffer), b.CreateMul(bi, I64(elements)));
    };
    if (k_direct_ >= 0) {
      // K stored [n][d] (n_stride d) or, swapped, [d][n].
      b.CreateCall(pack_type, pack_fn,
                   {matrix(k_direct_, s_.n * s_.d), I64(k_swapped_ ? 1 : s_.d),
                    I64(k_swapped_ ? s_.n : 1), I64(s_.n), I64(s_.d), I64(kb), kt});
    }
    if (v_direct_ >= 0) {
      // V stored [key][e] (e is n: n_stride 1, k_stride E) or, swapped, [e][key].
      b.CreateCall(pack_type, pack_fn,
                   {matrix(v_direct_, s_.n * s_.e), I64(v_swapped_ ? s_.n : 1),
                    I64(v_swapped_ ? 1 : s_.e), I64(s_.e), I64(s_.n), I64(e_pad_), vp});
    }
    // Computed operands (a head split inlined) are read 16 lanes at a time along their stored
    // last axis: contiguous there, the packed layout takes them as one store, else one store per
    // lane. Keys past N and value columns past E stay zero.
    if (k_direct_ < 0) {
      const int64_t keys = k_blocks_ * kb;
      auto kt_at = [&](Builder& b, Value* j, Value* d) {  // K[j][d] in [key block][d][k_block]
        Value* blk = b.CreateUDiv(j, I64(kb));
        return FloatAt(b, kt,
                       b.CreateAdd(b.CreateMul(blk, I64(s_.d * kb)),
                                   b.CreateAdd(b.CreateMul(d, I64(kb)), b.CreateURem(j, I64(kb)))));
      };
      if (k_->swapped()) {  // stored [d][key]: 16 keys of one depth, contiguous in kt
        Loop(b, I64(0), I64(s_.d), 1, "d", [&](Builder& b, Value* d) {
          Loop(b, I64(0), I64(keys), kLanes, "j", [&](Builder& b, Value* j) {
            b.CreateAlignedStore(k_->Lanes(b, buffers, bi, d, j, LanesBelow(b, j, I64(s_.n))),
                                 kt_at(b, j, d), llvm::Align(64));
          });
        });
      } else {  // stored [key][d]: 16 depths of one key, one store each
        Loop(b, I64(0), I64(keys), 1, "j", [&](Builder& b, Value* j) {
          Value* valid = b.CreateICmpSLT(j, I64(s_.n));
          Value* jc = b.CreateSelect(valid, j, I64(0));
          for (int64_t d0 = 0; d0 < s_.d; d0 += kLanes) {
            Value* x = k_->Lanes(b, buffers, bi, jc, I64(d0), Mask(LanesLeft(s_.d, d0)));
            x = b.CreateSelect(valid, x, llvm::Constant::getNullValue(vec_));
            for (int64_t i = 0; i < LanesLeft(s_.d, d0); ++i)
              b.CreateStore(b.CreateExtractElement(x, i), kt_at(b, j, I64(d0 + i)));
          }
        });
      }
    }
    if (v_direct_ < 0) {
      if (v_->swapped()) {  // stored [e][key]: 16 keys of one column, one store each
        // Lanes past N land in vp's padding rows (it has N rounded up to 16), never read.
        if (e_pad_ > s_.e)
          Loop(b, I64(0), I64(s_.n * e_pad_), 1, "z",
               [&](Builder& b, Value* z) { b.CreateStore(zero, FloatAt(b, vp, z)); });
        Loop(b, I64(0), I64(s_.e), 1, "e", [&](Builder& b, Value* e) {
          Loop(b, I64(0), I64(RoundUp(s_.n, kLanes)), kLanes, "j", [&](Builder& b, Value* j) {
            Value* x = v_->Lanes(b, buffers, bi, e, j, LanesBelow(b, j, I64(s_.n)));
            Value* at = b.CreateAdd(b.CreateMul(j, I64(e_pad_)), e);
            for (int64_t i = 0; i < kLanes; ++i)
              b.CreateStore(b.CreateExtractElement(x, i),
                            FloatAt(b, vp, b.CreateAdd(at, I64(i * e_pad_))));
          });
        });
      } else {  // stored [key][e]: 16 columns of one key, contiguous in vp
        Loop(b, I64(0), I64(s_.n), 1, "j", [&](Builder& b, Value* j) {
          Value* row = b.CreateMul(j, I64(e_pad_));
          for (int64_t e0 = 0; e0 < e_pad_; e0 += kLanes)
            b.CreateAlignedStore(v_->Lanes(b, buffers, bi, j, I64(e0), Mask(LanesLeft(s_.e, e0))),
                                 FloatAt(b, vp, b.CreateAdd(row, I64(e0))), llvm::Align(64));
        });
      }
    }
    b.CreateRetVoid();
    return f;
  }

  // rows_R(buffers, b, m0, qs, kt, vp, pbuf): R query rows m0.. of batch entry b, Q packed at qs.
  // Blocked: rows_R(buffers, b, m0, qs, kt, vp, pbuf, obuf, inv, groups), `groups` groups of R
  // rows.
  Function* EmitRows(int rows) {
    std::vector<Type*> params{ptr_, i64_, i64_, ptr_, ptr_, ptr_, ptr_};
    if (t_.blocked) params.insert(params.end(), {ptr_, ptr_, i64_});
    Function* f =
        NewFunction(name_ + ".rows" + std::to_string(rows), Type::getVoidTy(ctx_), params, true);
    f->addFnAttr(llvm::Attribute::NoInline);
    for (int i : {3, 4, 5, 6}) f->addParamAttr(i, llvm::Attribute::NoAlias);
    if (t_.blocked)
      for (int i : {7, 8}) f->addParamAttr(i, llvm::Attribute::NoAlias);
    Builder b(BasicBlock::Create(ctx_, "entry", f));
    if (t_.online)
      OnlineRows(b, f, rows);
    else if (t_.blocked)
      BlockedRows(b, f, rows);
    else
      TwoPassRows(b, f, rows);
    b.CreateRetVoid();
    return f;
  }

  void OnlineRows(Builder& b, Function* f, int rows) {
    Value *buffers = f->getArg(0), *bi = f->getArg(1), *m0 = f->getArg(2), *qs = f->getArg(3),
          *kt = f->getArg(4), *vp = f->getArg(5), *pbuf = f->getArg(6);
    const int ev = static_cast<int>(e_pad_ / kLanes);
    // Running max, sum and output rows: allocas with constant indices, promoted to registers.
    Slots m_run = NewSlots(b, f32_, rows, "m"), l_run = NewSlots(b, f32_, rows, "l");
    Slots o_run = NewSlots(b, vec_, rows * ev, "o");
    for (int r = 0; r < rows; ++r) {
      b.CreateStore(llvm::ConstantFP::getInfinity(f32_, true), m_run[r]);
      b.CreateStore(llvm::ConstantFP::get(f32_, 0.0), l_run[r]);
      for (int e = 0; e < ev; ++e)
        b.CreateStore(llvm::Constant::getNullValue(vec_), o_run[r * ev + e]);
    }
    ForEachKeyBlock(b, [&](Builder& b, Value* blk, int64_t count) {
      auto body = [&](Builder& b) {
        BlockBody(b, buffers, bi, m0, qs, kt, vp, pbuf, blk, count, rows, m_run, l_run, o_run);
      };
      if (!mask_) return body(b);
      // Skipped: p = 0 for every key, and the running max, sum and output stay as they are.
      Value* skip = BlockMasked(b, buffers, bi, m0, b.CreateMul(blk, I64(t_.k_block)), count, rows);
      for (int r = 0; r < rows; ++r)
        skip = b.CreateAnd(skip, b.CreateFCmpOGT(b.CreateLoad(f32_, m_run[r]), MaskThreshold()));
      IfElse(b, skip, nullptr, body);
    });
    std::vector<Value*> inv(rows);
    for (int r = 0; r < rows; ++r)
      inv[r] = b.CreateFDiv(llvm::ConstantFP::get(f32_, 1.0), b.CreateLoad(f32_, l_run[r]));
    StoreOutput(b, buffers, bi, m0, rows, o_run, inv);
  }

  // The two-pass form: every score of the rows into pbuf (row stride p_stride_); each row's max;
  // exp and sum over the rows together (independent chains); then P·V over all keys into
  // registers, scaled once.
  void TwoPassRows(Builder& b, Function* f, int rows) {
    Value *buffers = f->getArg(0), *bi = f->getArg(1), *m0 = f->getArg(2), *qs = f->getArg(3),
          *kt = f->getArg(4), *vp = f->getArg(5), *pbuf = f->getArg(6);
    const int ev = static_cast<int>(e_pad_ / kLanes);
    // With a mask step: the end of the last key block whose scores were computed.
    Value* computed_end = nullptr;
    if (mask_) {
      computed_end = NewSlots(b, i64_, 1, "computed_end")[0];
      b.CreateStore(I64(0), computed_end);
    }
    ForEachKeyBlock(b, [&](Builder& b, Value* blk, int64_t count) {
      StoreScores(b, buffers, bi, m0, qs, kt, pbuf, blk, count, rows, computed_end);
    });
    Value* end = nullptr;
    const std::vector<Value*> inv = ExpRows(b, pbuf, rows, computed_end, &end);
    // o[r][:] = sum_j p[r][j] * V[j][:], over every key at once.
    Slots o_run = NewSlots(b, vec_, rows * ev, "o");
    for (Value* slot : o_run) b.CreateStore(llvm::Constant::getNullValue(vec_), slot);
    PvAccumulate(b, vp, pbuf, I64(0), end, rows, o_run);
    StoreOutput(b, buffers, bi, m0, rows, o_run, inv);
  }

  // The blocked two-pass form: `groups` groups of `rows` query rows from m0 (Q rows at qs), each
  // pass over all of them block by block, so that a K or V block serves every group while in L1.
  // pbuf holds the groups' scores (row stride p_stride_), obuf their output rows ([row][e_pad]),
  // inv_buf each row's 1 / sum and, a q_rows slot further, its max; with a mask step, a slot
  // further, each group's end of computed scores (an i64, 4-byte aligned).
  void BlockedRows(Builder& b, Function* f, int rows) {
    Value *buffers = f->getArg(0), *bi = f->getArg(1), *m0 = f->getArg(2), *qs = f->getArg(3),
          *kt = f->getArg(4), *vp = f->getArg(5), *pbuf = f->getArg(6), *obuf = f->getArg(7),
          *inv_buf = f->getArg(8), *groups = f->getArg(9);
    const int ev = static_cast<int>(e_pad_ / kLanes);
    Value* max_buf = FloatAt(b, inv_buf, I64(RoundUp(t_.q_rows, kLanes)));
    Value* ends_buf = FloatAt(b, max_buf, I64(RoundUp(t_.q_rows, kLanes)));
    auto computed_end = [&](Builder& b, Value* g) -> Value* {
      return mask_ ? b.CreateInBoundsGEP(i64_, ends_buf, g) : nullptr;
    };
    // Group g's first row, and where its rows start in a buffer of `stride` floats per row.
    auto row_of = [&](Builder& b, Value* g) { return b.CreateMul(g, I64(rows)); };
    auto at_row = [&](Builder& b, Value* base, Value* g, int64_t stride) {
      return FloatAt(b, base, b.CreateMul(row_of(b, g), I64(stride)));
    };
    auto row_slot = [&](Builder& b, Value* base, Value* g, int r) {
      return FloatAt(b, base, b.CreateAdd(row_of(b, g), I64(r)));
    };
    if (mask_)
      Loop(b, I64(0), groups, 1, "gz", [&](Builder& b, Value* g) {
        b.CreateAlignedStore(I64(0), computed_end(b, g), llvm::Align(4));
      });
    ForEachKeyBlock(b, [&](Builder& b, Value* blk, int64_t count) {
      Loop(b, I64(0), groups, 1, "gs", [&](Builder& b, Value* g) {
        StoreScores(b, buffers, bi, b.CreateAdd(m0, row_of(b, g)), at_row(b, qs, g, s_.d), kt,
                    at_row(b, pbuf, g, p_stride_), blk, count, rows, computed_end(b, g));
      });
    });
    Value* zero = llvm::Constant::getNullValue(vec_);
    auto o_at = [&](Builder& b, Value* g, int x) {
      return FloatAt(b, at_row(b, obuf, g, e_pad_), I64((x / ev) * e_pad_ + (x % ev) * kLanes));
    };
    Loop(b, I64(0), groups, 1, "ge", [&](Builder& b, Value* g) {
      std::vector<Value*> max;
      const std::vector<Value*> inv =
          ExpRows(b, at_row(b, pbuf, g, p_stride_), rows, computed_end(b, g), nullptr, &max);
      for (int r = 0; r < rows; ++r) {
        b.CreateStore(inv[r], row_slot(b, inv_buf, g, r));
        b.CreateStore(max[r], row_slot(b, max_buf, g, r));
      }
      for (int x = 0; x < rows * ev; ++x)
        b.CreateAlignedStore(zero, o_at(b, g, x), llvm::Align(64));
    });
    // P·V into obuf's rows, value block by value block. With a mask step, a block masked in all
    // of a group's rows adds nothing once each of them has a score far enough above the constant:
    // it is skipped, as the other forms skip it (and its p were never computed: past the group's
    // computed end, ExpRows left them).
    Slots o_run = NewSlots(b, vec_, rows * ev, "o");
    ForEachKeyBlock(b, [&](Builder& b, Value* blk, int64_t count) {
      Value* k0 = b.CreateMul(blk, I64(t_.k_block));
      Loop(b, I64(0), groups, 1, "gv", [&](Builder& b, Value* g) {
        auto accumulate = [&](Builder& b) {
          for (int x = 0; x < rows * ev; ++x)
            b.CreateStore(b.CreateAlignedLoad(vec_, o_at(b, g, x), llvm::Align(64)), o_run[x]);
          PvAccumulate(b, vp, FloatAt(b, at_row(b, pbuf, g, p_stride_), k0), k0, I64(count), rows,
                       o_run);
          for (int x = 0; x < rows * ev; ++x)
            b.CreateAlignedStore(b.CreateLoad(vec_, o_run[x]), o_at(b, g, x), llvm::Align(64));
        };
        if (!mask_) return accumulate(b);
        Value* skip = BlockMasked(b, buffers, bi, b.CreateAdd(m0, row_of(b, g)), k0, count, rows);
        for (int r = 0; r < rows; ++r)
          skip = b.CreateAnd(skip, b.CreateFCmpOGT(b.CreateLoad(f32_, row_slot(b, max_buf, g, r)),
                                                   MaskThreshold()));
        IfElse(b, skip, nullptr, accumulate);
      });
    });
    Loop(b, I64(0), groups, 1, "go", [&](Builder& b, Value* g) {
      std::vector<Value*> inv(rows);
      for (int r = 0; r < rows; ++r) inv[r] = b.CreateLoad(f32_, row_slot(b, inv_buf, g, r));
      for (int x = 0; x < rows * ev; ++x)
        b.CreateStore(b.CreateAlignedLoad(vec_, o_at(b, g, x), llvm::Align(64)), o_run[x]);
      StoreOutput(b, buffers, bi, b.CreateAdd(m0, row_of(b, g)), rows, o_run, inv);
    });
  }

  // The scores of `rows` query rows from m0 (Q rows at qs) against key block `blk` into their
  // pbuf rows. With a mask step, a block masked in all of them is filled with the constant, and
  // `computed_end` (when given) advanced past each block computed.
  void StoreScores(Builder& b, Value* buffers, Value* bi, Value* m0, Value* qs, Value* kt,
                   Value* pbuf, Value* blk, int64_t count, int rows, Value* computed_end) {
    Value* k0 = b.CreateMul(blk, I64(t_.k_block));
    auto store = [&](Builder& b, const std::vector<std::vector<Value*>>& x) {
      for (int r = 0; r < rows; ++r)
        for (size_t v = 0; v < x[r].size(); ++v) {
          Value* at = b.CreateAdd(I64(r * p_stride_ + static_cast<int64_t>(v) * kLanes), k0);
          b.CreateAlignedStore(x[r][v], FloatAt(b, pbuf, at), llvm::Align(64));
        }
    };
    auto compute = [&](Builder& b) {
      store(b, Scores(b, buffers, bi, m0, qs, kt, blk, count, rows));
      if (computed_end)
        b.CreateAlignedStore(b.CreateAdd(k0, I64(count)), computed_end, llvm::Align(4));
    };
    if (!mask_) return compute(b);
    // Every score of a masked block is the constant: stored without computing a product.
    auto fill = [&](Builder& b) {
      Value* masked = b.CreateVectorSplat(kLanes, llvm::ConstantFP::get(f32_, mask_->value));
      std::vector<Value*> row;
      for (int64_t v0 = 0; v0 < count; v0 += kLanes)
        row.push_back(PadPastKeys(b, masked, KeyLanes(count, v0)));
      store(b, std::vector<std::vector<Value*>>(rows, row));
    };
    IfElse(b, BlockMasked(b, buffers, bi, m0, k0, count, rows), fill, compute);
  }

  // The softmax's two passes over `rows` rows of scores in pbuf: each row's max, then p = exp(s -
  // max) in place, summed per row; returns each row's 1 / sum. Keys past the last computed block
  // (`computed_end`, when given) hold only the mask's constant: once every row's max is far
  // enough above it their p is 0, so the exp pass, and P·V (`pv_end`, when asked for), end there.
  // `row_max`, when given, receives each row's max.
  std::vector<Value*> ExpRows(Builder& b, Value* pbuf, int rows, Value* computed_end,
                              Value** pv_end, std::vector<Value*>* row_max = nullptr) {
    // Each row's max in a pass of its own over pbuf (in L1): kept out of the score loop, whose
    // registers hold the rows' accumulators. Lanes past N hold -inf.
    const int64_t stored = RoundUp(s_.n, kLanes);  // the tail block's last vector included
    Value* neg_inf = b.CreateVectorSplat(kLanes, llvm::ConstantFP::getInfinity(f32_, true));
    Slots max_run = NewSlots(b, vec_, rows, "mx");
    for (Value* slot : max_run) b.CreateStore(neg_inf, slot);
    Loop(b, I64(0), I64(stored), kLanes, "jm", [&](Builder& b, Value* j) {
      for (int r = 0; r < rows; ++r) {
        Value* at = FloatAt(b, pbuf, b.CreateAdd(I64(r * p_stride_), j));
        Value* x = b.CreateAlignedLoad(vec_, at, llvm::Align(64));
        b.CreateStore(b.CreateMaxNum(b.CreateLoad(vec_, max_run[r]), x), max_run[r]);
      }
    });

    // p = exp(s - max) in place (the -inf lanes give 0), summed per row.
    std::vector<Value*> m_splat(rows);
    Slots sum_run = NewSlots(b, vec_, rows, "sum");
    Value* end = I64(s_.n);
    Value* ends_early = computed_end ? b.getTrue() : nullptr;
    for (int r = 0; r < rows; ++r) {
      Value* max = b.CreateFPMaxReduce(b.CreateLoad(vec_, max_run[r]));
      m_splat[r] = b.CreateVectorSplat(kLanes, max);
      if (row_max) row_max->push_back(max);
      b.CreateStore(llvm::Constant::getNullValue(vec_), sum_run[r]);
      if (ends_early) ends_early = b.CreateAnd(ends_early, b.CreateFCmpOGT(max, MaskThreshold()));
    }
    if (ends_early)
      end =
          b.CreateSelect(ends_early, b.CreateAlignedLoad(i64_, computed_end, llvm::Align(4)), end);
    if (pv_end) *pv_end = end;
    Value* end_stored = b.CreateAnd(b.CreateAdd(end, I64(kLanes - 1)), I64(-kLanes));
    Loop(b, I64(0), end_stored, kLanes, "j", [&](Builder& b, Value* j) {
      for (int r = 0; r < rows; ++r) {
        Value* at = FloatAt(b, pbuf, b.CreateAdd(I64(r * p_stride_), j));
        Value* p =
            EmitExp(b, b.CreateFSub(b.CreateAlignedLoad(vec_, at, llvm::Align(64)), m_splat[r]));
        b.CreateAlignedStore(p, at, llvm::Align(64));
        b.CreateStore(b.CreateFAdd(b.CreateLoad(vec_, sum_run[r]), p), sum_run[r]);
      }
    });
    std::vector<Value*> inv(rows);
    for (int r = 0; r < rows; ++r) {
      Value* sum =
          b.CreateFAddReduce(llvm::ConstantFP::get(f32_, 0.0), b.CreateLoad(vec_, sum_run[r]));
      llvm::cast<llvm::Instruction>(sum)->setFast(true);
      inv[r] = b.CreateFDiv(llvm::ConstantFP::get(f32_, 1.0), sum);
    }
    return inv;
  }

  // body(blk, count) for each block of k_block keys, the last with the `count` keys left.
  void ForEachKeyBlock(Builder& b, const std::function<void(Builder&, Value*, int64_t)>& body) {
    const int64_t kb = t_.k_block, full = s_.n / kb, tail = s_.n % kb;
    if (full > 0)
      Loop(b, I64(0), I64(full), 1, "blk", [&](Builder& b, Value* blk) { body(b, blk, kb); });
    if (tail > 0) body(b, I64(full), tail);
  }

  // out[b, m0 + r, :] = o[r] * inv[r]
  void StoreOutput(Builder& b, Value* buffers, Value* bi, Value* m0, int rows, const Slots& o_run,
                   const std::vector<Value*>& inv) {
    const int ev = static_cast<int>(e_pad_ / kLanes);
    Value* out_base = BufferBase(b, buffers, buffers_.Of(group_.attention.output));
    for (int r = 0; r < rows; ++r) {
      Value* scale = b.CreateVectorSplat(kLanes, inv[r]);
      Value* row = b.CreateAdd(b.CreateMul(bi, I64(s_.m)), b.CreateAdd(m0, I64(r)));
      for (int e = 0; e < ev; ++e) {
        Value* o = b.CreateLoad(vec_, o_run[r * ev + e]);
        Value* p = FloatAt(b, out_base, b.CreateAdd(b.CreateMul(row, I64(s_.e)), I64(e * kLanes)));
        const int64_t lanes = std::min<int64_t>(kLanes, s_.e - e * kLanes);
        b.CreateMaskedStore(b.CreateFMul(o, scale), p, llvm::Align(4),
                            Mask(static_cast<int>(lanes)));
      }
    }
  }

  // o[r][:] += sum_{j < count} P[r][j] * V[k0 + j][:], P rows p_stride_ apart in pbuf.
  void PvAccumulate(Builder& b, Value* vp, Value* pbuf, Value* k0, Value* count, int rows,
                    const Slots& o_run) {
    const int ev = static_cast<int>(e_pad_ / kLanes);
    llvm::Function* fma = llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::fma, {vec_});
    Loop(b, I64(0), count, 1, "j", [&](Builder& b, Value* j) {
      Value* vrow = FloatAt(b, vp, b.CreateMul(b.CreateAdd(k0, j), I64(e_pad_)));
      std::vector<Value*> vv(ev);
      for (int e = 0; e < ev; ++e)
        vv[e] = b.CreateLoad(vec_, b.CreateConstInBoundsGEP1_64(f32_, vrow, e * kLanes));
      for (int r = 0; r < rows; ++r) {
        Value* p = b.CreateLoad(f32_, FloatAt(b, pbuf, b.CreateAdd(I64(r * p_stride_), j)));
        Value* pv = b.CreateVectorSplat(kLanes, p);
        for (int e = 0; e < ev; ++e) {
          Value* slot = o_run[r * ev + e];
          b.CreateStore(b.CreateCall(fma, {pv, vv[e], b.CreateLoad(vec_, slot)}), slot);
        }
      }
    });
  }

  // The scores of `rows` query rows against key block `blk` (`count` keys): sv vectors per row,
  // the element-wise steps applied, lanes past `count` -inf.
  std::vector<std::vector<Value*>> Scores(Builder& b, Value* buffers, Value* bi, Value* m0,
                                          Value* qs, Value* kt, Value* blk, int64_t count,
                                          int rows) {
    const int64_t kb = t_.k_block;
    const int sv = static_cast<int>((count + kLanes - 1) / kLanes);
    Value* k0 = b.CreateMul(blk, I64(kb));
    Value* kt_blk = FloatAt(b, kt, b.CreateMul(blk, I64(s_.d * kb)));
    llvm::Function* fma = llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::fma, {vec_});

    // s[r][v] = sum_d q[r][d] * K[k0 + v*16 + lane][d]
    Slots s_acc = NewSlots(b, vec_, rows * sv, "s");
    for (Value* slot : s_acc) b.CreateStore(llvm::Constant::getNullValue(vec_), slot);
    Loop(b, I64(0), I64(s_.d), 1, "d", [&](Builder& b, Value* d) {
      std::vector<Value*> kv(sv);
      Value* krow = FloatAt(b, kt_blk, b.CreateMul(d, I64(kb)));
      for (int v = 0; v < sv; ++v)
        kv[v] = b.CreateAlignedLoad(vec_, b.CreateConstInBoundsGEP1_64(f32_, krow, v * kLanes),
                                    llvm::Align(64));
      for (int r = 0; r < rows; ++r) {
        Value* q = b.CreateLoad(f32_, FloatAt(b, qs, b.CreateAdd(I64(r * s_.d), d)));
        Value* qv = b.CreateVectorSplat(kLanes, q);
        for (int v = 0; v < sv; ++v) {
          Value* slot = s_acc[r * sv + v];
          b.CreateStore(b.CreateCall(fma, {qv, kv[v], b.CreateLoad(vec_, slot)}), slot);
        }
      }
    });

    std::vector<std::vector<Value*>> x(rows, std::vector<Value*>(sv));
    for (int r = 0; r < rows; ++r) {
      Value* m = b.CreateAdd(m0, I64(r));
      for (int v = 0; v < sv; ++v) {
        x[r][v] = b.CreateLoad(vec_, s_acc[r * sv + v]);
        Value* lanes = KeyLanes(count, v * kLanes);
        if (chain_)
          x[r][v] = ApplyChain(b, buffers, bi, m, b.CreateAdd(k0, I64(v * kLanes)), x[r][v], lanes);
        x[r][v] = PadPastKeys(b, x[r][v], lanes);
      }
    }
    return x;
  }

  // One key block of `count` keys (count <= k_block) for `rows` query rows, the softmax online.
  void BlockBody(Builder& b, Value* buffers, Value* bi, Value* m0, Value* qs, Value* kt, Value* vp,
                 Value* pbuf, Value* blk, int64_t count, int rows, const Slots& m_run,
                 const Slots& l_run, const Slots& o_run) {
    const int ev = static_cast<int>(e_pad_ / kLanes);
    const std::vector<std::vector<Value*>> xs =
        Scores(b, buffers, bi, m0, qs, kt, blk, count, rows);
    for (int r = 0; r < rows; ++r) {
      const std::vector<Value*>& x = xs[r];
      const int sv = static_cast<int>(x.size());
      // Online softmax: the new running max, the factor for what was accumulated before it.
      Value* mv = x[0];
      for (int v = 1; v < sv; ++v) mv = b.CreateMaxNum(mv, x[v]);
      Value* m_slot = m_run[r];
      Value* m_old = b.CreateLoad(f32_, m_slot);
      Value* m_new = b.CreateMaxNum(m_old, b.CreateFPMaxReduce(mv));
      Value* alpha = EmitExp(b, b.CreateFSub(m_old, m_new));
      Value* m_splat = b.CreateVectorSplat(kLanes, m_new);
      Value* sum = nullptr;
      for (int v = 0; v < sv; ++v) {
        Value* p = EmitExp(b, b.CreateFSub(x[v], m_splat));
        b.CreateAlignedStore(p, FloatAt(b, pbuf, I64(r * p_stride_ + v * kLanes)), llvm::Align(64));
        sum = sum ? b.CreateFAdd(sum, p) : p;
      }
      Value* l_slot = l_run[r];
      Value* sum_scalar = b.CreateFAddReduce(llvm::ConstantFP::get(f32_, 0.0), sum);
      llvm::cast<llvm::Instruction>(sum_scalar)->setFast(true);
      b.CreateStore(b.CreateFAdd(b.CreateFMul(b.CreateLoad(f32_, l_slot), alpha), sum_scalar),
                    l_slot);
      b.CreateStore(m_new, m_slot);
      Value* alpha_v = b.CreateVectorSplat(kLanes, alpha);
      for (int e = 0; e < ev; ++e) {
        Value* slot = o_run[r * ev + e];
        b.CreateStore(b.CreateFMul(b.CreateLoad(vec_, slot), alpha_v), slot);
      }
    }
    // o[r][:] += sum_j p[r][j] * V[k0 + j][:], P of this block at pbuf's row starts.
    PvAccumulate(b, vp, pbuf, b.CreateMul(blk, I64(t_.k_block)), I64(count), rows, o_run);
  }

  // Whether the mask step selects its constant for all `count` keys from k0 in each of the `rows`
  // query rows from m0.
  Value* BlockMasked(Builder& b, Value* buffers, Value* bi, Value* m0, Value* k0, int64_t count,
                     int rows) {
    Value* all = b.getTrue();
    Value* no_scores = llvm::Constant::getNullValue(vec_);  // the condition never reads them
    for (int r = 0; r < rows; ++r) {
      std::vector<Value*> coords{bi, b.CreateAdd(m0, I64(r)), nullptr};
      for (int64_t v0 = 0; v0 < count; v0 += kLanes) {
        Value* j0 = b.CreateAdd(k0, I64(v0));
        Value* lanes = KeyLanes(count, v0);
        Value* cond = LowerLeaves(
            b, graph_, buffers_, buffers, mask_->cond,
            [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
              return LoadLeafRow(b, base, leaf, shape, coords, j0, lanes);
            },
            no_scores);
        cond = Splat(b, ConvertTo(b, cond, DType::kBool), kLanes);
        if (!mask_->masked_when) cond = b.CreateNot(cond);
        if (lanes) cond = b.CreateOr(cond, b.CreateNot(lanes));
        all = b.CreateAnd(all, b.CreateAndReduce(cond));
      }
    }
    return all;
  }

  // A row whose max is above this gives the mask's constant a p of exactly 0.
  Value* MaskThreshold() { return llvm::ConstantFP::get(f32_, mask_->value + kExpUnderflow); }

  // then_body where `cond` holds, else_body where not; either may be null.
  void IfElse(Builder& b, Value* cond, const std::function<void(Builder&)>& then_body,
              const std::function<void(Builder&)>& else_body) {
    Function* f = b.GetInsertBlock()->getParent();
    BasicBlock* then_block = BasicBlock::Create(ctx_, "then", f);
    BasicBlock* else_block = BasicBlock::Create(ctx_, "else", f);
    BasicBlock* join = BasicBlock::Create(ctx_, "join", f);
    b.CreateCondBr(cond, then_block, else_block);
    auto branch = [&](BasicBlock* block, const std::function<void(Builder&)>& body) {
      b.SetInsertPoint(block);
      if (body) body(b);
      b.CreateBr(join);
    };
    branch(then_block, then_body);
    branch(else_block, else_body);
    b.SetInsertPoint(join);
  }

  // The element-wise steps applied to 16 scores of row m, keys j0 + lane.
  Value* ApplyChain(Builder& b, Value* buffers, Value* bi, Value* m, Value* j0, Value* scores,
                    Value* mask) {
    std::vector<Value*> coords{bi, m, nullptr};
    Value* out = LowerLeaves(
        b, graph_, buffers_, buffers, *chain_,
        [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
          return LoadLeafRow(b, base, leaf, shape, coords, j0, mask);
        },
        scores);
    return Splat(b, ConvertTo(b, out, DType::kFloat32), kLanes);
  }

  // `count` scalar slots in the function's entry block: mem2reg keeps them in registers.
  Slots NewSlots(Builder& b, Type* type, int count, const std::string& name) {
    Function* f = b.GetInsertBlock()->getParent();
    Builder entry(&f->getEntryBlock(), f->getEntryBlock().begin());
    Slots slots;
    for (int i = 0; i < count; ++i)
      slots.push_back(entry.CreateAlloca(type, nullptr, name + std::to_string(i)));
    return slots;
  }

  // task(buffers, begin, end): tasks numbered (b, query block), query block fastest, so a
  // thread's consecutive tasks share the packed K and V of one batch entry.
  Function* EmitTask(Function* pack, Function* rows_r, Function* rows_1) {
    Function* f = NewFunction(name_ + ".task", Type::getVoidTy(ctx_), {ptr_, i64_, i64_}, true);
    Value *buffers = f->getArg(0), *begin = f->getArg(1), *end = f->getArg(2);
    Builder b(BasicBlock::Create(ctx_, "entry", f));
    const int64_t bytes = 4 * (kt_floats_ + vp_floats_ + qs_floats_ + p_floats_ + o_floats_);
    auto* scratch_type = llvm::FunctionType::get(ptr_, {i64_}, false);
    Value* scratch_fn = b.CreateIntToPtr(
        I64(static_cast<int64_t>(reinterpret_cast<uintptr_t>(&fusetune_mm_scratch))), ptr_);
    Value* kt = b.CreateCall(scratch_type, scratch_fn, {I64(bytes)}, "scratch");
    Value* vp = b.CreateConstInBoundsGEP1_64(f32_, kt, kt_floats_);
    Value* qs = b.CreateConstInBoundsGEP1_64(f32_, vp, vp_floats_);
    Value* pbuf = b.CreateConstInBoundsGEP1_64(f32_, qs, qs_floats_);
    Value* obuf = b.CreateConstInBoundsGEP1_64(f32_, pbuf, p_floats_);
    Value* inv = b.CreateConstInBoundsGEP1_64(f32_, obuf, t_.q_rows * e_pad_);
    Value* packed = b.CreateAlloca(i64_, nullptr, "packed");
    b.CreateStore(I64(-1), packed);
    const int64_t q_blocks = (s_.m + t_.q_rows - 1) / t_.q_rows;
    const int rows = t_.rows;
    Loop(b, begin, end, 1, "t", [&](Builder& b, Value* t) {
      Value* bi = b.CreateUDiv(t, I64(q_blocks));
      Value* m_start = b.CreateMul(b.CreateURem(t, I64(q_blocks)), I64(t_.q_rows));
      // K and V of this batch entry, unless this thread packed them for its previous task.
      Function* fn = b.GetInsertBlock()->getParent();
      BasicBlock* do_pack = BasicBlock::Create(ctx_, "pack", fn);
      BasicBlock* after = BasicBlock::Create(ctx_, "packed", fn);
      b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(i64_, packed), bi), do_pack, after);
      b.SetInsertPoint(do_pack);
      b.CreateCall(pack, {buffers, bi, kt, vp});
      b.CreateStore(bi, packed);
      b.CreateBr(after);
      b.SetInsertPoint(after);
      Value* count = b.CreateSub(I64(s_.m), m_start);
      count = b.CreateSelect(b.CreateICmpSLT(count, I64(t_.q_rows)), count, I64(t_.q_rows));
      Value* q_rows = qs;
      if (q_direct_ >= 0) {
        // Q's rows in place: [b][m][d].
        q_rows = FloatAt(b, BufferBase(b, buffers, q_direct_),
                         b.CreateMul(b.CreateAdd(b.CreateMul(bi, I64(s_.m)), m_start), I64(s_.d)));
      } else if (!q_->swapped()) {  // 16 depths of a query row at a time
        Loop(b, I64(0), count, 1, "qr", [&](Builder& b, Value* r) {
          Value* m = b.CreateAdd(m_start, r);
          Value* row = FloatAt(b, qs, b.CreateMul(r, I64(s_.d)));
          for (int64_t d0 = 0; d0 < s_.d; d0 += kLanes) {
            Value* mask = Mask(LanesLeft(s_.d, d0));
            b.CreateMaskedStore(q_->Lanes(b, buffers, bi, m, I64(d0), mask),
                                b.CreateConstInBoundsGEP1_64(f32_, row, d0), llvm::Align(4), mask);
          }
        });
      } else {
        Loop(b, I64(0), count, 1, "qr", [&](Builder& b, Value* r) {
          Value* m = b.CreateAdd(m_start, r);
          Loop(b, I64(0), I64(s_.d), 1, "qd", [&](Builder& b, Value* d) {
            b.CreateStore((*q_)(b, buffers, bi, m, d),
                          FloatAt(b, qs, b.CreateAdd(b.CreateMul(r, I64(s_.d)), d)));
          });
        });
      }
      Value* whole = b.CreateMul(b.CreateUDiv(count, I64(rows)), I64(rows));
      if (t_.blocked) {
        // The whole groups of `rows`, then the rows left one by one, after them in the buffers.
        b.CreateCall(rows_r, {buffers, bi, m_start, q_rows, kt, vp, pbuf, obuf, inv,
                              b.CreateUDiv(count, I64(rows))});
        if (rows > 1)
          b.CreateCall(rows_1, {buffers, bi, b.CreateAdd(m_start, whole),
                                FloatAt(b, q_rows, b.CreateMul(whole, I64(s_.d))), kt, vp,
                                FloatAt(b, pbuf, b.CreateMul(whole, I64(p_stride_))),
                                FloatAt(b, obuf, b.CreateMul(whole, I64(e_pad_))),
                                FloatAt(b, inv, whole), b.CreateSub(count, whole)});
        return;
      }
      Loop(b, I64(0), whole, rows, "g", [&](Builder& b, Value* g) {
        b.CreateCall(rows_r, {buffers, bi, b.CreateAdd(m_start, g),
                              FloatAt(b, q_rows, b.CreateMul(g, I64(s_.d))), kt, vp, pbuf});
      });
      Loop(b, whole, count, 1, "g1", [&](Builder& b, Value* g) {
        b.CreateCall(rows_1, {buffers, bi, b.CreateAdd(m_start, g),
                              FloatAt(b, q_rows, b.CreateMul(g, I64(s_.d))), kt, vp, pbuf});
      });
    });
    b.CreateRetVoid();
    return f;
  }

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  const Graph& graph_;
  const FusedGroup& group_;
  AttentionShape s_;
  AttentionTiling t_;
  const TargetInfo& target_;
  std::string name_;
  BufferMap buffers_;
  Type* f32_;
  Type* i64_;
  llvm::PointerType* ptr_;
  llvm::FixedVectorType* vec_;
  std::optional<OperandReader> q_, k_, v_;
  int q_direct_ = -1, k_direct_ = -1, v_direct_ = -1;  // buffer of an operand read as it is
  bool k_swapped_ = false, v_swapped_ = false;
  std::optional<InlinedExpr> chain_;
  std::optional<MaskStep> mask_;
  int64_t e_pad_ = 0, k_blocks_ = 0, kt_floats_ = 0, vp_floats_ = 0, qs_floats_ = 0, p_floats_ = 0,
          o_floats_ = 0;
  int64_t p_stride_ = 0;  // floats per query row in pbuf
};

}  // namespace

llvm::Function* EmitAttentionKernel(llvm::Module& module, const Graph& graph,
                                    const FusedGroup& group, const Schedule& schedule,
                                    const TargetInfo& target, const std::string& symbol,
                                    int threads) {
  FT_CHECK(group.Attention(), "not an attention group");
  const AttentionTiling tiling =
      ResolveAttentionTiling(AttentionShapeOf(graph, group), schedule, threads);
  return Emitter(module, graph, group, tiling, target, symbol).Emit();
}

}  // namespace fusetune::codegen
