// The runtime pool covers every index exactly once, at every thread count, call after call,
// including tiny and uneven ranges; calls from inside a chunk run serially.
#include <atomic>
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

}  // namespace
}  // namespace fusetune::runtime
