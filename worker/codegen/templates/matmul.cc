#include "worker/codegen/templates/matmul.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/group_expr.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "worker/codegen/scalar_lowering.h"
#include "worker/codegen/templates/horizontal_matmul.h"
#include "worker/codegen/templates/matmul_emit.h"
#include "worker/codegen/templates/matmul_group.h"
#include "worker/codegen/templates/matmul_leaves.h"
#include "worker/codegen/templates/matmul_norm.h"

namespace fusetune::codegen {
namespace {

using llvm::Value;

constexpr int kLanes = 16;
constexpr int64_t kPackedABytes = 256 << 10;      // the A block a prologue is evaluated into
constexpr int64_t kReusedPackedABytes = 1 << 20;  // the same, packed once for all n blocks

// Splits a flat index into coordinates over `dims` (row-major), scalar i64.
std::vector<Value*> Unflatten(MatmulBuilder& b, Value* flat, std::span<const int64_t> dims) {
  std::vector<Value*> coords(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      coords[d] = flat;
    } else {
      coords[d] = b.CreateURem(flat, b.getInt64(dims[d]));
      flat = b.CreateUDiv(flat, b.getInt64(dims[d]));
    }
  }
  return coords;
}

// Nodes of an expression (a DAG counted as a tree: an upper bound), noting transcendentals.
int CountNodes(const ScalarExpr& e, bool& transcendental) {
  switch (e->op) {
    case ScalarOp::kExp:
    case ScalarOp::kFastExp:
    case ScalarOp::kLog:
    case ScalarOp::kTanh:
    case ScalarOp::kFastTanh:
    case ScalarOp::kSigmoid:
    case ScalarOp::kErf:
    case ScalarOp::kPow:
    case ScalarOp::kDiv:
    case ScalarOp::kSqrt:
    case ScalarOp::kRsqrt:
      transcendental = true;
      break;
    default:
      break;
  }
  int n = 1;
  for (const ScalarExpr& o : e->operands) n += CountNodes(o, transcendental);
  return n;
}

// Loads every leaf of an inlined prologue expression at scalar coordinates and evaluates it.
class PrologueOperand {
 public:
  PrologueOperand(const Graph& graph, const FusedGroup& group, const BufferMap& buffers,
                  const MatmulLayout& layout, ValueId value, bool is_a)
      : graph_(graph), buffers_(buffers), layout_(layout), value_(value), is_a_(is_a) {
    InlineOptions options;
    options.stop_at_anchor = false;
    expr_ =
        InlineValue(graph, group, value, IdentityCoords(graph.value(value).type.rank()), options);
  }

  Value* operator()(MatmulBuilder& b, Value* buffers, Value* bi, Value* i, Value* k) const {
    std::vector<Value*> coords = Coords(b, bi, i, k);
    return ConvertTo(b,
                     LowerLeaves(b, graph_, buffers_, buffers, expr_,
                                 [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
                                   return LoadLeafScalar(b, base, leaf, shape, coords);
                                 }),
                     DType::kFloat32);
  }

  // A PackAFn: rows [m0, m_end) of A, k in [k0, k0 + k_count), evaluated 16 lanes along k at a
  // time into [m - m0][kc]. Element by element, each lane's index arithmetic and load ran alone,
  // and the head merge (transpose + reshape) as the out projection's A was 11 ms slower than its
  // own kernel at S = 256; in rows, a read through such views is a vector load per 16 floats.
  void PackRows(MatmulBuilder& b, Value* buffers, Value* bi, Value* m0, Value* m_end, Value* k0,
                Value* k_count, int64_t kc, Value* out) const {
    auto* f32 = b.getFloatTy();
    // k0 is a multiple of kc, and the lanes step by 16 from it.
    const int64_t align = std::gcd(kc, int64_t{kLanes});
    EmitCountedLoop(b, m0, m_end, 1, "pack_am", [&](MatmulBuilder& b, Value* m) {
      std::vector<Value*> coords = Coords(b, bi, m, nullptr);
      Value* dst = b.CreateInBoundsGEP(f32, out, b.CreateMul(b.CreateSub(m, m0), b.getInt64(kc)));
      EmitCountedLoop(
          b, b.getInt64(0), k_count, kLanes, "pack_ak", [&](MatmulBuilder& b, Value* kk) {
            Value* mask = LanesBelow(b, kk, k_count);
            Value* k = b.CreateAdd(k0, kk);
            Value* x =
                LowerLeaves(b, graph_, buffers_, buffers, expr_,
                            [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
                              return LoadLeafRow(b, base, leaf, shape, coords, k, mask, align);
                            });
            b.CreateMaskedStore(Splat(b, ConvertTo(b, x, DType::kFloat32), kLanes),
                                b.CreateInBoundsGEP(f32, dst, kk), llvm::Align(4), mask);
          });
    });
  }

