// `fusetune-codegen`: the commands that compile kernels, with LLVM linked in. Users run
// `fusetune`, which execs this binary (installed beside it) with its own arguments for `run` and
// `kernel`; sandboxes start it as `fusetune-codegen sandbox-child`. Registered by the same code as
// in `fusetune`, so arguments parse alike.
#include "client/app.h"
#include "client/codegen_commands.h"
#include "client/commands.h"
#include "worker/sandbox_child.h"

namespace fusetune::cli {

int SandboxChild() { return RunSandboxChild(); }

}  // namespace fusetune::cli

int main(int argc, char** argv) {
  using namespace fusetune::cli;
  return RunCommandLine(argc, argv, [](CLI::App& app) {
    RegisterSandboxChildCommand(app);
    RegisterRunCommand(app);
    RegisterKernelCommand(app);
  });
}
