#include "worker/sandbox_child.h"

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "worker/job_runner.h"

namespace fusetune {

namespace {

// Job lines read from stdin by a thread of their own, so a job that arrives while another runs is
// prepared at once (JobRunner::Prepare) and its compiles overlap the running job's timing.
class JobReader {
 public:
  explicit JobReader(JobRunner& runner) : thread_([this, &runner] { Read(runner); }) {}
  ~JobReader() { thread_.join(); }  // after stdin's end (the caller has seen it)
  // The next line, or nullopt at the end of stdin.
  std::optional<std::string> Next() {
    std::unique_lock<std::mutex> lock(mutex_);
    arrived_.wait(lock, [&] { return !lines_.empty() || done_; });
    if (lines_.empty()) return std::nullopt;
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    return line;
  }

 private:
  void Read(JobRunner& runner) {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line.empty()) continue;
      try {
        runner.Prepare(JobFromJson(line));
      } catch (const std::exception&) {
        // Unreadable: the main loop answers it.
      }
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(std::move(line));
      arrived_.notify_one();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    arrived_.notify_one();
  }
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::string> lines_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

int RunSandboxChild() {
  // Answers go to a private copy of stdout; anything else that writes to stdout (a log line, a
  // library) lands on stderr instead of corrupting the protocol.
  int answer_fd = ::dup(1);
  ::dup2(2, 1);
  FILE* answers = ::fdopen(answer_fd, "w");
  if (!answers) return 1;
  JobRunner runner;  // its JIT and caches live as long as this child
  JobReader reader(runner);
  while (std::optional<std::string> line = reader.Next()) {
    JobResult result;
    try {
      result = runner.Run(JobFromJson(*line));
    } catch (const std::exception& e) {
      // A job this child cannot read: answer for its id when it has one, so the parent does not
      // wait.
      MeasureJob unreadable;
      try {
        unreadable.id = nlohmann::json::parse(*line).at("id").get<int64_t>();
      } catch (const std::exception&) {
        unreadable.id = -1;
      }
      unreadable.plans.push_back({"job", "{}"});
      result = FailedResult(unreadable, fmt::format("unreadable job: {}", e.what()));
    }
    std::string out = ResultToJson(result) + "\n";
    std::fwrite(out.data(), 1, out.size(), answers);
    std::fflush(answers);
  }
  return 0;
}

}  // namespace fusetune
