// `fusetune sandbox-child`: internal. The process a Sandbox (worker/sandbox.h) starts to run
// measurement jobs, so a crashing kernel takes down only this child; `fusetune-codegen` runs it.
#include "client/codegen_commands.h"
#include "client/commands.h"
#include "client/logging.h"

namespace fusetune::cli {

void RegisterSandboxChildCommand(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("sandbox-child", "internal: runs measurement jobs for a parent");
  cmd->group("");  // hidden from --help
  // Named "sandbox", so its lines stand apart from the parent's on the stderr they share; level
  // and format are the parent's (client/logging.h).
  cmd->callback([] {
    UseLogger("sandbox");
    SetExitCode(SandboxChild());
  });
}

}  // namespace fusetune::cli
