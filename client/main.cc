// `fusetune`: every subcommand. It links no code generator (LLVM's static constructors alone
// cost every start ~23 ms; issue 14: `query` answers in <= 50 ms): `run`, `kernel` and
// `sandbox-child` exec `fusetune-codegen` (client/codegen_forward.cc), and measurement jobs run in
// sandbox children of that binary (worker/sandbox.h).
#include "client/app.h"
#include "client/commands.h"
#include "client/huge_page_restart.h"

int main(int argc, char** argv) {
  using namespace fusetune::cli;
  RestartWithHugePageMallocForLargeModels(argc, argv);
  return RunCommandLine(argc, argv, [](CLI::App& app) {
    RegisterCheckCommand(app);
    RegisterTuneCommand(app);
    RegisterQueryCommand(app);
    RegisterCacheCommand(app);
    RegisterSandboxChildCommand(app);
    RegisterServeCommand(app);
    RegisterWorkerCommand(app);
    RegisterWorkersCommand(app);
    RegisterTasksCommand(app);
    RegisterCancelCommand(app);
    RegisterRunCommand(app);
    RegisterKernelCommand(app);
  });
}
