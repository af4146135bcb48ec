#pragma once
// Helpers for the service tests: real `fusetune` processes (serve, worker, clients) on 127.0.0.1,
// each with its output in files, killed for good when the test ends; gRPC stubs to talk to the
// server directly; a poll-until helper with a deadline so no test can hang.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "proto/fusetune.grpc.pb.h"

extern char** environ;

namespace fusetune::testing {

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory per test, removed at the end.
class TestDir {
 public:
  TestDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("fusetune_svc_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() {
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(path_);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return File(name);
  }

 private:
  std::filesystem::path path_;
};

// Polls `pred` every 20 ms until it holds or `timeout` passes.
inline bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// One `fusetune` process; SIGKILLed and reaped when the object dies.
class Process {
 public:
  Process(const std::vector<std::string>& args, const std::string& log_prefix,
          const std::vector<std::string>& extra_env = {})
      : out_(log_prefix + ".out"), err_(log_prefix + ".err") {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> argv_s = {FUSETUNE_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.push_back(*e);
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (std::string& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    int rc = posix_spawn(&pid_, FUSETUNE_BINARY, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
  }
  ~Process() { Kill(SIGKILL); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void Kill(int sig) {
    if (pid_ <= 0 || exited_) return;
    ::kill(pid_, sig);
    if (sig == SIGKILL) Wait(std::chrono::seconds(10));
  }
  // The exit status (as from waitpid), or -1 when still running after `timeout`.
  int Wait(std::chrono::milliseconds timeout) {
    if (exited_) return status_;
    auto end = std::chrono::steady_clock::now() + timeout;
    do {
      if (::waitpid(pid_, &status_, WNOHANG) == pid_) {
        exited_ = true;
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (std::chrono::steady_clock::now() < end);
    return -1;
  }
  int ExitCode(std::chrono::milliseconds timeout) {
    int status = Wait(timeout);
    if (status == -1) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string Out() const { return Slurp(out_); }
  std::string Err() const { return Slurp(err_); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `fusetune args...` to completion (killed after `timeout`).
inline CommandResult RunFusetune(const TestDir& dir, const std::vector<std::string>& args,
                                 const std::vector<std::string>& env = {},
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  static int counter = 0;
  Process p(args, dir.File("cmd" + std::to_string(counter++)), env);
  CommandResult r;
  r.exit_code = p.ExitCode(timeout);
  r.out = p.Out();
  r.err = p.Err();
  return r;
}

// `fusetune serve` on 127.0.0.1 (port 0: a free one, read back from its first line).
class ServerProcess {
 public:
  ServerProcess(const TestDir& dir, const std::string& db, std::vector<std::string> extra = {},
                int port = 0, const std::string& name = "serve") {
    std::vector<std::string> args = {"serve", "--listen", "127.0.0.1:" + std::to_string(port),
                                     "--db", db};
    args.insert(args.end(), extra.begin(), extra.end());
    process_ = std::make_unique<Process>(args, dir.File(name));
    std::smatch m;
    std::regex listening("listening on 127\\.0\\.0\\.1:([0-9]+)");
    bool up = Eventually(
        [&] {
          std::string out = process_->Out();
          if (!std::regex_search(out, m, listening)) return false;
          port_ = std::stoi(m[1]);
          return true;
        },
        std::chrono::seconds(20));
    EXPECT_TRUE(up) << "serve did not start:\n" << process_->Err();
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Process& process() { return *process_; }

 private:
  std::unique_ptr<Process> process_;
  int port_ = 0;
};

inline std::shared_ptr<grpc::Channel> Channel(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

// A client context with an optional token and a deadline.
inline std::unique_ptr<grpc::ClientContext> Ctx(
    const std::string& token = "", std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto c = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
  c->set_deadline(std::chrono::system_clock::now() + timeout);
  return c;
}

// Job ids a worker's log says it measured ("job N done ...").
inline std::vector<int64_t> JobsRun(const std::string& log) {
  std::vector<int64_t> ids;
  std::regex done("job ([0-9]+) done");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), done); it != std::sregex_iterator();
       ++it)
    ids.push_back(std::stoll((*it)[1]));
  return ids;
}

// The seed's three ops at sequence length 32, and a chain of six element-wise ops with skip
// edges (many candidate groups: many jobs).
inline const char* kSmallSeed =
    R"(fn (%x: Tensor[(12, 32, 64), float32], %y: Tensor[(12, 32, 64), float32], %z: Tensor[(12, 32, 32), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
}
)";
inline const char* kChain =
    R"(fn (%x: Tensor[(32, 64), float32]) {
  %0 = exp(%x);
  %1 = negative(%0);
  %2 = sigmoid(%1);
  %3 = tanh(%2);
  %4 = add(%3, %x);
  multiply(%4, %0)
}
)";

// Polls GetTask until the task is terminal; returns its last status.
inline v1::TaskStatus WaitForTask(v1::Tuner::Stub& stub, int64_t id,
                                  std::chrono::milliseconds timeout,
                                  const std::string& token = "") {
  v1::TaskStatus status;
  Eventually(
      [&] {
        v1::GetTaskRequest request;
        request.set_task_id(id);
        grpc::Status s = stub.GetTask(Ctx(token, std::chrono::seconds(5)).get(), request, &status);
        return s.ok() && status.state() >= v1::TASK_STATE_DONE;
      },
      timeout);
  return status;
}

}  // namespace fusetune::testing
