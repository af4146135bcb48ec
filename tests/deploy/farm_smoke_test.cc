// The command lines of deploy/ really start a farm: the compose server's flags (addresses, store
// and token moved to this machine's temp directory), workers with the compose, Kubernetes and
// systemd flags (the systemd one through its own `sh -c` and nproc, pinned to one CPU), the
// compose healthcheck command listing them, and the metrics port answering.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "deploy_test_util.h"

extern char** environ;

namespace fusetune::deploy_test {
namespace {
namespace fs = std::filesystem;

// Replaces the value of each `--flag` named in `values`.
std::vector<std::string> WithValues(std::vector<std::string> args,
                                    const std::map<std::string, std::string>& values) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    auto it = values.find(args[i]);
    if (it != values.end()) args[i + 1] = it->second;
  }
  return args;
}

// A child process with stdout and stderr in files; SIGTERM and reaped when destroyed.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const fs::path& log,
          const std::vector<std::string>& extra_env = {}) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, (log.string() + ".out").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, (log.string() + ".err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<std::string> env_strings = extra_env;
    for (char** e = environ; *e; ++e) env_strings.push_back(*e);
    std::vector<char*> args, env;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
    args.push_back(nullptr);
    env.push_back(nullptr);
    int rc = posix_spawn(&pid_, argv[0].c_str(), &actions, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "cannot start " << argv[0];
    if (rc != 0) pid_ = -1;
    log_ = log;
  }
  ~Process() {
    Terminate();
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  // Asks the process to stop without waiting, so several can stop at once (a worker finishes
  // its 2 s long poll first).
  void Terminate() {
    if (pid_ > 0 && !terminated_) ::kill(pid_, SIGTERM);
    terminated_ = true;
  }
  std::string Out() const { return ReadFile(log_.string() + ".out"); }
  std::string Err() const { return ReadFile(log_.string() + ".err"); }
  bool Running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
  bool terminated_ = false;
  fs::path log_;
};

// Polls `probe` every 100 ms for up to 15 s.
template <typename F>
bool Eventually(F probe) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < end) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return probe();
}

// GET http://127.0.0.1:PORT/PATH with HTTP/1.0; the whole response, or "" on failure.
std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[8192];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return response;
}

int PortAfter(const std::string& text, const std::string& prefix) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(prefix + R"(\S*:(\d+))"))) return -1;
  return std::stoi(m[1].str());
}

