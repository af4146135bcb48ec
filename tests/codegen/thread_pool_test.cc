// The runtime pool covers every index exactly once, at every thread count, call after call,
// including tiny and uneven ranges; calls from inside a chunk run serially; a worker started just
// before the first loop takes part in it.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::runtime {
namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(int64_t n) : hits(n) {}
};

void Mark(void* ctx, int64_t begin, int64_t end) {
  auto* c = static_cast<Counts*>(ctx);
  for (int64_t i = begin; i < end; ++i) c->hits[i].fetch_add(1);
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, MaxThreads()}) {
    SetNumThreads(threads);
    EXPECT_EQ(NumThreads(), std::min(threads, MaxThreads()));
    for (int64_t n : {1, 2, 3, 7, 16, 17, 1000, 12345}) {
      for (int repeat = 0; repeat < 20; ++repeat) {
        Counts c(n);
        fusetune_parallel_for(n, Mark, &c);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(c.hits[i].load(), 1) << "n=" << n << " i=" << i << " threads=" << threads;
      }
    }
  }
  SetNumThreads(1);
}

struct Nested {
  std::atomic<int64_t> total{0};
};

void Inner(void* ctx, int64_t begin, int64_t end) {
  static_cast<Nested*>(ctx)->total += end - begin;
}
void Outer(void* ctx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) fusetune_parallel_for(10, Inner, ctx);
}

TEST(ThreadPool, NestedCallsRunSerially) {
  SetNumThreads(2);
  Nested n;
  fusetune_parallel_for(100, Outer, &n);
  EXPECT_EQ(n.total.load(), 1000);
  SetNumThreads(1);
}

// Two chunks: the caller's own chunk waits until the other chunk has started, which only the
// pool's worker can run. A worker that missed the loop (it once did when the loop was posted
// before the new thread read the pool's generation) leaves the wait to time out.
struct Rendezvous {
  std::atomic<bool> second_started{false};
  std::atomic<bool> timed_out{false};
};

void MeetOther(void* ctx, int64_t begin, int64_t) {
  auto* r = static_cast<Rendezvous*>(ctx);
  if (begin == 1) {
    r->second_started = true;
    return;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!r->second_started) {
    if (std::chrono::steady_clock::now() > until) {
      r->timed_out = true;
      return;
    }
    std::this_thread::yield();
  }
}

// Run by ctest in a fresh process, so the worker is created by this SetNumThreads, right before
// the loop, with no sleep in between.
TEST(ThreadPool, NewWorkerTakesPartInTheFirstLoop) {
  if (MaxThreads() < 2) GTEST_SKIP() << "one hardware thread";
  SetNumThreads(2);
  Rendezvous r;
  fusetune_parallel_for(2, MeetOther, &r);
  EXPECT_TRUE(r.second_started.load());
  EXPECT_FALSE(r.timed_out.load()) << "the pool's worker never ran the second chunk";
  SetNumThreads(1);
}

}  // namespace
}  // namespace fusetune::runtime
