#pragma once
#include <string>

namespace fusetune::db {

// Where fusetune keeps its database when no --db is given:
//   $FUSETUNE_DB, else $XDG_CACHE_HOME/fusetune/fusetune.db, else ~/.cache/fusetune/fusetune.db
// ($HOME unset too: ./fusetune.db). Empty variables count as unset, as XDG says.
std::string DefaultDbPath();

}  // namespace fusetune::db