 private:
  // (b, i, k) -> coordinates of the operand's own shape.
  std::vector<Value*> Coords(MatmulBuilder& b, Value* bi, Value* i, Value* k) const {
    const Shape& shape = graph_.value(value_).type.shape;
    std::vector<Value*> coords;
    if (layout_.batched) coords.push_back(bi);
    bool transposed = is_a_ ? layout_.transpose_a : !layout_.transpose_b;  // B is read as [n][k]
    if (transposed) {
      coords.push_back(k);
      coords.push_back(i);
    } else {
      // dense flattens the data's leading dims into m
      std::span<const int64_t> rows(shape.data() + coords.size(), shape.size() - coords.size() - 1);
      for (Value* c : Unflatten(b, i, rows)) coords.push_back(c);
      coords.push_back(k);
    }
    FT_CHECK(coords.size() == shape.size(), "matmul operand coordinates do not match its rank");
    return coords;
  }

  const Graph& graph_;
  const BufferMap& buffers_;
  MatmulLayout layout_;
  ValueId value_;
  bool is_a_;
  InlinedExpr expr_;
};

// One group output computed from the tile.
struct OutputPlan {
  ValueId value;
  int buffer;
  DType dtype;
  bool is_anchor;
  InlinedExpr expr;  // unused when is_anchor
};

class GroupEpilogue : public TileEpilogue {
 public:
  GroupEpilogue(const Graph& graph, const BufferMap& buffers, Shape out_shape,
                std::vector<OutputPlan> outputs)
      : graph_(graph),
        buffers_(buffers),
        out_shape_(std::move(out_shape)),
        outputs_(std::move(outputs)) {}

  void EmitVector(MatmulBuilder& b, const TileVector& v) override {
    const int rank = static_cast<int>(out_shape_.size());
    std::vector<Value*> coords =
        Unflatten(b, v.row, std::span<const int64_t>(out_shape_.data(), rank - 1));
    coords.push_back(nullptr);  // the last axis runs along the lanes
    // Compute every output before storing any, so no input load is ordered after a store.
    std::vector<Value*> results;
    for (const OutputPlan& out : outputs_) {
      if (out.is_anchor) {
        results.push_back(v.acc);
        continue;
      }
      results.push_back(Splat(b,
                              LowerLeaves(
                                  b, graph_, buffers_, v.buffers, out.expr,
                                  [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
                                    return LoadLeafRow(b, base, leaf, shape, coords, v.n_start,
                                                       v.mask);
                                  },
                                  v.acc),
                              kLanes));
    }
    Value* offset = b.CreateAdd(b.CreateMul(v.row, b.getInt64(out_shape_.back())), v.n_start);
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const OutputPlan& out = outputs_[o];
      llvm::Type* mem = MemoryType(b.getContext(), out.dtype);
      Value* p = b.CreateInBoundsGEP(mem, BufferBase(b, v.buffers, out.buffer), offset);
      b.CreateMaskedStore(ToMemory(b, results[o], out.dtype), p,
                          llvm::Align(mem->getScalarSizeInBits() / 8), v.mask);
    }
  }

