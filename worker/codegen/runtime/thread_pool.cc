// How a parallel loop runs: [0, n) is cut into `chunks` (1 or 8 per thread) and each thread owns a
// contiguous run of chunks, so repeated calls keep each thread on the same data (its cache).
// A thread that finishes its own run steals chunks from the others' runs, so a thread that the
// OS deschedules (a shared or busy machine) delays the loop by a chunk, not by its whole share.
// Waiting spins briefly, then yields, then (idle workers) sleeps on a condition variable.
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

// How long an idle worker stays awake after a job: long enough to catch the next kernel call of
// a timing loop, short enough that an idle pool does not take cores from other processes.
constexpr auto kSpinTime = std::chrono::microseconds(200);

thread_local bool t_inside_pool = false;

// Spins a little, then yields the core, until `done()`.
template <typename Done>
void WaitUntil(Done done) {
  for (int i = 0; !done(); ++i) {
    if (i < 256) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

struct Job {
  ChunkFn fn;
  void* ctx;
  int64_t n;
  int chunks;
  int threads;
  std::unique_ptr<std::atomic<int>[]> cursor;  // next chunk of each thread's run
  std::vector<int> end;                        // end of each thread's run
  std::atomic<int> done{0};                    // chunks finished
  std::atomic<int> inside{0};                  // workers currently using this job

  void RunChunk(int c) {
    fn(ctx, n * c / chunks, n * (c + 1) / chunks);
    done.fetch_add(1, std::memory_order_acq_rel);
  }
  // Thread t's own run first, then whatever is left in the others' runs.
  void Share(int t) {
    for (int k = 0; k < threads; ++k) {
      int u = (t + k) % threads;
      if (k == 0 && t >= threads) continue;
      for (int c; (c = cursor[u].fetch_add(1, std::memory_order_relaxed)) < end[u];) RunChunk(c);
    }
  }
};

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
      // The generation is read here, not when the thread starts running: a loop posted (or a
      // stop) between the two would otherwise look old to the new worker and never wake it.
      uint64_t seen = generation_.load();
      workers_.emplace_back([this, index, seen] { WorkerLoop(index, seen); });
    }
  }
  int threads() const { return threads_; }

  void ParallelFor(int64_t n, ChunkFn fn, void* ctx, int chunks_per_thread) {
    if (n <= 0) return;
    const int threads = threads_;
    if (t_inside_pool || threads <= 1 || n == 1) {
      fn(ctx, 0, n);
      return;
    }
    std::lock_guard<std::mutex> call(call_mutex_);
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.threads = static_cast<int>(std::min<int64_t>(threads, n));
    job.chunks = static_cast<int>(std::min<int64_t>(int64_t{job.threads} * chunks_per_thread, n));
    job.cursor = std::make_unique<std::atomic<int>[]>(job.threads);
    for (int t = 0; t < job.threads; ++t) {
      job.cursor[t].store(job.chunks * t / job.threads, std::memory_order_relaxed);
      job.end.push_back(job.chunks * (t + 1) / job.threads);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    t_inside_pool = true;
    job.Share(0);
    t_inside_pool = false;
    WaitUntil([&] { return job.done.load(std::memory_order_acquire) == job.chunks; });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = nullptr;  // no worker enters the job from now on
    }
    WaitUntil([&] { return job.inside.load(std::memory_order_acquire) == 0; });
  }

 private:
  void WorkerLoop(int index, uint64_t seen) {
    t_inside_pool = true;
    for (;;) {
      uint64_t now = generation_.load(std::memory_order_acquire);
      if (now == seen) {
        auto until = std::chrono::steady_clock::now() + kSpinTime;
        for (int i = 0; (now = generation_.load(std::memory_order_acquire)) == seen; ++i) {
          if (std::chrono::steady_clock::now() >= until) break;
          if (i < 64) {
            _mm_pause();
          } else {
            std::this_thread::yield();
          }
        }
        if (now == seen) {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
        }
      }
      Job* job;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) return;
        seen = generation_.load();
        job = job_;
        if (job) job->inside.fetch_add(1, std::memory_order_relaxed);
      }
      if (job) {
        job->Share(index);
        job->inside.fetch_sub(1, std::memory_order_release);
      }
    }
  }

  std::mutex call_mutex_;  // one parallel loop at a time
  std::mutex mutex_;       // guards job_ and stop_
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  std::atomic<int> threads_{1};
  bool stop_ = false;
  std::atomic<uint64_t> generation_{0};
  Job* job_ = nullptr;
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
  fusetune::runtime::ThePool().ParallelFor(n, fn, ctx, 1);
}

extern "C" void fusetune_parallel_for_chunked(int64_t n,
                                              void (*fn)(void* ctx, int64_t begin, int64_t end),
                                              void* ctx) {
  fusetune::runtime::ThePool().ParallelFor(n, fn, ctx, 8);
}
