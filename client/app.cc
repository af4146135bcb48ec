#include "client/app.h"

#include <iostream>

#include "client/commands.h"
#include "client/logging.h"
#include "ir/error.h"
#include "ir/version.h"

namespace fusetune::cli {
namespace {
int g_exit_code = 0;
std::vector<std::string> g_command_line;
}  // namespace

void SetExitCode(int code) { g_exit_code = code; }
int ExitCode() { return g_exit_code; }
const std::vector<std::string>& CommandLine() { return g_command_line; }

std::string UserErrorLine(const std::string& message) {
  return message.find(": error: ") == std::string::npos ? "error: " + message : message;
}

int RunCommandLine(int argc, char** argv, const std::function<void(CLI::App&)>& register_commands) {
  g_command_line.assign(argv, argv + argc);
  CLI::App app{
      "fusetune: decides which tensor operators to fuse by measuring them on this CPU.\n"
      "GRAPH is Relay text (.relay) or an ONNX model (.onnx)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fusetune ") + Version());
  AddLoggingFlags(app);  // first: subcommands inherit its fall-through of the log flags
  register_commands(app);
  MentionLoggingFlags(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const UserError& e) {
    std::cerr << UserErrorLine(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fusetune: " << e.what() << "\n";
    return 1;
  }
  return ExitCode();
}

}  // namespace fusetune::cli
