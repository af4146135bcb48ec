#pragma once
#include <stdexcept>
#include <string>

namespace fusetune::db {

// A failure of SQLite itself (I/O, busy past the timeout, a violated constraint). Errors caused by
// what a user gave (a path to a foreign file, a bad import line) are UserError instead.
class StoreError : public std::runtime_error {
 public:
  StoreError(const std::string& message, int sqlite_code)
      : std::runtime_error(message), sqlite_code_(sqlite_code) {}
  int sqlite_code() const { return sqlite_code_; }

 private:
  int sqlite_code_;
};

}  // namespace fusetune::db
