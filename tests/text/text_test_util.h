#pragma once
#include <string>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/text/relay_parser.h"

namespace fusetune::testing {

// The UserError message ParseRelay throws for `text` (file name "bad.relay"), or "" if it parses.
inline std::string ParseError(const std::string& text, const Limits& limits = {}) {
  try {
    ParseRelay(text, "bad.relay", limits);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

inline Graph Parse(const std::string& text) { return ParseRelay(text, "test.relay"); }

}  // namespace fusetune::testing
