#pragma once
// Positioned errors in source text: every message reads `file:line:col: error: what`.
#include <string>
#include <string_view>

namespace fusetune::text {

// 1-based line and column; columns count bytes (a tab is one column).
struct SourcePos {
  int line = 1;
  int col = 1;
};

// Throws fusetune::UserError("file:line:col: error: what").
[[noreturn]] void ThrowAt(std::string_view file, SourcePos pos, std::string_view what);

}  // namespace fusetune::text
