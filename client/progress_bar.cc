#include "client/progress_bar.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace fusetune::cli {

bool StderrIsTerminal() { return ::isatty(2) == 1; }

ProgressBar::ProgressBar(bool enabled) : enabled_(enabled) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(const std::string& phase, size_t done, size_t total) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (phase != phase_) {
    phase_ = phase;
    phase_start_ = now;
  }
  constexpr int kWidth = 30;
  int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  std::string eta;
  double elapsed = std::chrono::duration<double>(now - phase_start_).count();
  if (done > 0 && done < total)
    eta = fmt::format("ETA {:.0f}s",
                      elapsed / static_cast<double>(done) * static_cast<double>(total - done));
  std::string line =
      fmt::format("\r{:>10} [{}{}] {:>4}/{:<4} {:<10}", phase, std::string(filled, '#'),
                  std::string(kWidth - filled, '.'), done, total, eta);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);  // clear the line
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace fusetune::cli