// A fresh directory, removed after everything declared later (the processes) is gone.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("fusetune_farm_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(FarmSmokeTest, DeployCommandLinesStartAServerAndWorkers) {
  TempDir temp;
  const fs::path& dir = temp.path;
  const std::string token = (dir / "token").string();
  std::ofstream(token) << "smoke-test-token\n";
  const std::string binary = FUSETUNE_BINARY;

  YAML::Node compose = LoadComposeFile(DeployDir() / "compose.yaml");
  auto compose_tokens = [&](const std::string& service) {
    std::vector<std::string> t = Strings(compose["services"][service]["entrypoint"]);
    for (const std::string& c : Strings(compose["services"][service]["command"])) t.push_back(c);
    return t;
  };

  // The server, as compose runs it.
  Invocation serve = MakeInvocation("server", compose_tokens("server"));
  ASSERT_EQ(serve.subcommand, "serve");
  std::vector<std::string> serve_argv = {binary, "serve"};
  for (const std::string& a : WithValues(serve.args, {{"--listen", "127.0.0.1:0"},
                                                      {"--metrics-listen", "127.0.0.1:0"},
                                                      {"--db", (dir / "farm.db").string()},
                                                      {"--token-file", token}}))
    serve_argv.push_back(a);
  Process server(serve_argv, dir / "server");
  int grpc_port = -1, http_port = -1;
  ASSERT_TRUE(Eventually([&] {
    grpc_port = PortAfter(server.Out(), "listening on ");
    http_port = PortAfter(server.Out(), "status page on http://");
    return (grpc_port > 0 && http_port > 0) || !server.Running();
  }));
  ASSERT_TRUE(grpc_port > 0 && http_port > 0) << server.Out() << server.Err();
  const std::string address = "127.0.0.1:" + std::to_string(grpc_port);

  // compose's worker-0 and the Kubernetes worker (its $(NODE_NAME) filled in as the kubelet would).
  std::map<std::string, std::string> moved = {{"--server", address}, {"--token-file", token}};
  Invocation compose_worker = MakeInvocation("worker-0", compose_tokens("worker-0"));
  std::vector<std::string> argv = {binary, "worker"};
  for (const std::string& a : WithValues(compose_worker.args, moved)) argv.push_back(a);
  Process worker0(argv, dir / "worker0");

  std::vector<K8sObject> k8s = LoadK8sObjects();
  YAML::Node daemonset = FindK8s(k8s, "DaemonSet", "fusetune-worker");
  Invocation k8s_worker = MakeInvocation(
      "daemonset", Strings(daemonset["spec"]["template"]["spec"]["containers"][0]["args"]));
  argv = {binary, "worker"};
  for (std::string a : WithValues(k8s_worker.args, moved))
    argv.push_back(a == "$(NODE_NAME)" ? "node-a" : a);
  Process worker_k8s(argv, dir / "worker_k8s");

  // The systemd worker: its ExecStart with the specifiers systemd would fill in, on CPU 0.
  auto unit = ParseUnitFile(DeployDir() / "systemd" / "fusetune-worker@.service");
  std::string exec = UnitValues(unit, "Service.ExecStart").at(0);
  for (auto [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"%d", dir.string()},
                                                        {"%H", "unit"},
                                                        {"%i", "0"},
                                                        {"$$", "$"},
                                                        {"/usr/local/bin/fusetune", binary}})
    for (size_t at; (at = exec.find(from)) != std::string::npos;) exec.replace(at, from.size(), to);
  Process worker_unit({"/bin/sh", "-c", "exec taskset -c 0 " + exec}, dir / "worker_unit",
                      {"FUSETUNE_SERVER=" + address});

  // compose's healthcheck command lists all three, each with its cores.
  std::vector<std::string> check = Strings(compose["services"]["server"]["healthcheck"]["test"]);
  ASSERT_EQ(check.at(0), "CMD");
  std::string check_command;
  for (const std::string& a : WithValues({check.begin() + 1, check.end()}, moved))
    check_command += " " + (a.ends_with("/fusetune") ? binary : a);
  std::map<std::string, std::string> cores;  // worker id -> cores column
  Output listed;
  bool all_online = Eventually([&] {
    listed = RunShell(check_command);
    cores.clear();
    std::stringstream lines(listed.text);
    std::string id, state, n, rest;
    while (lines >> id >> state >> n && std::getline(lines, rest))
      if (state == "online") cores[id] = n;
    return listed.exit_code == 0 && cores.size() == 3;
  });
  EXPECT_TRUE(all_online) << listed.text << "\nworker-0:\n"
                          << worker0.Err() << "\nk8s:\n"
                          << worker_k8s.Err() << "\nunit:\n"
                          << worker_unit.Err();
  EXPECT_EQ(cores["worker-0"], "2");
  EXPECT_EQ(cores["node-a"], "4");
  EXPECT_EQ(cores["unit-0"], "1");  // nproc under CPUAffinity=0

  // A small graph tuned through the farm: the workers JIT-compile and time its kernels in their
  // sandbox children, and the answer matches the reference.
  const std::string graph = (dir / "tiny.relay").string();
  std::ofstream(graph)
      << "fn (%x: Tensor[(64, 64), float32]) {\n  %0 = exp(%x);\n  negative(%0)\n}\n";
  Output tuned = RunShell(binary + " tune --server " + address + " --token-file " + token +
                          " --json " + graph + " 2>/dev/null");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.text;
  nlohmann::json result = nlohmann::json::parse(tuned.text);
  EXPECT_GT(result["candidates_measured"].get<int>(), 0);
  EXPECT_LT(result["max_abs_error"].get<double>(), 1e-4);

  // The metrics port: health and the worker gauge.
  EXPECT_NE(HttpGet(http_port, "/healthz").find(" 200 "), std::string::npos);
  EXPECT_NE(HttpGet(http_port, "/metrics").find("fusetune_workers"), std::string::npos);
  for (Process* p : {&worker0, &worker_k8s, &worker_unit, &server}) p->Terminate();
  // --log-format json: every stderr line of a worker is a JSON object.
  std::stringstream log(worker0.Err());
  std::string line;
  while (std::getline(log, line)) EXPECT_TRUE(line.starts_with("{") && line.ends_with("}")) << line;
}

}  // namespace
}  // namespace fusetune::deploy_test
