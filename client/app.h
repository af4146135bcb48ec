#pragma once
// The root of the command line, the same for both executables (worker/codegen_binary.h):
// `fusetune`, which registers every subcommand, and `fusetune-codegen`, which registers only
// those that compile kernels and which `fusetune` execs for them with its own arguments. Both parse
// alike, so a command reaches `fusetune-codegen` only once `fusetune` has accepted its arguments.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fusetune::cli {

// Parses argv with the subcommands `register_commands` adds, runs the chosen one and returns the
// process exit code: the command's (SetExitCode), 2 for bad usage or input, 1 for other failures.
int RunCommandLine(int argc, char** argv, const std::function<void(CLI::App&)>& register_commands);

// What a user error prints on stderr: "error: MESSAGE", or MESSAGE as it is when it already
// reads "FILE:LINE:COL: error: ...".
std::string UserErrorLine(const std::string& message);

// The arguments of this process, as main received them.
const std::vector<std::string>& CommandLine();

}  // namespace fusetune::cli
