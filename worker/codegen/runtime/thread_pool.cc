#include "worker/codegen/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <immintrin.h>

namespace fusetune::runtime {
namespace {

using ChunkFn = void (*)(void*, int64_t, int64_t);

// How long an idle worker spins before it sleeps: long enough to catch the next kernel call of a
// timing loop, short enough that an idle pool does not steal cores from other processes.
constexpr auto kSpinTime = std::chrono::microseconds(200);

thread_local bool t_inside_pool = false;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  void SetThreads(int threads) {
    std::lock_guard<std::mutex> call(call_mutex_);
    threads_ = std::clamp(threads, 1, MaxThreads());
    while (static_cast<int>(workers_.size()) < threads_ - 1) {
      int index = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, index] { WorkerLoop(index); });
    }
  }
  int threads() const { return threads_; }

  void ParallelFor(int64_t n, ChunkFn fn, void* ctx) {
    if (n <= 0) return;
    if (t_inside_pool || threads_ <= 1 || n == 1) {
      fn(ctx, 0, n);
      return;
    }
    std::lock_guard<std::mutex> call(call_mutex_);
    int chunks = static_cast<int>(std::min<int64_t>(threads_, n));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = fn;
      ctx_ = ctx;
      n_ = n;
      chunks_ = chunks;
      pending_.store(chunks - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    t_inside_pool = true;
    fn(ctx, 0, n / chunks);
    t_inside_pool = false;
    while (pending_.load(std::memory_order_acquire) != 0) _mm_pause();
  }

 private:
  void WorkerLoop(int index) {
    t_inside_pool = true;
    uint64_t seen = generation_.load();
    for (;;) {
      uint64_t now = generation_.load(std::memory_order_acquire);
      if (now == seen) {
        auto until = std::chrono::steady_clock::now() + kSpinTime;
        while ((now = generation_.load(std::memory_order_acquire)) == seen &&
               std::chrono::steady_clock::now() < until) {
          for (int i = 0; i < 64; ++i) _mm_pause();
        }
        if (now == seen) {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return generation_.load() != seen; });
        }
      }
      ChunkFn fn;
      void* ctx;
      int64_t n;
      int chunks;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) return;
        // Read the generation with the job it belongs to, so a late worker never runs a job twice.
        seen = generation_.load();
        fn = fn_;
        ctx = ctx_;
        n = n_;
        chunks = chunks_;
      }
      if (index < chunks) {
        fn(ctx, n * index / chunks, n * (index + 1) / chunks);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
    }
  }

  std::mutex call_mutex_;  // one parallel loop at a time
  std::mutex mutex_;       // guards the job description below
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  std::atomic<int> threads_{1};
  bool stop_ = false;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  ChunkFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 0;
};

Pool& ThePool() {
  static Pool pool;
  return pool;
}

}  // namespace

void SetNumThreads(int threads) { ThePool().SetThreads(threads); }
int NumThreads() { return ThePool().threads(); }
int MaxThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace fusetune::runtime

extern "C" void fusetune_parallel_for(int64_t n, void (*fn)(void* ctx, int64_t begin, int64_t end),
                                      void* ctx) {
  fusetune::runtime::ThePool().ParallelFor(n, fn, ctx);
}
