#pragma once
// Relay text -> Graph. Accepts the forms TVM prints and people write:
//
//   fn (%x: Tensor[(12, 256, 64), float32], %m: float32) { %0 = exp(%x); multiply(%0, %m) }
//   #[version = "0.0.5"]
//   def @main(%x: Tensor[(1,), float32]) -> Tensor[(1,), float32] { let %y = exp(%x); %y }
//
// Bindings `%name = expr;` (any name) and `let %name = expr;`; nested calls as arguments (each
// becomes a node); scalar literals as arguments (0.5f / 1e-12f / 3f -> float32, 2 -> int32,
// True -> bool); attributes `k=v` after the positional arguments; tuples `(%a, %b)` as the result
// or as the argument of tuple-taking ops (concatenate); `/* ty=T */` after an expression and
// `-> T` after the parameters are checked against type inference.
//
// Unnamed nodes (nested calls, an unbound result) take the smallest number that no `%name` in the
// text spells, counting up, so `%0 = a(..); %1 = b(..); c(..)` names the last node %2.
//
// Dynamic dimensions (ir/dims.h): a parameter's type may leave sizes open, as `?` (or `Any`), which
// TVM prints for Relay's Any, or as a name (Tensor[(seq, 768), float32]), one dimension wherever
// it appears. `dims` sizes them; without it an open size is an error. In annotations and the
// return type, `?` matches any size and a name must be one the parameters use.
//
// Errors throw UserError reading `file:line:col: error: what`.
#include <string>
#include <string_view>

#include "ir/dims.h"
#include "ir/graph.h"

namespace fusetune {

Graph ParseRelay(std::string_view text, const std::string& file_name, const Limits& limits = {},
                 const DimResolver* dims = nullptr);

}  // namespace fusetune
