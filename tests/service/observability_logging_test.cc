// Logging: `--log-format json` gives one JSON object per stderr line (ts, level, logger, msg), with
// any message text escaped correctly; `--log-level` filters; bad values exit 2 naming the allowed
// ones. The flags work after any subcommand's name (and before it).
#include <csignal>
#include <regex>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "client/logging.h"
#include "observability_util.h"

namespace fusetune::testing {
namespace {

using nlohmann::json;

const std::regex kIsoUtc(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// Every line parses as an object with the four fields; returns them.
std::vector<json> JsonLines(const std::string& text, const std::string& logger) {
  std::vector<json> out;
  for (const std::string& line : Lines(text)) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << "not a JSON object: " << line;
    if (!j.is_object()) continue;
    EXPECT_TRUE(std::regex_match(j.value("ts", ""), kIsoUtc)) << line;
    EXPECT_TRUE(j["level"].is_string()) << line;
    EXPECT_EQ(j.value("logger", ""), logger) << line;
    EXPECT_TRUE(j["msg"].is_string()) << line;
    out.push_back(std::move(j));
  }
  return out;
}

TEST(Logging, JsonFormatterEscapesAnyMessage) {
  std::ostringstream sink_out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(sink_out);
  sink->set_formatter(cli::MakeJsonLogFormatter());
  spdlog::logger logger("unit", sink);
  logger.set_level(spdlog::level::trace);
  const std::string tricky = "say \"hi\"\n\tback\\slash \x01 </script> {\"x\":1} µs";
  logger.warn("{}", tricky);
  logger.info("plain");
  logger.error("bad bytes: \xff\xfe end");
  std::vector<std::string> lines = Lines(sink_out.str());
  ASSERT_EQ(lines.size(), 3u) << sink_out.str();
  json first = json::parse(lines[0]);
  EXPECT_EQ(first["msg"], tricky);
  EXPECT_EQ(first["level"], "warn");
  EXPECT_EQ(first["logger"], "unit");
  EXPECT_TRUE(std::regex_match(first["ts"].get<std::string>(), kIsoUtc));
  EXPECT_EQ(json::parse(lines[1])["level"], "info");
  json third = json::parse(lines[2]);  // invalid UTF-8 is replaced, the line stays JSON
  EXPECT_EQ(third["level"], "error");
  EXPECT_EQ(third["msg"], "bad bytes: \xEF\xBF\xBD\xEF\xBF\xBD end");
}

TEST(Logging, ServeAndWorkerWriteJsonLines) {
  TestDir dir;
  ServerProcess server(dir, dir.File("log.db"), {"--log-format", "json"});
  Process worker({"worker", "--server", server.address(), "--synthetic", "--id", "json-w",
                  "--log-format", "json"},
                 dir.File("w"));
  ASSERT_TRUE(Eventually(
      [&] { return server.process().Err().find("json-w registered") != std::string::npos; },
      std::chrono::seconds(20)))
      << server.process().Err();
  server.process().Kill(SIGTERM);
  ASSERT_EQ(server.process().ExitCode(std::chrono::seconds(20)), 0) << server.process().Err();

  std::vector<json> serve_lines = JsonLines(server.process().Err(), "serve");
  ASSERT_GE(serve_lines.size(), 2u) << server.process().Err();
  bool registered = false, stopping = false;
  for (const json& j : serve_lines) {
    EXPECT_EQ(j["level"], "info");
    registered |= j["msg"].get<std::string>().rfind("worker json-w registered", 0) == 0;
    stopping |= j["msg"].get<std::string>().rfind("stopping", 0) == 0;
  }
  EXPECT_TRUE(registered) << server.process().Err();
  EXPECT_TRUE(stopping) << server.process().Err();

  ASSERT_TRUE(Eventually([&] { return !Lines(worker.Err()).empty(); }, std::chrono::seconds(10)));
  std::vector<json> worker_lines = JsonLines(worker.Err(), "worker");
  ASSERT_FALSE(worker_lines.empty());
  EXPECT_NE(worker_lines[0]["msg"].get<std::string>().find("registered with"), std::string::npos);
  EXPECT_EQ(server.process().Out().find('{'), std::string::npos) << "stdout has no log lines";
}

TEST(Logging, LevelWarnDropsInfoButKeepsWarnings) {
  TestDir dir;
  // A worker whose server is not there warns that it retries; it logs no info line before that.
  Process worker({"worker", "--server", "127.0.0.1:1", "--synthetic", "--log-level", "warn",
                  "--log-format", "json"},
                 dir.File("lonely"));
  ASSERT_TRUE(Eventually([&] { return worker.Err().find("cannot reach") != std::string::npos; },
                         std::chrono::seconds(20)));
  for (const json& j : JsonLines(worker.Err(), "worker")) EXPECT_EQ(j["level"], "warn") << j;

  // serve at warn: a worker registers, and the info line that says so is not written.
  ServerProcess server(dir, dir.File("warn.db"), {"--log-level", "warn"});
  Process w({"worker", "--server", server.address(), "--synthetic", "--id", "quiet-w"},
            dir.File("w"));
  ASSERT_TRUE(Eventually(
      [&] {
        return RunFusetune(dir, {"workers", "--server", server.address()}).out.find("quiet-w") !=
               std::string::npos;
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(server.process().Err(), "");
  // ... which it is at the default level (so the check above can fail).
  ServerProcess loud(dir, dir.File("info.db"), {}, 0, "loud");
  Process w2({"worker", "--server", loud.address(), "--synthetic", "--id", "loud-w"},
             dir.File("w2"));
  EXPECT_TRUE(Eventually(
      [&] { return loud.process().Err().find("loud-w registered") != std::string::npos; },
      std::chrono::seconds(20)))
      << loud.process().Err();
}

TEST(Logging, BadValuesExitTwoNamingTheAllowedOnes) {
  TestDir dir;
  const std::string graph =
      std::string(FUSETUNE_SOURCE_DIR) + "/examples/sub_exp_100x120x120.relay";
  CommandResult level =
      RunFusetune(dir, {"serve", "--db", dir.File("x.db"), "--log-level", "loud"});
  EXPECT_EQ(level.exit_code, 2);
  EXPECT_NE(level.err.find("--log-level"), std::string::npos) << level.err;
  for (const char* allowed : {"trace", "debug", "info", "warn", "error", "off"})
    EXPECT_NE(level.err.find(allowed), std::string::npos) << allowed << "\n" << level.err;

  CommandResult format = RunFusetune(dir, {"check", graph, "--log-format", "xml"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("--log-format"), std::string::npos) << format.err;
  EXPECT_NE(format.err.find("text"), std::string::npos) << format.err;
  EXPECT_NE(format.err.find("json"), std::string::npos) << format.err;

  // Good values work after the subcommand and before it.
  EXPECT_EQ(
      RunFusetune(dir, {"check", graph, "--log-level", "debug", "--log-format", "json"}).exit_code,
      0);
  EXPECT_EQ(RunFusetune(dir, {"--log-level", "error", "check", graph}).exit_code, 0);
}

// A local tune's jobs run in a sandbox child (worker/sandbox.h), whose command line carries no log
// flags: it logs at the parent's level and in its format, so `--log-level debug` shows every
// plan's repeats. (The child used to log at info whatever the parent was asked, and the worker's
// own debug lines never appeared.)
TEST(Logging, SandboxChildLogsAtTheParentsLevelAndFormat) {
  TestDir dir;
  const std::string graph =
      std::string(FUSETUNE_SOURCE_DIR) + "/examples/sub_exp_100x120x120.relay";
  CommandResult debug = RunFusetune(dir, {"tune", graph, "--db", dir.File("debug.db"),
                                          "--log-level", "debug", "--log-format", "json"});
  ASSERT_EQ(debug.exit_code, 0) << debug.err;
  const std::regex repeats(
      R"(job \d+ plan \S+: check call (\S+ µs|none \(checked before\)); \d+ repeat\(s\) of \d+ )"
      R"(call\(s\): \[.*\] µs)");
  int sandbox_lines = 0;
  for (const std::string& line : Lines(debug.err)) {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << "not a JSON object: " << line;
    if (j.value("logger", "") != "sandbox") continue;
    EXPECT_EQ(j["level"], "debug") << line;
    EXPECT_TRUE(std::regex_search(j["msg"].get<std::string>(), repeats)) << line;
    ++sandbox_lines;
  }
  EXPECT_GE(sandbox_lines, 2) << debug.err;

  CommandResult info = RunFusetune(dir, {"tune", graph, "--db", dir.File("info.db")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.err.find("[sandbox]"), std::string::npos) << info.err;
  EXPECT_EQ(info.err.find("repeat(s)"), std::string::npos) << info.err;
}

}  // namespace
}  // namespace fusetune::testing
