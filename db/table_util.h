#pragma once
// Small helpers every table file of db/ shares. Internal to db/.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "db/records.h"

namespace fusetune::db {

// A record's time as given, or now for 0.
inline int64_t OrNow(int64_t t) { return t != 0 ? t : NowMs(); }

// A filter's target, bound as ?2: '' matches every target; else the whole fingerprint, or only its
// CPU name (the middle field: what `cache ls` shows, with no ';' in it). A macro so the WHERE
// clauses that share it stay string literals.
#define FUSETUNE_SQL_TARGET_MATCHES_P2                              \
  "(?2 = '' OR target_fingerprint = ?2 OR (instr(?2, ';') = 0 AND " \
  "instr(target_fingerprint, ';' || ?2 || ';') > 0))"

// " LIMIT n" for a positive limit, else nothing.
inline std::string LimitClause(int64_t limit) {
  return limit > 0 ? fmt::format(" LIMIT {}", limit) : std::string();
}

}  // namespace fusetune::db
