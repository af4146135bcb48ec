#pragma once
// The one persistent thread pool that generated kernels call. A parallel loop in a kernel is
// outlined into `fn(ctx, begin, end)` and handed to fusetune_parallel_for, which splits [0, n)
// into chunks, each thread owning a contiguous run of them and stealing when done early (see
// thread_pool.cc); the calling thread takes part.
// Workers spin briefly after a job (kernels are called back to back when timed) and then sleep,
// so an idle pool costs nothing. A call from inside a chunk runs serially (no nesting).
#include <cstdint>

// One contiguous range per thread (a thread that finishes early may take a range whose thread
// has not started): for bodies that amortise work over their range, like the matmul template's
// B packing.
extern "C" void fusetune_parallel_for(int64_t n, void (*fn)(void* ctx, int64_t begin, int64_t end),
                                      void* ctx);
// Eight ranges per thread, each thread taking its own first, then stealing: for loops of
// independent iterations (the element-wise, reduction and row templates), so a descheduled
// thread delays the loop by one range rather than by its whole share.
extern "C" void fusetune_parallel_for_chunked(int64_t n,
                                              void (*fn)(void* ctx, int64_t begin, int64_t end),
                                              void* ctx);

namespace fusetune::runtime {

// Threads used by the next parallel loops, clamped to [1, MaxThreads()]. Not to be called while a
// kernel runs.
void SetNumThreads(int threads);
int NumThreads();
// Hardware threads of this machine (std::thread::hardware_concurrency, at least 1).
int MaxThreads();

}  // namespace fusetune::runtime
