#pragma once
// How every `fusetune` subcommand logs: spdlog's default logger writes to stderr (stdout carries
// the commands' answers), at the level of `--log-level` and as coloured text or, with
// `--log-format json`, one JSON object per line:
//   {"ts":"2026-11-30T00:53:52.123Z","level":"info","logger":"serve","msg":"...","thread":123}
// The two flags are defined on the root command and fall through from every subcommand, so
// `fusetune serve --log-format json` and `fusetune --log-format json serve` both work. The choice
// is also put in FUSETUNE_LOG_LEVEL and FUSETUNE_LOG_FORMAT, which set the defaults, so a process
// fusetune starts (a sandbox child) logs alike.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace spdlog {
class formatter;
}

namespace fusetune::cli {

// Adds --log-level and --log-format to `app` (the root); bad values exit 2 naming the allowed
// ones. Installs a stderr logger named "fusetune" once the command line is parsed, before any
// subcommand runs.
void AddLoggingFlags(CLI::App& app);

// Notes the root's log flags in the help of every subcommand registered so far (CLI11 lists
// only a command's own options there).
void MentionLoggingFlags(CLI::App& app);

// Replaces the default logger with one named `name` (e.g. "serve", "worker"), keeping the level
// and format chosen on the command line.
void UseLogger(const std::string& name);

// The JSON-lines formatter (exposed for tests).
std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter();

}  // namespace fusetune::cli
