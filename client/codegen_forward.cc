// `fusetune`'s side of the commands that compile kernels (client/codegen_commands.h): once this
// process has parsed and accepted the arguments, it becomes `fusetune-codegen` with the same ones
// (execve: same process id, standard streams and exit code). `fusetune-codegen` has LLVM linked in
// and pays its start-up; this binary does not, so `query`, `check`, `cache` and the rest start
// without it. It is told this build's id, and refuses to serve a `fusetune` of another build
// (worker/codegen_binary.h).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "client/app.h"
#include "client/codegen_commands.h"
#include "worker/codegen_binary.h"

namespace fusetune::cli {
namespace {

[[noreturn]] void ExecCodegen() {
  const std::string binary = CodegenBinary();
  std::vector<char*> argv;
  for (const std::string& arg : CommandLine()) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> environment = CodegenCallerEnvironment();
  std::vector<char*> envp;
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  ::execve(binary.c_str(), argv.data(), envp.data());
  throw std::runtime_error(fmt::format(
      "cannot start {}: {} (it does this command's code generation, and is installed beside "
      "fusetune)",
      binary, std::strerror(errno)));
}

}  // namespace

void RunGraph(const RunOptions&) { ExecCodegen(); }
void ShowKernel(const KernelOptions&) { ExecCodegen(); }
int SandboxChild() { ExecCodegen(); }

}  // namespace fusetune::cli
