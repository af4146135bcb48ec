#include "ir/text/source_error.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune::text {

void ThrowAt(std::string_view file, SourcePos pos, std::string_view what) {
  throw UserError(fmt::format("{}:{}:{}: error: {}", file, pos.line, pos.col, what));
}

}  // namespace fusetune::text
