#include "worker/codegen/kernel_ir.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune::codegen {

int Kernel::AddParam(const std::string& name, DType dtype, int64_t size) {
  buffers.push_back({name, dtype, size, num_params()});
  return static_cast<int>(buffers.size()) - 1;
}

int Kernel::AddLocal(const std::string& name, DType dtype, int64_t size) {
  buffers.push_back({name, dtype, size, -1});
  return static_cast<int>(buffers.size()) - 1;
}

int Kernel::NewVar(const std::string& name) {
  var_names.push_back(name);
  return static_cast<int>(var_names.size()) - 1;
}

int Kernel::num_params() const {
  int n = 0;
  for (const KBuffer& b : buffers) n += b.param_index >= 0;
  return n;
}

namespace kir {
namespace {

KExpr Make(KNode node) { return std::make_shared<const KNode>(std::move(node)); }
bool IsInt(const KExpr& e, int64_t v) { return e->op == KOp::kInt && e->value == v; }
bool IsInt(const KExpr& e) { return e->op == KOp::kInt; }

KExpr Binary(KOp op, KExpr a, KExpr b) {
  KNode n;
  n.op = op;
  n.args = {std::move(a), std::move(b)};
  return Make(std::move(n));
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

KExpr Int(int64_t v) {
  KNode n;
  n.op = KOp::kInt;
  n.value = v;
  return Make(std::move(n));
}

KExpr Var(int var) {
  KNode n;
  n.op = KOp::kVar;
  n.var = var;
  return Make(std::move(n));
}

KExpr Add(KExpr a, KExpr b) {
  if (IsInt(a) && IsInt(b)) return Int(a->value + b->value);
  if (IsInt(a, 0)) return b;
  if (IsInt(b, 0)) return a;
  return Binary(KOp::kAdd, std::move(a), std::move(b));
}

KExpr Sub(KExpr a, KExpr b) {
  if (IsInt(a) && IsInt(b)) return Int(a->value - b->value);
  if (IsInt(b, 0)) return a;
  return Binary(KOp::kSub, std::move(a), std::move(b));
}

KExpr Mul(KExpr a, KExpr b) {
  if (IsInt(a) && IsInt(b)) return Int(a->value * b->value);
  if (IsInt(a, 0) || IsInt(b, 0)) return Int(0);
  if (IsInt(a, 1)) return b;
  if (IsInt(b, 1)) return a;
  return Binary(KOp::kMul, std::move(a), std::move(b));
}

KExpr FloorDiv(KExpr a, KExpr b) {
  if (IsInt(a) && IsInt(b) && b->value != 0) return Int(FloorDivInt(a->value, b->value));
  if (IsInt(b, 1)) return a;
  return Binary(KOp::kFloorDiv, std::move(a), std::move(b));
}

KExpr Mod(KExpr a, KExpr b) {
  if (IsInt(a) && IsInt(b) && b->value != 0)
    return Int(a->value - FloorDivInt(a->value, b->value) * b->value);
  if (IsInt(b, 1)) return Int(0);
  return Binary(KOp::kMod, std::move(a), std::move(b));
}

KExpr Min(KExpr a, KExpr b) {
  if (IsInt(a) && IsInt(b)) return Int(std::min(a->value, b->value));
  return Binary(KOp::kMin, std::move(a), std::move(b));
}

KExpr Max(KExpr a, KExpr b) {
  if (IsInt(a) && IsInt(b)) return Int(std::max(a->value, b->value));
  return Binary(KOp::kMax, std::move(a), std::move(b));
}

KExpr Load(int buffer, KExpr index) {
  KNode n;
  n.op = KOp::kLoad;
  n.buffer = buffer;
  n.args = {std::move(index)};
  return Make(std::move(n));
}

KExpr Eval(ScalarExpr scalar, std::vector<KExpr> args) {
  KNode n;
  n.op = KOp::kEval;
  n.scalar = std::move(scalar);
  n.args = std::move(args);
  return Make(std::move(n));
}

KStmt For(int var, int64_t extent, LoopKind kind, KStmt body, int width) {
  KStmtNode n;
  n.kind = KStmtKind::kFor;
  n.var = var;
  n.extent = extent;
  n.loop = kind;
  n.width = kind == LoopKind::kVectorized ? width : 1;
  n.body = {std::move(body)};
  return std::make_shared<const KStmtNode>(std::move(n));
}

KStmt Store(int buffer, KExpr index, KExpr value) {
  KStmtNode n;
  n.kind = KStmtKind::kStore;
  n.buffer = buffer;
  n.index = std::move(index);
  n.value = std::move(value);
  return std::make_shared<const KStmtNode>(std::move(n));
}

KStmt Block(std::vector<KStmt> stmts) {
  KStmtNode n;
  n.kind = KStmtKind::kBlock;
  n.body = std::move(stmts);
  return std::make_shared<const KStmtNode>(std::move(n));
}

KStmt Alloc(int buffer, KStmt body) {
  KStmtNode n;
  n.kind = KStmtKind::kAlloc;
  n.buffer = buffer;
  n.body = {std::move(body)};
  return std::make_shared<const KStmtNode>(std::move(n));
}

}  // namespace kir

DType ExprDType(const Kernel& kernel, const KExpr& e) {
  switch (e->op) {
    case KOp::kLoad:
      return kernel.buffers.at(e->buffer).dtype;
    case KOp::kEval:
      return e->scalar->dtype;
    default:
      return DType::kInt32;
  }
}

// ---------------------------------------------------------------------------------------------
// Printer

namespace {

const char* InfixSymbol(ScalarOp op) {
  switch (op) {
    case ScalarOp::kAdd:
      return "+";
    case ScalarOp::kSub:
      return "-";
    case ScalarOp::kMul:
      return "*";
    case ScalarOp::kDiv:
      return "/";
    case ScalarOp::kLt:
      return "<";
    case ScalarOp::kLe:
      return "<=";
    case ScalarOp::kGt:
      return ">";
    case ScalarOp::kGe:
      return ">=";
    case ScalarOp::kEq:
      return "==";
    case ScalarOp::kNe:
      return "!=";
    default:
      return nullptr;
  }
}

std::string FormatConst(double v, DType dtype) {
  if (dtype == DType::kFloat32) return fmt::format("{}f", v);
  if (dtype == DType::kBool) return v != 0.0 ? "true" : "false";
  return fmt::format("{}", static_cast<int64_t>(v));
}

std::string PrintExpr(const Kernel& k, const KExpr& e) {
  auto bin = [&](const char* op) {
    return fmt::format("({} {} {})", PrintExpr(k, e->args[0]), op, PrintExpr(k, e->args[1]));
  };
  switch (e->op) {
    case KOp::kInt:
      return std::to_string(e->value);
    case KOp::kVar:
      return k.var_names.at(e->var);
    case KOp::kAdd:
      return bin("+");
    case KOp::kSub:
      return bin("-");
    case KOp::kMul:
      return bin("*");
    case KOp::kFloorDiv:
      return bin("/");
    case KOp::kMod:
      return bin("%");
    case KOp::kMin:
      return fmt::format("min({}, {})", PrintExpr(k, e->args[0]), PrintExpr(k, e->args[1]));
    case KOp::kMax:
      return fmt::format("max({}, {})", PrintExpr(k, e->args[0]), PrintExpr(k, e->args[1]));
    case KOp::kLoad:
      return fmt::format("{}[{}]", k.buffers.at(e->buffer).name, PrintExpr(k, e->args[0]));
    case KOp::kEval: {
      std::vector<std::string> args;
      for (const KExpr& a : e->args) args.push_back(PrintExpr(k, a));
      return PrintScalarExpr(e->scalar, args);
    }
  }
  return "?";
}

const char* LoopKindName(LoopKind kind) {
  switch (kind) {
    case LoopKind::kSerial:
      return "for";
    case LoopKind::kParallel:
      return "parallel for";
    case LoopKind::kVectorized:
      return "vectorized";
    case LoopKind::kUnrolled:
      return "unrolled for";
  }
  return "?";
}

void PrintStmt(const Kernel& k, const KStmt& s, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  switch (s->kind) {
    case KStmtKind::kFor:
      if (s->loop == LoopKind::kVectorized) {
        out += fmt::format("{}vectorized({}) for {} in 0..{} {{\n", pad, s->width,
                           k.var_names.at(s->var), s->extent);
      } else {
        out += fmt::format("{}{} {} in 0..{} {{\n", pad, LoopKindName(s->loop),
                           k.var_names.at(s->var), s->extent);
      }
      for (const KStmt& b : s->body) PrintStmt(k, b, indent + 1, out);
      out += pad + "}\n";
      break;
    case KStmtKind::kStore:
      out += fmt::format("{}{}[{}] = {}\n", pad, k.buffers.at(s->buffer).name,
                         PrintExpr(k, s->index), PrintExpr(k, s->value));
      break;
    case KStmtKind::kBlock:
      for (const KStmt& b : s->body) PrintStmt(k, b, indent, out);
      break;
    case KStmtKind::kAlloc: {
      const KBuffer& b = k.buffers.at(s->buffer);
      out += fmt::format("{}alloc {}: {}[{}] {{\n", pad, b.name, DTypeName(b.dtype), b.size);
      for (const KStmt& c : s->body) PrintStmt(k, c, indent + 1, out);
      out += pad + "}\n";
      break;
    }
  }
}

}  // namespace

std::string PrintScalarExpr(const ScalarExpr& e, const std::vector<std::string>& args) {
  switch (e->op) {
    case ScalarOp::kConst:
      return FormatConst(e->value, e->dtype);
    case ScalarOp::kArg:
      return e->arg_index < static_cast<int>(args.size()) ? args[e->arg_index]
                                                          : fmt::format("arg{}", e->arg_index);
    case ScalarOp::kCast:
      return fmt::format("{}({})", DTypeName(e->dtype), PrintScalarExpr(e->operands[0], args));
    case ScalarOp::kSelect:
      return fmt::format("select({}, {}, {})", PrintScalarExpr(e->operands[0], args),
                         PrintScalarExpr(e->operands[1], args),
                         PrintScalarExpr(e->operands[2], args));
    default:
      break;
  }
  if (const char* sym = InfixSymbol(e->op)) {
    return fmt::format("({} {} {})", PrintScalarExpr(e->operands[0], args), sym,
                       PrintScalarExpr(e->operands[1], args));
  }
  std::string out = std::string(ScalarOpName(e->op)) + "(";
  for (size_t i = 0; i < e->operands.size(); ++i) {
    if (i) out += ", ";
    out += PrintScalarExpr(e->operands[i], args);
  }
  return out + ")";
}

std::string PrintKernel(const Kernel& k) {
  std::string out = "kernel " + k.name + "(";
  bool first = true;
  for (const KBuffer& b : k.buffers) {
    if (b.param_index < 0) continue;
    if (!first) out += ", ";
    first = false;
    out += fmt::format("{}: {}[{}]", b.name, DTypeName(b.dtype), b.size);
  }
  out += ") {\n";
  if (k.body) PrintStmt(k, k.body, 1, out);
  return out + "}\n";
}

}  // namespace fusetune::codegen
