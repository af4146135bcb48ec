#pragma once
// Small helpers every table file of db/ shares. Internal to db/.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "db/records.h"

namespace fusetune::db {

// A record's time as given, or now for 0.
inline int64_t OrNow(int64_t t) { return t != 0 ? t : NowMs(); }

// " LIMIT n" for a positive limit, else nothing.
inline std::string LimitClause(int64_t limit) {
  return limit > 0 ? fmt::format(" LIMIT {}", limit) : std::string();
}

}  // namespace fusetune::db
