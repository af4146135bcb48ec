#include "worker/codegen/templates/matmul_norm.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <memory>
#include <optional>
#include <vector>

#include "ir/error.h"
#include "ir/group_expr.h"
#include "worker/codegen/scalar_lowering.h"
#include "worker/codegen/templates/matmul_leaves.h"

namespace fusetune::codegen {
namespace {

using llvm::Value;

constexpr int kLanes = 16;

class NormalizedRows {
 public:
  NormalizedRows(const Graph& graph, const FusedGroup& group, const BufferMap& buffers,
                 const MatmulLayout& layout)
      : graph_(graph), buffers_(buffers), layout_(layout) {
    const fusetune::Value& norm = graph.value(group.norm);
    shape_ = norm.type.shape;
    k_ = shape_.back();
    epsilon_ = norm.attrs.GetFloat("epsilon");
    InlineOptions options;
    options.stop_at_anchor = false;
    x_ = InlineValue(graph, group, norm.inputs[0], IdentityCoords(static_cast<int>(shape_.size())),
                     options);
    if (norm.attrs.GetBool("scale"))
      gamma_ = InlineValue(graph, group, norm.inputs[1], IdentityCoords(1), options);
    if (norm.attrs.GetBool("center"))
      beta_ = InlineValue(graph, group, norm.inputs[2], IdentityCoords(1), options);
  }

  void Pack(MatmulBuilder& b, Value* buffers, Value* bi, Value* m0, Value* m_end, Value* k0,
            Value* k_count, int64_t kc, Value* out) const {
    auto* f32 = b.getFloatTy();
    auto* vec = llvm::FixedVectorType::get(f32, kLanes);
    Value* zero = llvm::Constant::getNullValue(vec);
    // Loop-carried sums live in allocas of the entry block (SROA makes them registers).
    llvm::IRBuilder<> entry(&b.GetInsertBlock()->getParent()->getEntryBlock(),
                            b.GetInsertBlock()->getParent()->getEntryBlock().begin());
    Value* acc = entry.CreateAlloca(vec, nullptr, "norm_acc");
    EmitCountedLoop(b, m0, m_end, 1, "norm_m", [&](MatmulBuilder& b, Value* m) {
      std::vector<Value*> coords = RowCoords(b, bi, m);
      auto sum_over_row = [&](const std::function<Value*(MatmulBuilder&, Value*)>& term) {
        b.CreateStore(zero, acc);
        EmitCountedLoop(b, b.getInt64(0), b.getInt64(k_), kLanes, "norm_k",
                        [&](MatmulBuilder& b, Value* k) {
                          Value* mask = LanesBelow(b, k, b.getInt64(k_));
                          Value* t = b.CreateSelect(mask, term(b, k), zero);
                          b.CreateStore(b.CreateFAdd(b.CreateLoad(vec, acc), t), acc);
                        });
        return b.CreateFAddReduce(llvm::ConstantFP::get(f32, 0.0), b.CreateLoad(vec, acc));
      };
      auto x = [&](MatmulBuilder& b, Value* k) {
        return Row(b, buffers, x_, coords, k, LanesBelow(b, k, b.getInt64(k_)));
      };
      Value* inv_k = llvm::ConstantFP::get(f32, 1.0 / static_cast<double>(k_));
      Value* mean = b.CreateFMul(sum_over_row(x), inv_k, "mean");
      Value* mean_v = Splat(b, mean, kLanes);
      Value* var = b.CreateFMul(sum_over_row([&](MatmulBuilder& b, Value* k) {
                                  Value* d = b.CreateFSub(x(b, k), mean_v);
                                  return b.CreateFMul(d, d);
                                }),
                                inv_k, "var");
      Value* sd = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                         b.CreateFAdd(var, llvm::ConstantFP::get(f32, epsilon_)));
      Value* inv_v = Splat(b, b.CreateFDiv(llvm::ConstantFP::get(f32, 1.0), sd), kLanes);
      Value* dst = b.CreateInBoundsGEP(f32, out, b.CreateMul(b.CreateSub(m, m0), b.getInt64(kc)));
      EmitCountedLoop(
          b, b.getInt64(0), k_count, kLanes, "norm_pack", [&](MatmulBuilder& b, Value* kk) {
            Value* k = b.CreateAdd(k0, kk);
            Value* mask = LanesBelow(b, kk, k_count);
            Value* y =
                b.CreateFMul(b.CreateFSub(Row(b, buffers, x_, coords, k, mask), mean_v), inv_v);
            std::vector<Value*> kc_coords{nullptr};
            if (gamma_) y = b.CreateFMul(y, Row(b, buffers, *gamma_, kc_coords, k, mask));
            if (beta_) y = b.CreateFAdd(y, Row(b, buffers, *beta_, kc_coords, k, mask));
            b.CreateMaskedStore(y, b.CreateInBoundsGEP(f32, dst, kk), llvm::Align(4), mask);
          });
    });
  }

 private:
  // The coordinates of row (bi, m) in the norm's shape, the last (k) left to the lanes.
  std::vector<Value*> RowCoords(MatmulBuilder& b, Value* bi, Value* m) const {
    std::vector<Value*> coords;
    if (layout_.batched) coords.push_back(bi);
    // dense flattens the leading dims into m
    const size_t first = coords.size(), n_rows = shape_.size() - first - 1;
    std::vector<Value*> rows(n_rows);
    Value* rest = m;
    for (size_t d = n_rows; d-- > 0;) {
      if (d == 0) {
        rows[d] = rest;
      } else {
        rows[d] = b.CreateURem(rest, b.getInt64(shape_[first + d]));
        rest = b.CreateUDiv(rest, b.getInt64(shape_[first + d]));
      }
    }
    coords.insert(coords.end(), rows.begin(), rows.end());
    coords.push_back(nullptr);
    FT_CHECK(coords.size() == shape_.size(), "folded norm coordinates do not match its rank");
    return coords;
  }

  // 16 lanes of `e` at `coords`, the last coordinate k + lane; lanes off `mask` are not read.
  Value* Row(MatmulBuilder& b, Value* buffers, const InlinedExpr& e,
             const std::vector<Value*>& coords, Value* k, Value* mask) const {
    Value* x = LowerLeaves(b, graph_, buffers_, buffers, e,
                           [&](Value* base, const ExprLeaf& leaf, const Shape& shape) {
                             return LoadLeafRow(b, base, leaf, shape, coords, k, mask);
                           });
    return Splat(b, ConvertTo(b, x, DType::kFloat32), kLanes);
  }

  const Graph& graph_;
  const BufferMap& buffers_;
  MatmulLayout layout_;
  Shape shape_;
  int64_t k_ = 0;
  double epsilon_ = 0;
  InlinedExpr x_;
  std::optional<InlinedExpr> gamma_, beta_;
};

}  // namespace

PackAFn NormalizedRowsPacker(const Graph& graph, const FusedGroup& group, const BufferMap& buffers,
                             const MatmulLayout& layout) {
  FT_CHECK(group.norm >= 0, "not a group with a folded layer norm");
  auto rows = std::make_shared<NormalizedRows>(graph, group, buffers, layout);
  return [rows](MatmulBuilder& b, Value* buffers, Value* bi, Value* m0, Value* m_end, Value* k0,
                Value* k_count, int64_t kc,
                Value* out) { rows->Pack(b, buffers, bi, m0, m_end, k0, k_count, kc, out); };
}

}  // namespace fusetune::codegen
