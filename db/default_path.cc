#include "db/default_path.h"

#include <cstdlib>

namespace fusetune::db {
namespace {

const char* NonEmptyEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

std::string DefaultDbPath() {
  if (const char* path = NonEmptyEnv("FUSETUNE_DB")) return path;
  if (const char* cache = NonEmptyEnv("XDG_CACHE_HOME")) {
    return std::string(cache) + "/fusetune/fusetune.db";
  }
  if (const char* home = NonEmptyEnv("HOME"))
    return std::string(home) + "/.cache/fusetune/fusetune.db";
  return "fusetune.db";
}

}  // namespace fusetune::db