  // Prefetches the full-size inputs (one element per output element, e.g. the seed's %z); small
  // broadcast inputs (a bias) stay in cache anyway.
  void EmitPrefetch(MatmulBuilder& b, const TileVector& v) override {
    const int rank = static_cast<int>(out_shape_.size());
    int64_t out_elements = 1;
    for (int64_t d : out_shape_) out_elements *= d;
    std::vector<Value*> coords;
    llvm::Function* prefetch = nullptr;
    for (const OutputPlan& out : outputs_) {
      for (const ExprLeaf& leaf : out.expr.leaves) {
        if (leaf.kind != ExprLeaf::Kind::kInput ||
            graph_.value(leaf.value).type.NumElements() < out_elements)
          continue;
        if (coords.empty()) {
          coords = Unflatten(b, v.row, std::span<const int64_t>(out_shape_.data(), rank - 1));
          coords.push_back(nullptr);
          prefetch = llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(),
                                                     llvm::Intrinsic::prefetch, {b.getPtrTy()});
        }
        Value* base = BufferBase(b, v.buffers, buffers_.Of(leaf.value));
        const Shape& shape = graph_.value(leaf.value).type.shape;
        if (Value* p = LeafRowAddress(b, base, leaf, shape, coords, v.n_start)) {
          // read, locality 1 (prefetcht2: into L2, so the tile's FMAs keep L1 for A and B), data
          b.CreateCall(prefetch, {p, b.getInt32(0), b.getInt32(1), b.getInt32(1)});
        }
      }
    }
  }

  void EmitPrefetchStores(MatmulBuilder& b, const TileVector& v) override {
    Value* offset = b.CreateAdd(b.CreateMul(v.row, b.getInt64(out_shape_.back())), v.n_start);
    for (const OutputPlan& out : outputs_) {
      Value* p = b.CreateInBoundsGEP(MemoryType(b.getContext(), out.dtype),
                                     BufferBase(b, v.buffers, out.buffer), offset);
      // write, locality 3 (prefetchw: into L1 owned), data
      b.CreateIntrinsic(llvm::Intrinsic::prefetch, {p->getType()},
                        {p, b.getInt32(1), b.getInt32(3), b.getInt32(1)});
    }
  }

  // A few arithmetic nodes and no transcendental function: inline it into every tile.
  bool Cheap() const override {
    int nodes = 0;
    bool transcendental = false;
    for (const OutputPlan& out : outputs_) {
      if (out.is_anchor) continue;
      nodes += CountNodes(out.expr.expr, transcendental);
    }
    return nodes <= 6 && !transcendental;
  }

 private:
  const Graph& graph_;
  const BufferMap& buffers_;
  Shape out_shape_;
  std::vector<OutputPlan> outputs_;
};

// wpack packs B once, at bind time, so B must be a kernel input (a user error otherwise: the
// search never offers it there). Returns false where another kernel computes B: a plan stored
// for a region whose B was a weight may be served to a graph where the same region's B is
// computed; there the kernel packs in each call, as without the knob, instead of failing.
bool WeightsPackable(const Graph& graph, const FusedGroup& group) {
  if (group.Horizontal())
    throw UserError(
        "matmul schedule: wpack=1 is for one matmul; a horizontal group packs its "
        "weights side by side in each call");
  const ValueId b = graph.value(group.anchor).inputs.at(1);
  if (std::find(group.inputs.begin(), group.inputs.end(), b) == group.inputs.end())
    throw UserError(fmt::format(
        "matmul schedule: wpack=1 needs B ({}) to be a kernel input; here the group computes it",
        graph.RefName(b)));
  return graph.value(b).kind != ValueKind::kNode;
}

bool IsIdentityIndex(const std::vector<IndexExpr>& index) {
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d]->op != IndexOp::kVar || index[d]->var != static_cast<int>(d)) return false;
  return true;
}

}  // namespace

Value* BufferBase(MatmulBuilder& b, Value* buffers, int index) {
  auto* ptr = llvm::PointerType::get(b.getContext(), 0);
  return b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, buffers, index),
                             llvm::Align(8));
}

