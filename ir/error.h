#pragma once
// Errors in user input end the operation with a message that names the problem; internal
// invariant failures are bugs and are reported differently (FT_CHECK).
#include <stdexcept>
#include <string>

namespace fusetune {

// Bad input from a user: text, graph, attributes, limits. `what()` is ready to print.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A violated internal invariant: a bug in fusetune, never caused by user input alone.
[[noreturn]] void InternalError(const char* file, int line, const std::string& message);

}  // namespace fusetune

#define FT_CHECK(cond, msg)                                            \
  do {                                                                 \
    if (!(cond)) ::fusetune::InternalError(__FILE__, __LINE__, (msg)); \
  } while (0)
