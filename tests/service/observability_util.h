#pragma once
// Helpers for the observability tests: `fusetune serve --metrics-listen 127.0.0.1:0` with its
// metrics port read back, HTTP GETs, a parser of the Prometheus text format 0.0.4, running an
// outside program (Chromium) with a time limit, and a PNG header check.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <httplib.h>

#include "service_test_util.h"

namespace fusetune::testing {

// serve with the metrics and status page server on a free port.
class MetricsServer {
 public:
  MetricsServer(const TestDir& dir, const std::string& db, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--metrics-listen", "127.0.0.1:0"});
    serve_ = std::make_unique<ServerProcess>(dir, db, extra);
    std::regex line(
        "fusetune serve: metrics and status page on http://127\\.0\\.0\\.1:([0-9]+)/\n");
    std::smatch m;
    bool up = Eventually(
        [&] {
          std::string out = serve_->process().Out();
          if (!std::regex_search(out, m, line)) return false;
          metrics_port_ = std::stoi(m[1]);
          return true;
        },
        std::chrono::seconds(20));
    EXPECT_TRUE(up) << "no metrics line:\n" << serve_->process().Out() << serve_->process().Err();
  }
  std::string address() const { return serve_->address(); }
  int metrics_port() const { return metrics_port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(metrics_port_) + path;
  }
  Process& process() { return serve_->process(); }

 private:
  std::unique_ptr<ServerProcess> serve_;
  int metrics_port_ = 0;
};

struct HttpReply {
  int status = 0;  // 0: no answer
  std::string body;
  std::string content_type;
};

inline HttpReply HttpGet(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  HttpReply reply;
  if (httplib::Result r = client.Get(path.c_str())) {
    reply.status = r->status;
    reply.body = r->body;
    reply.content_type = r->get_header_value("Content-Type");
  }
  return reply;
}

// ---- Prometheus text format 0.0.4 ----

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> types;  // family name -> counter, gauge, histogram, ...
  std::vector<Sample> samples;

  // The samples named `name` whose labels include every one of `labels`.
  std::vector<Sample> Find(const std::string& name,
                           const std::map<std::string, std::string>& labels = {}) const {
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        all = all && it != s.labels.end() && it->second == v;
      }
      if (all) out.push_back(s);
    }
    return out;
  }
  // The value of the one sample with exactly these labels; throws when there is none or several.
  double Value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    std::vector<Sample> found;
    for (const Sample& s : Find(name, labels))
      if (s.labels.size() == labels.size()) found.push_back(s);
    if (found.size() != 1)
      throw std::runtime_error(name + ": " + std::to_string(found.size()) + " samples match");
    return found[0].value;
  }
};

// Parses the whole text; a malformed line throws naming it (the format is the contract).
inline Exposition ParseExposition(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("line " + std::to_string(number) + ": " + why + ": " + line);
  };
  auto is_name = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, kind, name, type;
      words >> hash >> kind >> name >> type;
      if (kind == "TYPE") e.types[name] = type;
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && is_name(line[i], i == 0)) s.name += line[i++];
    if (s.name.empty()) fail("no metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key;
        while (i < line.size() && is_name(line[i], key.empty())) key += line[i++];
        if (key.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
          fail("bad label");
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            char c = line[++i];
            value += c == 'n' ? '\n' : c;
          } else {
            value += line[i];
          }
          ++i;
        }
        if (i >= line.size()) fail("unterminated label value");
        ++i;  // closing quote
        if (!s.labels.emplace(key, value).second) fail("repeated label");
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) fail("unterminated labels");
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') fail("no value");
    std::istringstream rest(line.substr(i + 1));
    std::string value;
    rest >> value;
    if (value == "+Inf") {
      s.value = std::numeric_limits<double>::infinity();
    } else if (value == "-Inf") {
      s.value = -std::numeric_limits<double>::infinity();
    } else if (value == "NaN") {
      s.value = std::numeric_limits<double>::quiet_NaN();
    } else {
      size_t used = 0;
      try {
        s.value = std::stod(value, &used);
      } catch (const std::exception&) {
        fail("bad value");
      }
      if (used != value.size()) fail("bad value");
    }
    e.samples.push_back(std::move(s));
  }
  return e;
}

inline Exposition Scrape(int port) {
  HttpReply r = HttpGet(port, "/metrics");
  if (r.status != 200) throw std::runtime_error("GET /metrics: status " + std::to_string(r.status));
  return ParseExposition(r.body);
}

// ---- outside programs ----

// Runs `argv` in a process group of its own (Chromium starts helpers), output to `log`; kills the
// whole group after `timeout`. Returns the exit code, or -1 on timeout.
inline int RunProgram(const std::vector<std::string>& argv, const std::string& log,
                      std::chrono::seconds timeout) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return -1;
  int status = 0;
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ::kill(-pid, SIGKILL);  // helpers left behind
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

// Width and height from a PNG's IHDR chunk; nullopt when the bytes are not a PNG.
inline std::optional<std::pair<uint32_t, uint32_t>> PngSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char b[24] = {};
  if (!in.read(reinterpret_cast<char*>(b), sizeof b)) return std::nullopt;
  const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!std::equal(signature, signature + 8, b)) return std::nullopt;
  if (std::string(reinterpret_cast<char*>(b + 12), 4) != "IHDR") return std::nullopt;
  auto be32 = [&](int at) {
    return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
           uint32_t{b[at + 3]};
  };
  return std::make_pair(be32(16), be32(20));
}

}  // namespace fusetune::testing
