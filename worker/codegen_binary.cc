#include "worker/codegen_binary.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

extern char** environ;

namespace fusetune {
namespace {

// The variables `fusetune` passes to `fusetune-codegen` (CodegenCallerEnvironment).
constexpr const char* kCallerBuildId = "FUSETUNE_CALLER_BUILD_ID";
constexpr const char* kCaller = "FUSETUNE_CALLER";

// This process's executable, or "" without /proc.
std::string SelfPath() {
  std::error_code error;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (error) return "";
  // A long-running daemon whose executable was replaced (an upgrade, a rebuild) sees its old file
  // as "PATH (deleted)"; the code generator installed at PATH's place is the one there is.
  constexpr std::string_view kDeleted = " (deleted)";
  if (self.ends_with(kDeleted)) self.resize(self.size() - kDeleted.size());
  return self;
}

}  // namespace

std::string CodegenBinary() {
  constexpr std::string_view kSuffix = "-codegen";
  std::string self = SelfPath();
  // Without /proc (not on Linux in practice) the bare name makes posix_spawn and execv fail with
  // ENOENT, and the caller's message names what it looked for.
  if (self.empty()) return "fusetune-codegen";
  if (self.ends_with(kSuffix)) return self;
  return self + std::string(kSuffix);
}

std::string_view BuildId() {
  // After the tag's colon (not a copy of the tag here: a test finds the one in the executable).
  const std::string_view tagged(kBuildIdTagged);
  return tagged.substr(tagged.find(':') + 1);
}

std::vector<std::string> CodegenEnvironment() {
  constexpr std::string_view kTunables = "GLIBC_TUNABLES=";
  std::vector<std::string> env;
  std::string tunables = fmt::format("{}{}", kTunables, kHugePageMalloc);
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with(kTunables)) {
      env.emplace_back(entry);
    } else if (entry.size() > kTunables.size()) {
      tunables += ":";
      tunables += entry.substr(kTunables.size());
    }
  }
  env.push_back(std::move(tunables));
  return env;
}

std::vector<std::string> CodegenCallerEnvironment() {
  std::vector<std::string> env = CodegenEnvironment();
  std::erase_if(env, [](const std::string& entry) {
    return entry.starts_with(std::string(kCallerBuildId) + "=") ||
           entry.starts_with(std::string(kCaller) + "=");
  });
  env.push_back(fmt::format("{}={}", kCallerBuildId, BuildId()));
  env.push_back(fmt::format("{}={}", kCaller, SelfPath()));
  return env;
}

void CheckCodegenCaller() {
  const char* id = std::getenv(kCallerBuildId);
  const char* path = std::getenv(kCaller);
  const std::string caller_id = id ? id : "", caller = path && *path ? path : "fusetune";
  ::unsetenv(kCallerBuildId);
  ::unsetenv(kCaller);
  if (!id || caller_id == BuildId()) return;
  const std::string self = SelfPath().empty() ? "fusetune-codegen" : SelfPath();
  throw std::runtime_error(fmt::format(
      "{} and {} are from different builds (build ids {} and {}); fusetune execs {} for `run` "
      "and `kernel`, so the two must be built and installed together. Rebuild both (`ninja -C "
      "BUILD_DIR fusetune` builds both), or put the fusetune-codegen of {}'s own build beside "
      "it.",
      caller, self, caller_id, BuildId(), self, caller));
}

}  // namespace fusetune
