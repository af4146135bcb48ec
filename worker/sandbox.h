#pragma once
// The sandbox: measurement jobs run in a child process, so a kernel that crashes or hangs fails its
// job, not the worker or the server. The child is `fusetune-codegen sandbox-child` (the executable
// with LLVM, worker/codegen_binary.h; its loop is worker/sandbox_child.h); it reads jobs as JSON
// lines on stdin and answers each with a JSON line on stdout. It stays up between jobs, with its
// JIT and its caches of compiled kernels and reference values (worker/job_runner.h): starting a
// process and LLVM, compiling again and interpreting again for every job would dominate the time
// of small kernels. After a crash or a time-out it is replaced (the caches start empty) and the
// next job runs.
#include <sys/types.h>
#include <chrono>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <unordered_set>

#include "worker/job.h"

namespace fusetune {

class Sandbox {
 public:
  // `binary`: the executable to start as `BINARY sandbox-child` (default: CodegenBinary()).
  explicit Sandbox(std::chrono::milliseconds time_limit = std::chrono::seconds(60),
                   std::string binary = "");
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Runs `job` in the child. A crash, a hang past the time limit or a garbled answer fails the
  // plans it took down, with the reason (a job of several plans is then run again plan by plan, so
  // only the guilty plan fails); the child is restarted for the next job.
  //
  // `ahead`, when given, are the jobs the caller will run next, in order (ids distinct from
  // `job`'s and each other's): they are sent along, so the child prepares them (compiles their
  // kernels, computes their references) while `job` runs; the next call must then be
  // Run(ahead[0], ...). When the child dies holding jobs sent ahead, `job` runs again alone
  // first, and each of those jobs later runs alone, sent ahead of nothing and with nothing sent
  // ahead of it: a crash or hang while preparing a job ahead costs only that job.
  JobResult Run(const MeasureJob& job, std::span<const MeasureJob> ahead = {});
  JobResult Run(const MeasureJob& job, const MeasureJob* next) {
    return Run(job, next ? std::span<const MeasureJob>(next, 1) : std::span<const MeasureJob>());
  }

 private:
  JobResult RunOnce(const MeasureJob& job, std::span<const MeasureJob> ahead);
  void Start();
  void Stop();
  std::chrono::milliseconds time_limit_;
  std::string binary_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;  // bytes read past the last answer line
  bool child_died_ = false;
  std::deque<int64_t> sent_ahead_;  // the ids of jobs the child has but was not yet asked for
  bool died_with_ahead_ = false;    // the last RunOnce's child died holding jobs sent ahead
  // Jobs a child held ahead when it died: each runs alone, so it cannot take down another job.
  std::unordered_set<int64_t> suspects_;
};

}  // namespace fusetune
