// Anchor ops: nn.dense, nn.batch_matmul, nn.matmul (OutEWiseFusable, one MatmulLayout each) and
// the composites nn.softmax and nn.layer_norm (Opaque in TVM, row kernels here). The references
// accumulate in double.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/ops/ops.h"

namespace fusetune::ops {
namespace {

DType OutDType(std::string_view op, const TensorType& in, const Attrs& attrs) {
  const std::string& name = attrs.GetString("out_dtype");
  if (name.empty()) return in.dtype;
  std::optional<DType> d = ParseDType(name);
  if (!d) Fail(op, "unknown out_dtype \"{}\"", name);
  return *d;
}

void CheckOperands(std::string_view op, std::span<const TensorType> in) {
  RequireSameDType(op, in);
  RequireNumeric(op, in[0]);
}

// ---- layouts ---------------------------------------------------------------------------------
MatmulLayout DenseLayout(std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType& x = in[0];
  const TensorType& w = in[1];
  if (x.rank() < 1 || w.rank() != 2) {
    Fail("nn.dense", "expects data [.., k] and weight [n, k], got {} and {}", x.ToString(),
         w.ToString());
  }
  MatmulLayout l;
  l.transpose_b = true;
  l.k = x.shape.back();
  l.m = 1;  // leading dims of the data flatten into rows
  for (int a = 0; a + 1 < x.rank(); ++a) l.m *= x.shape[a];
  l.n = w.shape[0];
  if (w.shape[1] != l.k) {
    Fail("nn.dense", "reduction dimensions differ: data {} has k={}, weight {} has k={}",
         x.ToString(), l.k, w.ToString(), w.shape[1]);
  }
  if (!attrs.IsNone("units") && attrs.GetInt("units") != l.n) {
    Fail("nn.dense", "units={} but weight {} has {} rows", attrs.GetInt("units"), w.ToString(),
         l.n);
  }
  return l;
}

MatmulLayout BatchMatmulLayout(std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType& x = in[0];
  const TensorType& y = in[1];
  if (x.rank() != 3 || y.rank() != 3) {
    Fail("nn.batch_matmul", "expects rank-3 operands, got {} and {}", x.ToString(), y.ToString());
  }
  MatmulLayout l;
  l.batched = true;
  l.transpose_a = attrs.GetBool("transpose_a");
  l.transpose_b = attrs.GetBool("transpose_b");
  l.batch = x.shape[0];
  l.m = l.transpose_a ? x.shape[2] : x.shape[1];
  l.k = l.transpose_a ? x.shape[1] : x.shape[2];
  l.n = l.transpose_b ? y.shape[1] : y.shape[2];
  int64_t yk = l.transpose_b ? y.shape[2] : y.shape[1];
  if (y.shape[0] != l.batch) {
    Fail("nn.batch_matmul", "batch dimensions differ: {} and {}", x.ToString(), y.ToString());
  }
  if (yk != l.k) {
    Fail("nn.batch_matmul",
         "reduction dimensions differ: {} has k={}, {} has k={} (transpose_a={}, transpose_b={})",
         x.ToString(), l.k, y.ToString(), yk, l.transpose_a ? "True" : "False",
         l.transpose_b ? "True" : "False");
  }
  return l;
}

MatmulLayout MatmulLayoutOf(std::span<const TensorType> in, const Attrs& attrs) {
  const TensorType& a = in[0];
  const TensorType& b = in[1];
  if (a.rank() != 2 || b.rank() != 2) {
    Fail("nn.matmul", "expects rank-2 operands, got {} and {}", a.ToString(), b.ToString());
  }
  MatmulLayout l;
  l.transpose_a = attrs.GetBool("transpose_a");
  l.transpose_b = attrs.GetBool("transpose_b");
  l.m = l.transpose_a ? a.shape[1] : a.shape[0];
  l.k = l.transpose_a ? a.shape[0] : a.shape[1];
  l.n = l.transpose_b ? b.shape[0] : b.shape[1];
  int64_t bk = l.transpose_b ? b.shape[1] : b.shape[0];
  if (bk != l.k) {
    Fail("nn.matmul", "reduction dimensions differ: {} has k={}, {} has k={}", a.ToString(), l.k,
         b.ToString(), bk);
  }
  if (!attrs.IsNone("units") && attrs.GetInt("units") != l.n) {
    Fail("nn.matmul", "units={} but the output has {} columns", attrs.GetInt("units"), l.n);
  }
  return l;
}

// GCC's -O2 cost model ("very cheap") leaves the inner loop below scalar; the cheap model
// vectorizes it and halves the reference's time on BERT-sized dense layers. The build targets
// baseline x86-64 (SSE2); clones for AVX2+FMA and AVX-512, picked at load time by the CPU, make
// it ~3x faster again where those exist (the reference of every measurement job computes it).
#if defined(__GNUC__) && !defined(__clang__)
#define FT_VECTORIZE                                  \
  __attribute__((optimize("-fvect-cost-model=cheap"), \
                 target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FT_VECTORIZE
#endif

// A kRows x kCols tile of C += A's rows i.. times B's columns j.. over k in [k0, k1): the tile
// lives in registers across the k loop (8 AVX-512 registers), where a row of C streamed through
// memory for every k was bound by its loads and stores at 11 GFLOP/s.
constexpr int64_t kRows = 4, kCols = 16;
using Doubles8 = double __attribute__((vector_size(64)));  // GCC's vector extension: a zmm
[[gnu::always_inline]] inline void MultiplyTile(const double* A, const double* B, double* C,
                                                int64_t n, int64_t k, int64_t k0, int64_t k1,
                                                int64_t i, int64_t j) {
  // Eight named accumulators: GCC keeps an array of them in memory.
  Doubles8 c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {};
  const double *a0 = A + i * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
  for (int64_t kk = k0; kk < k1; ++kk) {
    Doubles8 b0, b1;
    std::memcpy(&b0, B + kk * n + j, sizeof b0);
    std::memcpy(&b1, B + kk * n + j + 8, sizeof b1);
    c00 += a0[kk] * b0;
    c01 += a0[kk] * b1;
    c10 += a1[kk] * b0;
    c11 += a1[kk] * b1;
    c20 += a2[kk] * b0;
    c21 += a2[kk] * b1;
    c30 += a3[kk] * b0;
    c31 += a3[kk] * b1;
  }
  const Doubles8 tile[kRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) C[(i + r) * n + j + c] += tile[r][c / 8][c % 8];
}

// C[m][n] += A[m][k] . B[k][n], blocked over k and j so a block of B stays in cache while every
// row of A streams past it (BERT's dense weights are ~19 MB in double); whole tiles in registers,
// the edges a row at a time.
FT_VECTORIZE void MultiplyAccumulate(const double* A, const double* B, double* C, int64_t m,
                                     int64_t n, int64_t k) {
  constexpr int64_t kBlockK = 256, kBlockN = 128;
  for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
    const int64_t k1 = std::min(k, k0 + kBlockK);
    for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
      const int64_t j1 = std::min(n, j0 + kBlockN);
      const int64_t tiled_j = j0 + (j1 - j0) / kCols * kCols, tiled_i = m / kRows * kRows;
      for (int64_t i = 0; i < tiled_i; i += kRows)
        for (int64_t j = j0; j < tiled_j; j += kCols) MultiplyTile(A, B, C, n, k, k0, k1, i, j);
      for (int64_t i = 0; i < m; ++i) {
        const int64_t from = i < tiled_i ? tiled_j : j0;  // the right edge, or whole edge rows
        if (from == j1) continue;
        double* __restrict crow = C + i * n;
        const double* arow = A + i * k;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const double av = arow[kk];
          const double* __restrict brow = B + kk * n;
          for (int64_t j = from; j < j1; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

// dst[c][r] = get(r * cols + c) for a rows x cols matrix, in 32x32 tiles so both sides stay in
// cache.
template <typename Get>
void TransposeInto(Get get, int64_t rows, int64_t cols, double* dst) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c)  // writes contiguous, reads strided within the tile
        for (int64_t r = r0; r < r1; ++r) dst[c * rows + r] = get(r * cols + c);
    }
  }
}

// A rows x cols matrix of `src` at `offset` into dst, as [rows][cols] or transposed ([cols][rows]),
// with Tensor::Get's values: read as floats where it holds them (Get's dispatch per element cost
// more than the product of a seed-sized batch_matmul).
void MatrixInto(const Tensor& src, int64_t offset, int64_t rows, int64_t cols, bool transpose,
                double* dst) {
  if (!transpose) return src.GetStrided(offset, 1, rows * cols, dst);
  if (src.dtype() == DType::kFloat32) {
    const float* p = src.as<float>() + offset;
    TransposeInto([p](int64_t x) { return static_cast<double>(p[x]); }, rows, cols, dst);
  } else {
    TransposeInto([&src, offset](int64_t x) { return src.Get(offset + x); }, rows, cols, dst);
  }
}

// out[b, i, j] = sum_k A(b, i, k) * B(b, j, k), in double: both operands are copied into [m][k]
// and [k][n] per batch, then multiplied.
Tensor EvalMatmul(const MatmulLayout& l, const Tensor& a, const Tensor& b, const TensorType& out) {
  const int64_t m = l.m, n = l.n, k = l.k;
  // Kept by the thread: a dense weight is 19 MB in double, and a fresh buffer per call cost more
  // in page faults and zeroing than the product did.
  thread_local std::vector<double> A, B, C;
  for (auto [buffer, size] : {std::pair{&A, m * k}, {&B, k * n}, {&C, m * n}})
    if (static_cast<int64_t>(buffer->size()) < size) buffer->resize(size);
  Tensor result(out);
  for (int64_t bb = 0; bb < l.batch; ++bb) {
    const int64_t a0 = bb * m * k, b0 = bb * n * k;
    if (l.transpose_a) {
      MatrixInto(a, a0, k, m, true, A.data());  // stored [k][m]
    } else {
      MatrixInto(a, a0, m, k, false, A.data());
    }
    if (l.transpose_b) {
      MatrixInto(b, b0, n, k, true, B.data());  // stored [n][k]
    } else {
      MatrixInto(b, b0, k, n, false, B.data());
    }
    std::fill(C.begin(), C.begin() + m * n, 0.0);
    MultiplyAccumulate(A.data(), B.data(), C.data(), m, n, k);
    result.SetRange(bb * m * n, m * n, C.data());
  }
  return result;
}

void AddMatmulOp(OpList& ops, std::string name, std::vector<AttrSpec> attrs, MatmulFn layout,
                 std::function<Shape(std::span<const TensorType>, const MatmulLayout&)> out_shape) {
  auto def = std::make_unique<OpDef>();
  def->name = name;
  def->min_inputs = def->max_inputs = 2;
  def->attrs = std::move(attrs);
  def->pattern = OpPattern::kOutEWiseFusable;
  def->kind = OpKind::kMatmul;
  def->matmul = layout;
  def->infer = [name, layout, out_shape](std::span<const TensorType> in, const Attrs& attrs) {
    CheckOperands(name, in);
    MatmulLayout l = layout(in, attrs);
    return TensorType{OutDType(name, in[0], attrs), out_shape(in, l)};
  };
  def->eval = [layout](std::span<const Tensor* const> in, const TensorType& out,
                       const Attrs& attrs) {
    std::vector<TensorType> types{in[0]->type(), in[1]->type()};
    return EvalMatmul(layout(types, attrs), *in[0], *in[1], out);
  };
  def->flops = [layout](std::span<const TensorType> in, const TensorType&, const Attrs& attrs) {
    MatmulLayout l = layout(in, attrs);
    return 2.0 * static_cast<double>(l.batch) * static_cast<double>(l.m) *
           static_cast<double>(l.n) * static_cast<double>(l.k);
  };
  // `units`, when given, is the output's last size.
  def->size_attrs = [](std::span<const TensorType>, const TensorType& out, const Attrs& attrs) {
    std::vector<SizeAttr> sizes;
    if (attrs.Has("units") && !attrs.IsNone("units") && out.rank() > 0)
      sizes.push_back({"units", -1, -1, out.rank() - 1});
    return sizes;
  };
  ops.push_back(std::move(def));
}

// ---- composites ------------------------------------------------------------------------------
// A tensor viewed as [outer, len, inner] around `axis`: rows run along `axis` with stride inner.
struct RowView {
  int64_t outer = 1, len = 1, inner = 1;
  explicit RowView(const Shape& s, int axis) {
    for (int a = 0; a < static_cast<int>(s.size()); ++a) {
      if (a < axis)
        outer *= s[a];
      else if (a == axis)
        len = s[a];
      else
        inner *= s[a];
    }
  }
};

Tensor EvalSoftmax(const Tensor& x, const TensorType& out, const Attrs& attrs) {
  RowView v(x.shape(), NormalizeAxis("nn.softmax", attrs.GetInt("axis"), x.type().rank()));
  Tensor result(out);
  std::vector<double> e(v.len);
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = o * v.len * v.inner + i;
      double hi = -std::numeric_limits<double>::infinity();
      for (int64_t l = 0; l < v.len; ++l) hi = std::max(hi, x.Get(base + l * v.inner));
      double sum = 0.0;
      for (int64_t l = 0; l < v.len; ++l) sum += e[l] = std::exp(x.Get(base + l * v.inner) - hi);
      for (int64_t l = 0; l < v.len; ++l) result.Set(base + l * v.inner, e[l] / sum);
    }
  }
  return result;
}

Tensor EvalLayerNorm(std::span<const Tensor* const> in, const TensorType& out, const Attrs& attrs) {
  const Tensor& x = *in[0];
  const Tensor& gamma = *in[1];
  const Tensor& beta = *in[2];
  RowView v(x.shape(), NormalizeAxis("nn.layer_norm", attrs.GetInt("axis"), x.type().rank()));
  const double eps = attrs.GetFloat("epsilon");
  const bool center = attrs.GetBool("center"), scale = attrs.GetBool("scale");
  Tensor result(out);
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = o * v.len * v.inner + i;
      double sum = 0.0;
      for (int64_t l = 0; l < v.len; ++l) sum += x.Get(base + l * v.inner);
      const double mean = sum / static_cast<double>(v.len);
      double sq = 0.0;
      for (int64_t l = 0; l < v.len; ++l) {
        double d = x.Get(base + l * v.inner) - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(v.len) + eps);
      for (int64_t l = 0; l < v.len; ++l) {
        double y = (x.Get(base + l * v.inner) - mean) * inv;
        if (scale) y *= gamma.Get(l);
        if (center) y += beta.Get(l);
        result.Set(base + l * v.inner, y);
      }
    }
  }
  return result;
}

