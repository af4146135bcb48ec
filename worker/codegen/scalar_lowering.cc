#include "worker/codegen/scalar_lowering.h"

#include <cmath>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "ir/error.h"
#include "worker/codegen/vector_math.h"

namespace fusetune::codegen {
namespace {

using llvm::Value;

unsigned LanesOf(Value* v) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return vt->getNumElements();
  return 0;
}

llvm::Type* ElementType(Value* v) { return v->getType()->getScalarType(); }

bool IsBoolType(llvm::Type* t) { return t->isIntegerTy(1); }

Value* ConstantOf(llvm::IRBuilderBase& b, DType dtype, double v) {
  switch (dtype) {
    case DType::kFloat32:
      return llvm::ConstantFP::get(b.getFloatTy(), v);
    case DType::kInt32:
      return b.getInt32(static_cast<uint32_t>(static_cast<int32_t>(v)));
    case DType::kBool:
      return b.getInt1(v != 0.0);
    default:
      FT_CHECK(false, fmt::format("no kernel representation for {}", DTypeName(dtype)));
  }
}

Value* ZeroLike(Value* v) { return llvm::Constant::getNullValue(v->getType()); }

bool IsFloatOp(DType d) { return d == DType::kFloat32; }

}  // namespace

llvm::Type* RegisterType(llvm::LLVMContext& context, DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return llvm::Type::getFloatTy(context);
    case DType::kInt32:
      return llvm::Type::getInt32Ty(context);
    case DType::kBool:
      return llvm::Type::getInt1Ty(context);
    default:
      FT_CHECK(false, fmt::format("no kernel representation for {}", DTypeName(dtype)));
  }
}

llvm::Type* MemoryType(llvm::LLVMContext& context, DType dtype) {
  if (dtype == DType::kBool) return llvm::Type::getInt8Ty(context);
  return RegisterType(context, dtype);
}

Value* Splat(llvm::IRBuilderBase& b, Value* v, unsigned lanes) {
  if (lanes == 0 || LanesOf(v) != 0) return v;
  return b.CreateVectorSplat(lanes, v);
}

Value* ToRegister(llvm::IRBuilderBase& b, Value* loaded, DType dtype) {
  if (dtype == DType::kBool) return b.CreateICmpNE(loaded, ZeroLike(loaded));
  return loaded;
}

Value* ToMemory(llvm::IRBuilderBase& b, Value* v, DType dtype) {
  if (dtype == DType::kBool) return b.CreateZExt(v, v->getType()->getWithNewType(b.getInt8Ty()));
  return v;
}

Value* ConvertTo(llvm::IRBuilderBase& b, Value* v, DType dtype) {
  llvm::Type* from = ElementType(v);
  llvm::Type* to = RegisterType(b.getContext(), dtype);
  if (from == to) return v;
  llvm::Type* to_full = v->getType()->getWithNewType(to);
  switch (dtype) {
    case DType::kFloat32:
      if (IsBoolType(from)) return b.CreateUIToFP(v, to_full);
      return b.CreateSIToFP(v, to_full);
    case DType::kInt32:
      if (from->isFloatTy()) {
        // Truncation toward zero that saturates and maps NaN to 0, as the catalog defines casts.
        return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {to_full, v->getType()}, {v});
      }
      if (IsBoolType(from)) return b.CreateZExt(v, to_full);
      return b.CreateSExtOrTrunc(v, to_full);
    case DType::kBool:
      if (from->isFloatTy()) return b.CreateFCmpUNE(v, ZeroLike(v));
      return b.CreateICmpNE(v, ZeroLike(v));
    default:
      FT_CHECK(false, fmt::format("no kernel representation for {}", DTypeName(dtype)));
  }
}

