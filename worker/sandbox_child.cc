#include "worker/sandbox_child.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "worker/job_runner.h"

namespace fusetune {

int RunSandboxChild() {
  // Answers go to a private copy of stdout; anything else that writes to stdout (a log line, a
  // library) lands on stderr instead of corrupting the protocol.
  int answer_fd = ::dup(1);
  ::dup2(2, 1);
  FILE* answers = ::fdopen(answer_fd, "w");
  if (!answers) return 1;
  JobRunner runner;  // its JIT and caches live as long as this child
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    JobResult result;
    try {
      result = runner.Run(JobFromJson(line));
    } catch (const std::exception& e) {
      // A job this child cannot read: answer for its id when it has one, so the parent does not
      // wait.
      MeasureJob unreadable;
      try {
        unreadable.id = nlohmann::json::parse(line).at("id").get<int64_t>();
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
