#pragma once
// Same-run comparisons: candidates are timed round-robin (one repeat each per round), so drift of
// a shared machine hits every candidate alike; the median per-call time of each is reported.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace fusetune::bench {

struct Candidate {
  std::string name;
  std::function<void()> setup;  // run before each repeat (thread counts); may be empty
  std::function<void()> call;   // the timed call
  // filled by Compare
  double median_us = 0;
  double min_us = 0;
};

inline double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Pushes every earlier line out of the caches by writing a buffer well beyond any last-level
// cache (dirty lines, so they must be written back, as a model's activations are), as the layers
// between two uses of one weight do in a whole model.
inline void EvictCaches() {
  static std::vector<float> buffer(64 << 20, 1.0f);  // 256 MiB
  for (size_t i = 0; i < buffer.size(); i += 16) buffer[i] += 1.0f;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// Each repeat lasts about `repeat_ms`; `rounds` repeats per candidate. `cold`: every sample is one
// call after EvictCaches (untimed), so the weights come from memory as in a whole model.
inline void Compare(std::vector<Candidate>& cands, int rounds = 9, double repeat_ms = 30,
                    bool cold = false) {
  std::vector<int> number(cands.size(), 1);
  std::vector<std::vector<double>> samples(cands.size());
  for (size_t c = 0; c < cands.size(); ++c) {
    if (cands[c].setup) cands[c].setup();
    for (int w = 0; w < 3; ++w) cands[c].call();  // warm-up: scratch buffers, caches, pool threads
    double t0 = NowUs();
    cands[c].call();
    double once = std::max(NowUs() - t0, 0.1);
    number[c] = std::max(1, static_cast<int>(repeat_ms * 1000 / once));
  }
  for (int r = 0; r < rounds; ++r) {
    for (size_t c = 0; c < cands.size(); ++c) {
      if (cands[c].setup) cands[c].setup();
      cands[c].call();
      if (cold) {
        EvictCaches();
        const double t0 = NowUs();
        cands[c].call();
        samples[c].push_back(NowUs() - t0);
        continue;
      }
      double t0 = NowUs();
      for (int i = 0; i < number[c]; ++i) cands[c].call();
      samples[c].push_back((NowUs() - t0) / number[c]);
      // Let spinning pool threads (ours, OpenMP's) go idle before the next candidate runs.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  for (size_t c = 0; c < cands.size(); ++c) {
    std::sort(samples[c].begin(), samples[c].end());
    cands[c].median_us = samples[c][samples[c].size() / 2];
    cands[c].min_us = samples[c].front();
  }
}

}  // namespace fusetune::bench