Value* LowerScalarOp(llvm::IRBuilderBase& b, ScalarOp op, DType result, double constant,
                     std::span<Value* const> operands_in, std::span<const DType> dtypes) {
  if (op == ScalarOp::kConst) return ConstantOf(b, result, constant);
  std::vector<Value*> ops(operands_in.begin(), operands_in.end());
  unsigned lanes = 0;
  for (Value* v : ops) lanes = std::max(lanes, LanesOf(v));
  for (Value*& v : ops) v = Splat(b, v, lanes);
  const DType in = dtypes.empty() ? result : dtypes[0];
  auto a = [&] { return ops.at(0); };
  auto c = [&] { return ops.at(1); };
  switch (op) {
    case ScalarOp::kNeg:
      return IsFloatOp(in) ? b.CreateFNeg(a()) : b.CreateNeg(a());
    case ScalarOp::kAbs:
      if (IsFloatOp(in)) return b.CreateIntrinsic(llvm::Intrinsic::fabs, {a()->getType()}, {a()});
      return b.CreateIntrinsic(llvm::Intrinsic::abs, {a()->getType()}, {a(), b.getFalse()});
    case ScalarOp::kExp:
      return EmitExp(b, a());
    case ScalarOp::kFastExp:
      return EmitFastExp(b, a());
    case ScalarOp::kLog:
      return EmitLog(b, a());
    case ScalarOp::kSqrt:
      return EmitSqrt(b, a());
    case ScalarOp::kRsqrt:
      return EmitRsqrt(b, a());
    case ScalarOp::kTanh:
      return EmitTanh(b, a());
    case ScalarOp::kFastTanh:
      return EmitFastTanh(b, a());
    case ScalarOp::kSigmoid:
      return EmitSigmoid(b, a());
    case ScalarOp::kErf:
      return EmitErf(b, a());
    case ScalarOp::kCast:
      return ConvertTo(b, a(), result);
    case ScalarOp::kAdd:
      if (IsFloatOp(in)) return b.CreateFAdd(a(), c());
      return in == DType::kBool ? b.CreateOr(a(), c()) : b.CreateAdd(a(), c());
    case ScalarOp::kSub:
      return IsFloatOp(in) ? b.CreateFSub(a(), c()) : b.CreateSub(a(), c());
    case ScalarOp::kMul:
      if (IsFloatOp(in)) return b.CreateFMul(a(), c());
      return in == DType::kBool ? b.CreateAnd(a(), c()) : b.CreateMul(a(), c());
    case ScalarOp::kDiv: {
      if (IsFloatOp(in)) {
        // By a constant: a multiply by its reciprocal (at most a ulp or so from the division,
        // far inside the reference check), since a vector division occupies the divider for
        // several cycles: erf-GELU's x / sqrt(2) was one per element.
        if (auto* k = llvm::dyn_cast<llvm::ConstantFP>(operands_in[1])) {
          const double divisor = k->getValueAPF().convertToFloat();
          if (std::isfinite(divisor) && divisor != 0.0)
            return b.CreateFMul(a(), Splat(b, ConstantOf(b, result, 1.0 / divisor), lanes));
        }
        return b.CreateFDiv(a(), c());
      }
      // Integers truncate; x / 0 is 0 by the catalog's definition (and must not trap here).
      Value* zero = b.CreateICmpEQ(c(), ZeroLike(c()));
      Value* safe = b.CreateSelect(zero, llvm::ConstantInt::get(c()->getType(), 1), c());
      return b.CreateSelect(zero, ZeroLike(a()), b.CreateSDiv(a(), safe));
    }
    case ScalarOp::kPow: {
      if (IsFloatOp(in)) {
        bool is_const = dtypes.size() > 1 && llvm::isa<llvm::Constant>(operands_in[1]) &&
                        LanesOf(operands_in[1]) == 0;
        double value = 0.0;
        if (is_const) {
          if (auto* cf = llvm::dyn_cast<llvm::ConstantFP>(operands_in[1]))
            value = cf->getValueAPF().convertToFloat();
          else
            is_const = false;
        }
        return EmitPow(b, a(), c(), is_const ? &value : nullptr);
      }
      Value* fa = ConvertTo(b, a(), DType::kFloat32);
      Value* fc = ConvertTo(b, c(), DType::kFloat32);
      Value* r = b.CreateIntrinsic(llvm::Intrinsic::rint, {fa->getType()}, {EmitPow(b, fa, fc)});
      return ConvertTo(b, r, DType::kInt32);
    }
    case ScalarOp::kMax:
      // a < b ? b : a, so a NaN in `a` propagates as in the reference.
      if (IsFloatOp(in)) return b.CreateSelect(b.CreateFCmpOLT(a(), c()), c(), a());
      return b.CreateSelect(b.CreateICmpSLT(a(), c()), c(), a());
    case ScalarOp::kMin:
      if (IsFloatOp(in)) return b.CreateSelect(b.CreateFCmpOLT(c(), a()), c(), a());
      return b.CreateSelect(b.CreateICmpSLT(c(), a()), c(), a());
    case ScalarOp::kLt:
      return IsFloatOp(in)        ? b.CreateFCmpOLT(a(), c())
             : in == DType::kBool ? b.CreateICmpULT(a(), c())
                                  : b.CreateICmpSLT(a(), c());
    case ScalarOp::kLe:
      return IsFloatOp(in)        ? b.CreateFCmpOLE(a(), c())
             : in == DType::kBool ? b.CreateICmpULE(a(), c())
                                  : b.CreateICmpSLE(a(), c());
    case ScalarOp::kGt:
      return IsFloatOp(in)        ? b.CreateFCmpOGT(a(), c())
             : in == DType::kBool ? b.CreateICmpUGT(a(), c())
                                  : b.CreateICmpSGT(a(), c());
    case ScalarOp::kGe:
      return IsFloatOp(in)        ? b.CreateFCmpOGE(a(), c())
             : in == DType::kBool ? b.CreateICmpUGE(a(), c())
                                  : b.CreateICmpSGE(a(), c());
    case ScalarOp::kEq:
      return IsFloatOp(in) ? b.CreateFCmpOEQ(a(), c()) : b.CreateICmpEQ(a(), c());
    case ScalarOp::kNe:
      return IsFloatOp(in) ? b.CreateFCmpUNE(a(), c()) : b.CreateICmpNE(a(), c());
    case ScalarOp::kSelect: {
      Value* cond = ConvertTo(b, ops.at(0), DType::kBool);
      return b.CreateSelect(cond, ops.at(1), ops.at(2));
    }
    default:
      break;
  }
  FT_CHECK(false, fmt::format("cannot lower scalar op {}", ScalarOpName(op)));
}

