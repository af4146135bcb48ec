#include "ir/version.h"

namespace fusetune {

const char* Version() { return FUSETUNE_VERSION; }

}  // namespace fusetune
