#pragma once
// Integer index expressions over the output coordinates of an op: how an injective or broadcast
// op reads each input at a given output position (an index map). Defined once per op in the
// catalog; the interpreter evaluates them, the code generator lowers them into address arithmetic.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fusetune {

enum class IndexOp { kConst, kVar, kAdd, kMul, kFloorDiv, kMod };

struct IndexNode;
using IndexExpr = std::shared_ptr<const IndexNode>;

struct IndexNode {
  IndexOp op;
  int64_t value = 0;  // kConst
  int var = -1;       // kVar: output axis number
  IndexExpr a, b;
};

namespace ix {
IndexExpr Const(int64_t v);
IndexExpr Var(int axis);
// These fold constants and identities (x+0, x*1, x*0, x/1, x%1) so maps stay small.
IndexExpr Add(IndexExpr a, IndexExpr b);
IndexExpr Mul(IndexExpr a, IndexExpr b);
IndexExpr FloorDiv(IndexExpr a, IndexExpr b);
IndexExpr Mod(IndexExpr a, IndexExpr b);
// Replace Var(k) with vars[k]: composes index maps when a producer is inlined.
IndexExpr Substitute(const IndexExpr& e, std::span<const IndexExpr> vars);
}  // namespace ix

int64_t EvalIndex(const IndexExpr& e, std::span<const int64_t> coords);
std::string FormatIndex(const IndexExpr& e);

// Reads of one input at an output position: one index expression per input dimension.
struct InputAccess {
  std::vector<IndexExpr> index;
};

// An op's index map. For concatenate-like ops, `select_axis` >= 0 and input i is read only where
// output[select_axis] lies in [select_begin[i], select_begin[i+1]) (the last bound is the extent).
struct AccessMap {
  std::vector<InputAccess> inputs;
  int select_axis = -1;
  std::vector<int64_t> select_begin;
};

}  // namespace fusetune