Value* LowerLeaves(MatmulBuilder& b, const Graph& graph, const BufferMap& map, Value* buffers,
                   const InlinedExpr& expr, const LeafRead& read, Value* anchor) {
  std::vector<Value*> args;
  for (const ExprLeaf& leaf : expr.leaves) {
    if (leaf.kind == ExprLeaf::Kind::kAnchor) {
      FT_CHECK(anchor, "an expression reads the anchor where none is computed");
      args.push_back(anchor);
      continue;
    }
    const bool input = leaf.kind == ExprLeaf::Kind::kInput;
    Value* base = input ? BufferBase(b, buffers, map.Of(leaf.value)) : nullptr;
    args.push_back(read(base, leaf, input ? graph.value(leaf.value).type.shape : Shape{}));
  }
  return LowerScalarExpr(b, expr.expr, args);
}

std::unique_ptr<TileEpilogue> MakeGroupEpilogue(const Graph& graph, const FusedGroup& group,
                                                const BufferMap& buffers, int* acc_buffer) {
  const Shape& out_shape = graph.value(group.anchor).type.shape;
  if (acc_buffer) *acc_buffer = -1;
  std::vector<OutputPlan> outputs;
  for (ValueId v : group.outputs) {
    const TensorType& type = graph.value(v).type;
    FT_CHECK(
        type.shape == out_shape,
        fmt::format("matmul group output {} does not have the anchor's shape", graph.RefName(v)));
    OutputPlan plan{v, buffers.Of(v), type.dtype, v == group.anchor, {}};
    if (!plan.is_anchor) {
      plan.expr = InlineValue(graph, group, v, IdentityCoords(type.rank()));
      for (const ExprLeaf& leaf : plan.expr.leaves) {
        FT_CHECK(leaf.kind != ExprLeaf::Kind::kAnchor || IsIdentityIndex(leaf.index),
                 "an epilogue reads the anchor away from its own position");
      }
    }
    // Partial sums between k blocks go through the first float32 output.
    if (acc_buffer && *acc_buffer < 0 && type.dtype == DType::kFloat32) *acc_buffer = plan.buffer;
    outputs.push_back(std::move(plan));
  }
  return std::make_unique<GroupEpilogue>(graph, buffers, out_shape, std::move(outputs));
}

MatmulLayout GroupMatmulLayout(const Graph& graph, const FusedGroup& group) {
  FT_CHECK(group.templ == GroupTemplate::kMatmul && group.anchor >= 0, "not a matmul group");
  return MatmulLayoutOf(graph, group);
}

