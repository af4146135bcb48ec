// `fusetune sandbox-child`: internal. The process a Sandbox (worker/sandbox.h) starts to run
// measurement jobs, so a crashing kernel takes down only this child; `fusetune-codegen` runs it.
#include "client/codegen_commands.h"
#include "client/commands.h"

namespace fusetune::cli {

void RegisterSandboxChildCommand(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("sandbox-child", "internal: runs measurement jobs for a parent");
  cmd->group("");  // hidden from --help
  cmd->callback([] { SetExitCode(SandboxChild()); });
}

}  // namespace fusetune::cli
