#pragma once
// A one-line progress bar on stderr, drawn only when stderr is a terminal (so logs, pipes and
// --json output stay clean): `measuring [########..........]  12/30  ETA 4s`.
#include <chrono>
#include <string>

namespace fusetune::cli {

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  void Update(const std::string& phase, size_t done, size_t total);
  void Finish();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::string phase_;
  std::chrono::steady_clock::time_point phase_start_;
};

bool StderrIsTerminal();

}  // namespace fusetune::cli