llvm::Function* EmitMatmulKernel(llvm::Module& module, const Graph& graph, const FusedGroup& group,
                                 const Schedule& schedule, const TargetInfo& target,
                                 const std::string& symbol, int threads) {
  if (schedule.Get("wpack", 0) != 0 && !WeightsPackable(graph, group)) {
    Schedule per_call = schedule;
    per_call.Set("wpack", 0);
    return EmitMatmulKernel(module, graph, group, per_call, target, symbol, threads);
  }
  if (group.Horizontal())
    return EmitHorizontalMatmulKernel(module, graph, group, schedule, target, symbol, threads);
  const fusetune::Value& anchor = graph.value(group.anchor);
  const MatmulLayout layout = GroupMatmulLayout(graph, group);
  for (ValueId v : {anchor.inputs[0], anchor.inputs[1], group.anchor}) {
    if (graph.value(v).type.dtype != DType::kFloat32)
      throw UserError(
          fmt::format("matmul template: {} of {} is {}; only float32 products are generated",
                      graph.RefName(v), anchor.op->name, DTypeName(graph.value(v).type.dtype)));
  }
  BufferMap buffers(group);

  MatmulKernelDesc desc;
  desc.name = symbol;
  desc.layout = layout;
  desc.tiling = ResolveMatmulTiling(layout, schedule, threads);
  auto operand = [&](ValueId v, bool is_a) {
    MatmulOperand op = is_a ? OperandA(layout, -1, false) : OperandB(layout, -1, false);
    if (ValueId read = ViewedGroupInput(graph, group, v); read >= 0) {
      op.buffer = buffers.Of(read);
    } else {
      auto prologue = std::make_shared<PrologueOperand>(graph, group, buffers, layout, v, is_a);
      op.compute = [prologue](MatmulBuilder& b, Value* bufs, Value* bi, Value* i, Value* k) {
        return (*prologue)(b, bufs, bi, i, k);
      };
    }
    return op;
  };
  if (desc.tiling.swap) {
    // swap=1: the emitter computes B·Aᵀ, B (the weights) as its broadcast operand read in place
    // and A packed, and transposes each tile back before the epilogue.
    if (!MatmulSwapOffered(graph, group))
      throw UserError(
          "matmul schedule: swap=1 needs both operands read in place (no prologue or folded "
          "norm in the group)");
    desc.layout = SwappedMatmulLayout(layout);
    desc.a =
        OperandA(desc.layout, buffers.Of(ViewedGroupInput(graph, group, anchor.inputs[1])), false);
    desc.b =
        OperandB(desc.layout, buffers.Of(ViewedGroupInput(graph, group, anchor.inputs[0])), false);
    desc.transposed_out = true;
    std::unique_ptr<TileEpilogue> epilogue = MakeGroupEpilogue(graph, group, buffers, nullptr);
    return EmitMatmulFunction(module, desc, *epilogue, target);
  }
  if (group.norm >= 0) {
    desc.a = OperandA(layout, -1, false);
    desc.pack_a = NormalizedRowsPacker(graph, group, buffers, layout);
  } else if (ViewedGroupInput(graph, group, anchor.inputs[0]) < 0 && !layout.transpose_a) {
    // A computed A along its stored last axis: packed in rows, 16 lanes at a time.
    auto rows =
        std::make_shared<PrologueOperand>(graph, group, buffers, layout, anchor.inputs[0], true);
    desc.a = OperandA(layout, -1, false);
    desc.pack_a = [rows](MatmulBuilder& b, Value* bufs, Value* bi, Value* m0, Value* m_end,
                         Value* k0, Value* k_count, int64_t kc, Value* out) {
      rows->PackRows(b, bufs, bi, m0, m_end, k0, k_count, kc, out);
    };
  } else {
    desc.a = operand(anchor.inputs[0], true);
  }
  desc.b = operand(anchor.inputs[1], false);
  if (desc.a.compute || desc.pack_a) {
    // A computed A is packed [mc][kc] per task: keep that block cache-sized (the default mc is
    // all of M), at the price of more tasks. Rows computed along k (a folded norm's too) with B
    // packed at bind time are packed once per row block and read by all its n blocks
    // (matmul_task.cc), as a plain A is read from its buffer: a taller block streams B fewer
    // times (the head merge into BERT's out projection at S = 256: 1,481-1,511 µs in one block
    // against 1,512-1,585 in three; the GPT-2 stack's QKV under its layer norm, M = 128 and
    // K = 768, 10% faster in one block than in two, and FFN 1 at 2 threads 11%).
    MatmulTiling& t = desc.tiling;
    const bool reused_rows = desc.pack_a && t.wpack;
    const int64_t budget = reused_rows ? kReusedPackedABytes : kPackedABytes;
    int64_t rows = std::max<int64_t>(t.mr, (budget / (t.kc * 4)) / t.mr * t.mr);
    t.mc = std::min(t.mc, rows);
    if (desc.pack_a && t.mc < layout.m) {
      // Equal blocks: a folded norm's tasks run rows outer (matmul_task.cc), so a short last
      // block is a thread's short share (M = 256 in blocks of 84: 168 rows against 88).
      const int64_t blocks = (layout.m + t.mc - 1) / t.mc;
      t.mc = ((layout.m + blocks - 1) / blocks + t.mr - 1) / t.mr * t.mr;
    }
  }

  std::unique_ptr<TileEpilogue> epilogue =
      MakeGroupEpilogue(graph, group, buffers, &desc.acc_buffer);
  if (desc.acc_buffer < 0) desc.tiling.kc = layout.k;  // nowhere to keep partial sums: one k block

  return EmitMatmulFunction(module, desc, *epilogue, target);
}

}  // namespace fusetune::codegen
