#include "client/huge_page_restart.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "worker/codegen_binary.h"

namespace fusetune::cli {

bool WantsHugePageMalloc(std::span<char* const> args, const char* tunables, int64_t min_bytes) {
  if (tunables && std::string_view(tunables).find("glibc.malloc.hugetlb") != std::string::npos)
    return false;
  for (const char* arg : args) {
    const std::string_view path(arg);
    if (!path.ends_with(".onnx")) continue;
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) continue;
    const std::uintmax_t size = std::filesystem::file_size(path, error);
    if (!error && static_cast<int64_t>(size) >= min_bytes) return true;
  }
  return false;
}

void RestartWithHugePageMallocForLargeModels(int argc, char** argv) {
  int64_t min_bytes = kLargeModelBytes;
  if (const char* bound = std::getenv("FUSETUNE_HUGE_PAGE_MODEL_BYTES"))
    min_bytes = std::atoll(bound);
  if (argc < 2 || !WantsHugePageMalloc({argv + 1, static_cast<size_t>(argc - 1)},
                                       std::getenv("GLIBC_TUNABLES"), min_bytes))
    return;
  std::vector<std::string> environment = CodegenEnvironment();
  std::vector<char*> env;
  for (std::string& entry : environment) env.push_back(entry.data());
  env.push_back(nullptr);
  ::execve("/proc/self/exe", argv, env.data());  // returns only when it failed
}

}  // namespace fusetune::cli
