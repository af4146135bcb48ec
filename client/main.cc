#include <iostream>

#include <CLI/CLI.hpp>

#include "client/commands.h"
#include "client/logging.h"
#include "ir/error.h"
#include "ir/version.h"

namespace fusetune::cli {
namespace {
int g_exit_code = 0;
}
void SetExitCode(int code) { g_exit_code = code; }
int ExitCode() { return g_exit_code; }
}  // namespace fusetune::cli

int main(int argc, char** argv) {
  using namespace fusetune;
  CLI::App app{
      "fusetune: decides which tensor operators to fuse by measuring them on this CPU.\n"
      "GRAPH is Relay text (.relay) or an ONNX model (.onnx)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fusetune ") + Version());
  cli::AddLoggingFlags(app);  // first: subcommands inherit its fall-through of the log flags
  cli::RegisterCheckCommand(app);
  cli::RegisterTuneCommand(app);
  cli::RegisterQueryCommand(app);
  cli::RegisterCacheCommand(app);
  cli::RegisterSandboxChildCommand(app);
  cli::RegisterServeCommand(app);
  cli::RegisterWorkerCommand(app);
  cli::RegisterWorkersCommand(app);
  cli::RegisterTasksCommand(app);
  cli::RegisterCancelCommand(app);
  cli::RegisterRunCommand(app);
  cli::RegisterKernelCommand(app);
  cli::MentionLoggingFlags(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fusetune: " << e.what() << "\n";
    return 1;
  }
  return cli::ExitCode();
}