Value* LowerScalarExpr(llvm::IRBuilderBase& b, const ScalarExpr& expr,
                       std::span<Value* const> args) {
  std::unordered_map<const ScalarNode*, Value*> memo;
  auto lower = [&](auto& self, const ScalarExpr& e) -> Value* {
    if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
    Value* out;
    if (e->op == ScalarOp::kArg) {
      FT_CHECK(e->arg_index >= 0 && e->arg_index < static_cast<int>(args.size()),
               fmt::format("scalar expression uses arg {} of {}", e->arg_index, args.size()));
      out = ConvertTo(b, args[e->arg_index], e->dtype);
    } else {
      std::vector<Value*> operands;
      std::vector<DType> dtypes;
      for (const ScalarExpr& o : e->operands) {
        operands.push_back(self(self, o));
        dtypes.push_back(o->dtype);
      }
      // Select's operand dtype of interest is its value's, not the condition's.
      if (e->op == ScalarOp::kSelect) std::swap(dtypes[0], dtypes[1]);
      // A bool operand of an arithmetic op on another dtype is converted first.
      if (e->op != ScalarOp::kSelect && e->op != ScalarOp::kCast) {
        for (size_t i = 0; i < operands.size(); ++i) {
          if (dtypes[i] != dtypes[0]) operands[i] = ConvertTo(b, operands[i], dtypes[0]);
        }
      }
      out = LowerScalarOp(b, e->op, e->dtype, e->value, operands, dtypes);
    }
    memo.emplace(e.get(), out);
    return out;
  };
  return lower(lower, expr);
}

}  // namespace fusetune::codegen
