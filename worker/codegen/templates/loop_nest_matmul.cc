// A plain loop-nest matmul (dot products, no blocking): correct for every layout, used only
// when the register-blocked matmul template (templates/matmul.h) is not part of the build.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/group_expr.h"
#include "worker/codegen/templates/group_kernel.h"
#include "worker/codegen/templates/templates.h"

namespace fusetune::codegen {

Kernel BuildLoopNestMatmulKernel(const Graph& graph, const FusedGroup& group,
                                 const TemplateKnobs& knobs, const std::string& name) {
  GroupKernel gk(graph, group, name);
  const Value& anchor = graph.value(group.anchor);
  std::vector<TensorType> in_types;
  for (ValueId v : anchor.inputs) in_types.push_back(graph.value(v).type);
  const MatmulLayout l = anchor.op->matmul(in_types, anchor.attrs);
  for (const TensorType& t : in_types)
    if (t.rank() < 2 || t.rank() > 3)
      throw UserError(fmt::format("loop-nest matmul: operand of rank {}", t.rank()));

  // Iteration axes: 0 batch, 1 m, 2 n, 3 k. Operand coordinates over them.
  auto operand_coords = [&](const TensorType& t, bool transposed, int row_axis) {
    std::vector<IndexExpr> c;
    if (t.rank() == 3) c.push_back(t.shape[0] == 1 ? ix::Const(0) : ix::Var(0));
    if (transposed) {
      c.push_back(ix::Var(3));
      c.push_back(ix::Var(row_axis));
    } else {
      c.push_back(ix::Var(row_axis));
      c.push_back(ix::Var(3));
    }
    return c;
  };
  InlinedExpr a =
      InlineValue(graph, group, anchor.inputs[0], operand_coords(in_types[0], l.transpose_a, 1));
  InlinedExpr b =
      InlineValue(graph, group, anchor.inputs[1], operand_coords(in_types[1], !l.transpose_b, 2));

  Kernel& k = gk.kernel();
  const int p = gk.Var("p"), n = gk.Var("n"), kk = gk.Var("k");
  const int acc = gk.Local("acc", DType::kFloat32, 1);
  KExpr bi = kir::FloorDiv(kir::Var(p), kir::Int(l.m)), mi = kir::Mod(kir::Var(p), kir::Int(l.m));
  std::vector<KExpr> axes = {bi, mi, kir::Var(n), kir::Var(kk)};
  std::vector<int64_t> extents = {l.batch, l.m, l.n, l.k};
  ScalarExpr fma = sx::Binary(
      ScalarOp::kAdd, sx::Arg(0, DType::kFloat32),
      sx::Binary(ScalarOp::kMul, sx::Arg(1, DType::kFloat32), sx::Arg(2, DType::kFloat32)));
  const Shape& out_shape = anchor.type.shape;
  std::vector<int64_t> out_extents(out_shape.begin(), out_shape.end());
  KExpr out_flat = kir::Add(kir::Mul(kir::Var(p), kir::Int(l.n)), kir::Var(n));
  std::vector<KExpr> out_coords = Unflatten(out_flat, out_extents);
  std::vector<KStmt> stmts = {
      kir::Store(acc, kir::Int(0), kir::Eval(sx::Const(0.0), {})),
      kir::For(kk, l.k, LoopKind::kSerial,
               kir::Store(acc, kir::Int(0),
                          kir::Eval(fma, {kir::Load(acc, kir::Int(0)), gk.Lower(a, axes, extents),
                                          gk.Lower(b, axes, extents)})))};
  KExpr value = kir::Load(acc, kir::Int(0));
  for (ValueId out : group.outputs) {
    InlinedExpr e =
        InlineValue(graph, group, out, IdentityCoords(static_cast<int>(out_shape.size())));
    stmts.push_back(
        kir::Store(gk.Buffer(out), out_flat,
                   gk.Lower(e, out_coords, out_extents, [&](const ExprLeaf&) { return value; })));
  }
  k.body =
      kir::For(p, l.batch * l.m, knobs.parallel ? LoopKind::kParallel : LoopKind::kSerial,
               kir::Alloc(acc, kir::For(n, l.n, LoopKind::kSerial, kir::Block(std::move(stmts)))));
  return std::move(k);
}

TemplateKnobs ReadKnobs(const Schedule& schedule, const TargetInfo& target) {
  TemplateKnobs knobs;
  knobs.vector = target.vector_floats();
  for (const auto& [key, value] : schedule.knobs) {
    if (key == "vector") {
      if (value != 1 && value != 4 && value != 8 && value != 16 && value != 32)
        throw UserError(fmt::format("schedule knob vector={} must be 1, 4, 8, 16 or 32", value));
      knobs.vector = static_cast<int>(value);
    } else if (key == "parallel") {
      if (value != 0 && value != 1)
        throw UserError(fmt::format("schedule knob parallel={} must be 0 or 1", value));
      knobs.parallel = value == 1;
    } else if (key == "tile") {
      if (value != 0 && value != 1)
        throw UserError(fmt::format("schedule knob tile={} must be 0 or 1", value));
      knobs.tile = value == 1;
    } else {
      throw UserError(fmt::format(
          "unknown schedule knob '{}' (this template has: vector, parallel, tile)", key));
    }
  }
  return knobs;
}

}  // namespace fusetune::codegen