void AddSoftmax(OpList& ops) {
  auto def = std::make_unique<OpDef>();
  def->name = "nn.softmax";
  def->attrs = {{"axis", AttrKind::kInt, int64_t{-1}}};
  def->pattern = OpPattern::kOpaque;
  def->kind = OpKind::kComposite;
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    RequireFloat("nn.softmax", in[0]);
    NormalizeAxis("nn.softmax", attrs.GetInt("axis"), in[0].rank());
    return in[0];
  };
  def->eval = [](std::span<const Tensor* const> in, const TensorType& out, const Attrs& attrs) {
    return EvalSoftmax(*in[0], out, attrs);
  };
  // max, subtract, exp, add, divide per element.
  def->flops = [](std::span<const TensorType> in, const TensorType&, const Attrs&) {
    return 5.0 * static_cast<double>(in[0].NumElements());
  };
  ops.push_back(std::move(def));
}

void AddLayerNorm(OpList& ops) {
  auto def = std::make_unique<OpDef>();
  def->name = "nn.layer_norm";
  def->min_inputs = def->max_inputs = 3;
  def->attrs = {{"axis", AttrKind::kInt, int64_t{-1}},
                {"epsilon", AttrKind::kFloat, 1e-5},
                {"center", AttrKind::kBool, true},
                {"scale", AttrKind::kBool, true}};
  def->pattern = OpPattern::kOpaque;
  def->kind = OpKind::kComposite;
  def->infer = [](std::span<const TensorType> in, const Attrs& attrs) {
    RequireFloat("nn.layer_norm", in[0]);
    RequireSameDType("nn.layer_norm", in);
    int axis = NormalizeAxis("nn.layer_norm", attrs.GetInt("axis"), in[0].rank());
    for (int i = 1; i <= 2; ++i) {
      if (in[i].rank() != 1 || in[i].shape[0] != in[0].shape[axis]) {
        Fail("nn.layer_norm", "{} {} must have shape ({},) to match axis {} of {}",
             i == 1 ? "gamma" : "beta", in[i].ToString(), in[0].shape[axis], axis,
             in[0].ToString());
      }
    }
    return in[0];
  };
  def->eval = [](std::span<const Tensor* const> in, const TensorType& out, const Attrs& attrs) {
    return EvalLayerNorm(in, out, attrs);
  };
  // mean (add), variance (sub, mul, add), normalise (sub, mul), scale (mul), shift (add).
  def->flops = [](std::span<const TensorType> in, const TensorType&, const Attrs&) {
    return 8.0 * static_cast<double>(in[0].NumElements());
  };
  ops.push_back(std::move(def));
}

}  // namespace

