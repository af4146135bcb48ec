#include "client/logging.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace fusetune::cli {
namespace {

// The --log-level names, in --help's order.
const std::vector<std::pair<std::string, spdlog::level::level_enum>> kLevels = {
    {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
    {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off}};

const std::vector<std::string> kFormats = {"text", "json"};

std::vector<std::string> LevelNames() {
  std::vector<std::string> names;
  for (const auto& [name, level] : kLevels) names.push_back(name);
  return names;
}

std::optional<spdlog::level::level_enum> LevelNamed(std::string_view name) {
  for (const auto& [n, level] : kLevels)
    if (n == name) return level;
  return std::nullopt;
}

// The parent's choice, for processes fusetune starts itself (sandbox children), whose command
// lines carry no log flags: their lines then interleave with the parent's in one format and level.
constexpr const char* kLevelEnv = "FUSETUNE_LOG_LEVEL";
constexpr const char* kFormatEnv = "FUSETUNE_LOG_FORMAT";

struct LogSettings {
  std::string level = "info";
  std::string format = "text";
};
LogSettings& Settings() {
  static LogSettings settings = [] {
    LogSettings s;
    if (const char* level = std::getenv(kLevelEnv); level && LevelNamed(level)) s.level = level;
    if (const char* format = std::getenv(kFormatEnv);
        format && std::find(kFormats.begin(), kFormats.end(), format) != kFormats.end())
      s.format = format;
    return s;
  }();
  return settings;
}

std::string_view LevelName(spdlog::level::level_enum level) {
  if (level == spdlog::level::critical) return "critical";  // logged, never asked for
  for (const auto& [name, l] : kLevels)
    if (l == level) return name;
  return "off";
}

// ISO 8601 in UTC with milliseconds: 2026-11-30T00:53:52.123Z.
std::string IsoUtc(spdlog::log_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms % 1000);
}

// One JSON object per record. nlohmann::json does the escaping (quotes, backslashes, control
// characters); bytes that are not UTF-8 become U+FFFD instead of breaking the line.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::ordered_json line;
    line["ts"] = IsoUtc(msg.time);
    line["level"] = LevelName(msg.level);
    line["logger"] = std::string(msg.logger_name.data(), msg.logger_name.size());
    line["msg"] = std::string(msg.payload.data(), msg.payload.size());
    line["thread"] = msg.thread_id;
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += '\n';
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> MakeJsonLogFormatter() {
  return std::make_unique<JsonFormatter>();
}

void UseLogger(const std::string& name) {
  const LogSettings& s = Settings();
  std::shared_ptr<spdlog::logger> logger;
  if (s.format == "json") {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sink->set_formatter(MakeJsonLogFormatter());
    logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  } else {
    logger = std::make_shared<spdlog::logger>(
        name, std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  }
  logger->set_level(*LevelNamed(s.level));
  ::setenv(kLevelEnv, s.level.c_str(), 1);
  ::setenv(kFormatEnv, s.format.c_str(), 1);
  // Warnings and errors reach the terminal (or the collector) at once, even when stderr is a file.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

void AddLoggingFlags(CLI::App& app) {
  app.add_option("--log-level", Settings().level,
                 fmt::format("log level: {}", fmt::join(LevelNames(), ", ")))
      ->check(CLI::IsMember(LevelNames()))
      ->capture_default_str();
  app.add_option("--log-format", Settings().format,
                 "log lines on stderr: text, or json (one object per line)")
      ->check(CLI::IsMember(kFormats))
      ->capture_default_str();
  // Subcommands accept the root's flags after their own name.
  app.fallthrough();
  app.parse_complete_callback([] { UseLogger("fusetune"); });
}

void MentionLoggingFlags(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({}))
    sub->footer(fmt::format("Logging (every subcommand): --log-level {}, --log-format {}",
                            fmt::join(LevelNames(), "|"), fmt::join(kFormats, "|")));
}

}  // namespace fusetune::cli
