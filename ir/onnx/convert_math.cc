// Element-wise ONNX ops: arithmetic, math functions, comparisons, Where, Cast, Clip. Each folds
// on the host when every input is known at import (shape arithmetic in int64 needs it) and
// otherwise becomes the catalog op of the same meaning.
#include <cmath>
#include <limits>

#include "ir/onnx/host_ops.h"
#include "ir/onnx/import_context.h"

namespace fusetune::onnx_import {
namespace {

bool AllHost(const NodeContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.HasInput(i) && !ctx.IsHost(i)) return false;
  return true;
}

int64_t IntDivide(int64_t a, int64_t b) {
  if (b == 0) throw UserError("integer division by zero while folding");
  return a / b;  // C semantics (toward zero), as ONNX Runtime computes integer Div
}

int64_t IntPow(int64_t base, int64_t exp) {
  int64_t r = 1;
  for (int64_t i = 0; i < exp; ++i) r *= base;
  return exp < 0 ? 0 : r;
}

void AddBinary(ConverterTable& t, const std::string& onnx_op, const std::string& ir_op,
               HostBinaryFns fns) {
  t[onnx_op] = [ir_op, fns](NodeContext& ctx) {
    if (AllHost(ctx)) {
      const HostTensor& a = ctx.Host(0, "");
      ctx.SetOutput(0, HostBinary(a, ctx.Host(1, ""), a.elem_type, fns));
      return;
    }
    ctx.SetOutput(0, ctx.Emit(ir_op, {ctx.Runtime(0), ctx.Runtime(1)}));
  };
}

// Comparisons and logic produce bool, which the catalog computes only as where's condition;
// they fold at import (masks built from shapes) and are refused at run time.
void AddHostOnlyBinary(ConverterTable& t, const std::string& onnx_op, HostBinaryFns fns) {
  t[onnx_op] = [onnx_op, fns](NodeContext& ctx) {
    if (!AllHost(ctx)) {
      ctx.Fail(
          "{} on values computed at run time is not supported (fusetune has no comparison "
          "ops; it folds {} only when its inputs are known at import)",
          onnx_op, onnx_op);
    }
    ctx.SetOutput(0, HostBinary(ctx.Host(0, ""), ctx.Host(1, ""), kOnnxBool, fns));
  };
}

void AddUnary(ConverterTable& t, const std::string& onnx_op, const std::string& ir_op,
              double (*fold)(double)) {
  t[onnx_op] = [ir_op, fold](NodeContext& ctx) {
    if (ctx.IsHost(0)) {
      const HostTensor& x = ctx.Host(0, "");
      HostTensor out = HostTensor::Zeros(x.elem_type, x.shape);
      for (int64_t i = 0; i < x.size(); ++i) out.SetReal(i, fold(x.Real(i)));
      ctx.SetOutput(0, std::move(out));
      return;
    }
    ctx.SetOutput(0, ctx.Emit(ir_op, {ctx.Runtime(0)}));
  };
}

// Variadic Max/Min/Sum: two known inputs fold, one input passes through, otherwise a chain of
// the binary op.
void AddVariadic(ConverterTable& t, const std::string& onnx_op, const std::string& ir_op,
                 HostBinaryFns fns) {
  t[onnx_op] = [ir_op, fns](NodeContext& ctx) {
    if (ctx.num_inputs() == 1) return ctx.ForwardInput(0, 0);
    if (ctx.num_inputs() == 2 && AllHost(ctx)) {
      const HostTensor& a = ctx.Host(0, "");
      return ctx.SetOutput(0, HostBinary(a, ctx.Host(1, ""), a.elem_type, fns));
    }
    ValueId acc = ctx.Runtime(0);
    for (int i = 1; i < ctx.num_inputs(); ++i) acc = ctx.Emit(ir_op, {acc, ctx.Runtime(i)});
    ctx.SetOutput(0, acc);
  };
}

// A host scalar's value, or nullopt when input i is not a single known number.
std::optional<double> HostScalar(const NodeContext& ctx, int i) {
  if (!ctx.HasInput(i) || !ctx.IsHost(i)) return std::nullopt;
  const HostTensor& h = ctx.Host(i, "");
  if (h.size() != 1) return std::nullopt;
  return h.Real(0);
}

// Pow: x^2 becomes multiply(x, x) (exact, and no pow in the kernel), x^0.5 sqrt, x^1 x itself.
void ConvertPow(NodeContext& ctx) {
  if (AllHost(ctx)) {
    const HostTensor& a = ctx.Host(0, "");
    ctx.SetOutput(0, HostBinary(a, ctx.Host(1, ""), a.elem_type,
                                {[](double x, double y) { return std::pow(x, y); }, IntPow}));
    return;
  }
  const ValueId x = ctx.Runtime(0);
  const TensorType& xt = ctx.TypeOf(x);
  std::optional<double> e = HostScalar(ctx, 1);
  // The exponent's shape still broadcasts into the result, so shortcuts need a rank it can't grow.
  const bool scalar_like = e && ctx.Input(1).shape.size() <= xt.shape.size();
  if (scalar_like && *e == 2.0) return ctx.SetOutput(0, ctx.Emit("multiply", {x, x}));
  if (scalar_like && *e == 1.0) return ctx.SetOutput(0, x);
  if (scalar_like && *e == 0.5 && xt.dtype == DType::kFloat32)
    return ctx.SetOutput(0, ctx.Emit("sqrt", {x}));
  // ONNX lets the exponent's type differ from the base's; the catalog's power does not.
  const int32_t base_type = OnnxTypeOf(xt.dtype);
  ValueId y =
      ctx.IsHost(1)
          ? ctx.DerivedInput(1, OnnxTypeName(base_type),
                             [base_type](const HostTensor& h) { return HostCast(h, base_type); })
          : ctx.Runtime(1);
  ctx.SetOutput(0, ctx.Emit("power", {x, y}));
}

void ConvertWhere(NodeContext& ctx) {
  if (AllHost(ctx)) {
    ctx.SetOutput(0, HostWhere(ctx.Host(0, ""), ctx.Host(1, ""), ctx.Host(2, "")));
    return;
  }
  ctx.SetOutput(0, ctx.Emit("where", {ctx.Runtime(0), ctx.Runtime(1), ctx.Runtime(2)}));
}

void ConvertCast(NodeContext& ctx) {
  const int32_t to = static_cast<int32_t>(ctx.RequiredIntAttr("to"));
  if (ctx.IsHost(0)) return ctx.SetOutput(0, HostCast(ctx.Host(0, ""), to));
  std::optional<DType> dtype = RuntimeDType(to);
  if (!dtype) {
    ctx.Fail(
        "a cast to {} at run time is not supported (fusetune computes in float32, int32 and "
        "bool)",
        OnnxTypeName(to));
  }
  const ValueId x = ctx.Runtime(0);
  if (ctx.TypeOf(x).dtype == *dtype) return ctx.SetOutput(0, x);
  ctx.SetOutput(0, ctx.Emit("cast", {x}, Attrs({{"dtype", std::string(DTypeName(*dtype))}})));
}

// Clip: bounds from attributes (opset < 11) or optional inputs known at import.
void ConvertClip(NodeContext& ctx) {
  std::optional<double> lo, hi;
  if (ctx.opset() < 11) {
    if (ctx.HasAttr("min")) lo = ctx.FloatAttr("min", 0.0f);
    if (ctx.HasAttr("max")) hi = ctx.FloatAttr("max", 0.0f);
  } else {
    if (ctx.HasInput(1)) lo = ctx.Host(1, "the lower bound").Real(0);
    if (ctx.HasInput(2)) hi = ctx.Host(2, "the upper bound").Real(0);
  }
  ValueId x = ctx.Runtime(0);
  if (lo && hi) {
    return ctx.SetOutput(0, ctx.Emit("clip", {x}, Attrs({{"a_min", *lo}, {"a_max", *hi}})));
  }
  const DType dtype = ctx.TypeOf(x).dtype;
  if (lo) x = ctx.Emit("maximum", {x, ctx.EmitConst(Tensor::Scalar(dtype, *lo))});
  if (hi) x = ctx.Emit("minimum", {x, ctx.EmitConst(Tensor::Scalar(dtype, *hi))});
  ctx.SetOutput(0, x);
}

void ConvertReciprocal(NodeContext& ctx) {
  if (ctx.IsHost(0)) {
    const HostTensor& x = ctx.Host(0, "");
    HostTensor out = HostTensor::Zeros(x.elem_type, x.shape);
    for (int64_t i = 0; i < x.size(); ++i) out.SetReal(i, 1.0 / x.Real(i));
    return ctx.SetOutput(0, std::move(out));
  }
  const ValueId x = ctx.Runtime(0);
  ValueId one = ctx.EmitConst(Tensor::Scalar(ctx.TypeOf(x).dtype, 1.0));
  ctx.SetOutput(0, ctx.Emit("divide", {one, x}));
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Relu(double x) { return x > 0 ? x : 0.0; }
double Neg(double x) { return -x; }
double Abs(double x) { return std::fabs(x); }
double Sqrt(double x) { return std::sqrt(x); }
double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Tanh(double x) { return std::tanh(x); }
double Erf(double x) { return std::erf(x); }

}  // namespace

void AddMathConverters(ConverterTable& t) {
  AddBinary(t, "Add", "add", {std::plus<double>(), std::plus<int64_t>()});
  AddBinary(t, "Sub", "subtract", {std::minus<double>(), std::minus<int64_t>()});
  AddBinary(t, "Mul", "multiply", {std::multiplies<double>(), std::multiplies<int64_t>()});
  AddBinary(t, "Div", "divide", {std::divides<double>(), IntDivide});
  t["Pow"] = ConvertPow;
  t["Where"] = ConvertWhere;
  t["Cast"] = ConvertCast;
  t["Clip"] = ConvertClip;
  t["Reciprocal"] = ConvertReciprocal;

  AddVariadic(t, "Max", "maximum",
              {[](double a, double b) { return std::max(a, b); },
               [](int64_t a, int64_t b) { return std::max(a, b); }});
  AddVariadic(t, "Min", "minimum",
              {[](double a, double b) { return std::min(a, b); },
               [](int64_t a, int64_t b) { return std::min(a, b); }});
  AddVariadic(t, "Sum", "add", {std::plus<double>(), std::plus<int64_t>()});

  AddHostOnlyBinary(t, "Equal",
                    {[](double a, double b) -> double { return a == b; },
                     [](int64_t a, int64_t b) -> int64_t { return a == b; }});
  AddHostOnlyBinary(t, "Less",
                    {[](double a, double b) -> double { return a < b; },
                     [](int64_t a, int64_t b) -> int64_t { return a < b; }});
  AddHostOnlyBinary(t, "Greater",
                    {[](double a, double b) -> double { return a > b; },
                     [](int64_t a, int64_t b) -> int64_t { return a > b; }});
  AddHostOnlyBinary(t, "LessOrEqual",
                    {[](double a, double b) -> double { return a <= b; },
                     [](int64_t a, int64_t b) -> int64_t { return a <= b; }});
  AddHostOnlyBinary(t, "GreaterOrEqual",
                    {[](double a, double b) -> double { return a >= b; },
                     [](int64_t a, int64_t b) -> int64_t { return a >= b; }});

  AddUnary(t, "Neg", "negative", Neg);
  AddUnary(t, "Abs", "abs", Abs);
  AddUnary(t, "Sqrt", "sqrt", Sqrt);
  AddUnary(t, "Exp", "exp", Exp);
  AddUnary(t, "Log", "log", Log);
  AddUnary(t, "Tanh", "tanh", Tanh);
  AddUnary(t, "Erf", "erf", Erf);
  AddUnary(t, "Sigmoid", "sigmoid", Sigmoid);
  AddUnary(t, "Relu", "nn.relu", Relu);
}

}  // namespace fusetune::onnx_import
