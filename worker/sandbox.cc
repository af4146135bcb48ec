#include "worker/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "ir/error.h"
#include "worker/codegen_binary.h"

namespace fusetune {
namespace {

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("crashed with signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return "ended";
}

// The child's end is non-blocking: a child that stops reading (stuck while preparing a job sent
// ahead, with the pipe full) fails the write at the job's deadline instead of hanging the parent.
bool WriteAll(int fd, const std::string& data, std::chrono::steady_clock::time_point deadline) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{fd, POLLOUT, 0};
      ::poll(&pfd, 1, static_cast<int>(left.count()));
      continue;
    }
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Sandbox::Sandbox(std::chrono::milliseconds time_limit, std::string binary)
    : time_limit_(time_limit), binary_(binary.empty() ? CodegenBinary() : std::move(binary)) {
  // A child that dies while we write to it must not kill us with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
}

Sandbox::~Sandbox() { Stop(); }

void Sandbox::Start() {
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("sandbox: pipe failed: {}", strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  std::string self = binary_;
  char arg0[] = "fusetune";
  char arg1[] = "sandbox-child";
  char* argv[] = {arg0, arg1, nullptr};
  const std::vector<std::string> environment = CodegenEnvironment();
  std::vector<char*> envp;
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int rc = posix_spawn(&pid_, self.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    pid_ = -1;
    throw std::runtime_error(fmt::format("sandbox: cannot start {}: {}", self, strerror(rc)));
  }
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  ::fcntl(to_child_, F_SETFL, ::fcntl(to_child_, F_GETFL) | O_NONBLOCK);
  pending_.clear();
}

void Sandbox::Stop() {
  sent_ahead_.clear();
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

JobResult Sandbox::Run(const MeasureJob& job, std::span<const MeasureJob> ahead) {
  const auto start = std::chrono::steady_clock::now();
  // The parent's own share of the job: what the child did not account for.
  auto with_overhead = [&](JobResult result) {
    double wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    result.phases.sandbox_ms = std::max(0.0, wall - result.phases.total_ms);
    return result;
  };
  // A suspect runs alone. No suspect is sent ahead, nor any job after it: the child takes jobs in
  // the order sent.
  if (suspects_.erase(job.id) > 0) ahead = {};
  for (size_t i = 0; i < ahead.size(); ++i)
    if (suspects_.contains(ahead[i].id)) {
      ahead = ahead.first(i);
      break;
    }
  JobResult result = RunOnce(job, ahead);
  // The child died holding jobs sent ahead: the crash or hang may have been one of theirs, being
  // prepared, so this one runs again alone before anything is blamed on it.
  if (died_with_ahead_) result = RunOnce(job, {});
  bool all_failed = !result.plans.empty();
  for (const PlanResult& t : result.plans)
    all_failed &= !t.ok && t.reason == result.plans[0].reason;
  if (!all_failed || job.plans.size() < 2 || !child_died_) return with_overhead(std::move(result));
  // The child died (or hung) somewhere in the job: run each plan alone, so one crashing kernel
  // fails only its own plan.
  JobResult merged;
  merged.id = job.id;
  for (const JobPlan& plan : job.plans) {
    MeasureJob single = job;
    single.plans = {plan};
    JobResult one = RunOnce(single, {});
    if (merged.target.empty()) merged.target = one.target;
    merged.plans.push_back(one.plans.at(0));
    merged.phases += one.phases;
    merged.reuse += one.reuse;
  }
  return with_overhead(std::move(merged));
}

JobResult Sandbox::RunOnce(const MeasureJob& job, std::span<const MeasureJob> ahead) {
  child_died_ = died_with_ahead_ = false;
  // The child holds other jobs first: the caller skipped jobs it sent ahead. A new child, so no
  // answer of theirs is taken for this job's.
  if (!sent_ahead_.empty() && sent_ahead_.front() != job.id) Stop();
  if (pid_ < 0) Start();
  const auto deadline = std::chrono::steady_clock::now() + time_limit_;
  // The child is gone or past help: the jobs it held ahead become suspects (Run).
  auto died = [&](const std::string& why) {
    died_with_ahead_ = !sent_ahead_.empty();
    suspects_.insert(sent_ahead_.begin(), sent_ahead_.end());
    Stop();
    child_died_ = true;
    return FailedResult(job, why);
  };
  auto fail = [&](const std::string& reason) {
    int status = 0;
    std::string why = reason;
    // Reap the child to say how it ended; kill it first if it is still there (a hang).
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      why = fmt::format("{} ({})", reason, DescribeExit(status));
      pid_ = -1;
    }
    return died(why);
  };
  if (sent_ahead_.empty()) {
    if (!WriteAll(to_child_, JobToJson(job) + "\n", deadline))
      return fail("sandbox child did not take the job");
  } else {
    sent_ahead_.pop_front();
  }
  // The child holds ahead[0 .. sent_ahead_.size()) already; the rest go now.
  for (size_t i = sent_ahead_.size(); i < ahead.size(); ++i) {
    if (!WriteAll(to_child_, JobToJson(ahead[i]) + "\n", deadline))
      return fail("sandbox child did not take the job");
    sent_ahead_.push_back(ahead[i].id);
  }

  for (;;) {
    size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      try {
        JobResult result = ResultFromJson(line);
        if (result.id == job.id) return result;
      } catch (const UserError& e) {
        return fail(fmt::format("sandbox child answered garbage: {}", e.what()));
      }
      continue;  // an answer to an earlier job: skip it
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return fail(fmt::format("timed out after {} ms", time_limit_.count()));
    pollfd pfd{from_child_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // loop re-checks the deadline
    char buf[65536];
    ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // EOF: the child died. Wait for it so the reason says how.
      int status = 0;
      if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) {
        pid_ = -1;
        return died(DescribeExit(status));
      }
      return fail("sandbox child closed its output");
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace fusetune
