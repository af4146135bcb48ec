#include "worker/codegen_binary.h"

#include <filesystem>
#include <string_view>
#include <system_error>

namespace fusetune {

std::string CodegenBinary() {
  constexpr std::string_view kSuffix = "-codegen";
  std::error_code error;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  // Without /proc (not on Linux in practice) the bare name makes posix_spawn and execv fail with
  // ENOENT, and the caller's message names what it looked for.
  if (error) return "fusetune-codegen";
  // A long-running daemon whose executable was replaced (an upgrade, a rebuild) sees its old file
  // as "PATH (deleted)"; the code generator installed at PATH's place is the one there is.
  constexpr std::string_view kDeleted = " (deleted)";
  if (self.ends_with(kDeleted)) self.resize(self.size() - kDeleted.size());
  if (self.ends_with(kSuffix)) return self;
  return self + std::string(kSuffix);
}

}  // namespace fusetune