void AddNNOps(OpList& ops) {
  AddMatmulOp(ops, "nn.dense",
              {{"units", AttrKind::kOptionalInt, NoneAttr{}},
               {"out_dtype", AttrKind::kString, std::string()}},
              DenseLayout, [](std::span<const TensorType> in, const MatmulLayout& l) {
                Shape s(in[0].shape.begin(), in[0].shape.end() - 1);
                s.push_back(l.n);
                return s;
              });
  AddMatmulOp(ops, "nn.batch_matmul",
              {{"out_dtype", AttrKind::kString, std::string()},
               {"transpose_a", AttrKind::kBool, false},
               {"transpose_b", AttrKind::kBool, true}},
              BatchMatmulLayout, [](std::span<const TensorType>, const MatmulLayout& l) {
                return Shape{l.batch, l.m, l.n};
              });
  AddMatmulOp(ops, "nn.matmul",
              {{"units", AttrKind::kOptionalInt, NoneAttr{}},
               {"out_dtype", AttrKind::kString, std::string()},
               {"transpose_a", AttrKind::kBool, false},
               {"transpose_b", AttrKind::kBool, false}},
              MatmulLayoutOf, [](std::span<const TensorType>, const MatmulLayout& l) {
                return Shape{l.m, l.n};
              });
  AddSoftmax(ops);
  AddLayerNorm(ops);
}

}  // namespace fusetune::ops
