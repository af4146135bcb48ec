#pragma once
// Each subcommand registers itself on the root app; its callback returns the process exit code
// through SetExitCode. Exit codes: 0 ok, 1 failure of the work itself, 2 bad input or usage,
// 3 an answer is incomplete (query: regions without a stored plan).
#include <CLI/CLI.hpp>

namespace fusetune::cli {

void RegisterCheckCommand(CLI::App& app);
void RegisterTuneCommand(CLI::App& app);
void RegisterQueryCommand(CLI::App& app);
void RegisterCacheCommand(CLI::App& app);
void RegisterCacheVerifyCommand(CLI::App* cache);  // client/cmd_cache_verify.cc
void RegisterCacheModelCommand(CLI::App* cache);   // client/cmd_cache_model.cc
void RegisterSandboxChildCommand(CLI::App& app);
void RegisterServeCommand(CLI::App& app);
void RegisterWorkerCommand(CLI::App& app);
void RegisterWorkersCommand(CLI::App& app);
void RegisterTasksCommand(CLI::App& app);
void RegisterCancelCommand(CLI::App& app);
void RegisterRunCommand(CLI::App& app);
void RegisterKernelCommand(CLI::App& app);

void SetExitCode(int code);
int ExitCode();

}  // namespace fusetune::cli
