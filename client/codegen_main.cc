// `fusetune-codegen`: the commands that compile kernels, with LLVM linked in. Users run
// `fusetune`, which execs this binary (installed beside it) with its own arguments for `run` and
// `kernel`; sandboxes start it as `fusetune-codegen sandbox-child`. Registered by the same code as
// in `fusetune`, so arguments parse alike.
#include <exception>
#include <iostream>

#include "client/app.h"
#include "client/codegen_commands.h"
#include "client/commands.h"
#include "worker/codegen_binary.h"
#include "worker/sandbox_child.h"

namespace fusetune::cli {

int SandboxChild() { return RunSandboxChild(); }

}  // namespace fusetune::cli

int main(int argc, char** argv) {
  using namespace fusetune::cli;
  try {
    fusetune::CheckCodegenCaller();  // before anything: a `fusetune` of another build is refused
  } catch (const std::exception& e) {
    std::cerr << "fusetune: " << e.what() << "\n";
    return 1;
  }
  return RunCommandLine(argc, argv, [](CLI::App& app) {
    RegisterSandboxChildCommand(app);
    RegisterRunCommand(app);
    RegisterKernelCommand(app);
  });
}
