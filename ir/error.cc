#include "ir/error.h"

#include <fmt/format.h>

namespace fusetune {

void InternalError(const char* file, int line, const std::string& message) {
  throw std::logic_error(fmt::format("internal error at {}:{}: {}", file, line, message));
}

}  // namespace fusetune
