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
#include <optional>
#include <string>

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
  // `next`, when given, is the job the caller will run next: it is sent along, so the child
  // prepares it (compiles its kernels, computes its reference) while `job` runs; the next call
  // must then be Run(*next, ...). When the child dies with a job sent ahead, `job` runs again
  // alone first, so a crash or hang while preparing the next job costs only that job.
  JobResult Run(const MeasureJob& job, const MeasureJob* next = nullptr);

 private:
  JobResult RunOnce(const MeasureJob& job, const MeasureJob* next);
  void Start();
  void Stop();
  std::chrono::milliseconds time_limit_;
  std::string binary_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;  // bytes read past the last answer line
  bool child_died_ = false;
  std::optional<int64_t> sent_ahead_;  // the id of a job the child has but was not yet asked for
};

}  // namespace fusetune
