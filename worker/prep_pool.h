#pragma once
// Work done ahead of a job's timing on the cores the timing leaves idle: compiling kernels and
// computing reference values for the job being run and for the next one (worker/job_runner.h).
//
// A measurement at 1 thread keeps one core busy; on a machine of two, the other would idle while
// the timing runs, and the next job's compiles (LLVM at O3, tens to hundreds of ms a kernel) would
// wait for it. The pool runs tasks in the order given on up to `cores` threads, but while a
// timing runs it starts no task beyond the cores that timing leaves free, and before a timing
// starts it waits for running tasks beyond those to finish: a timing never shares a core with a
// compile it could have avoided. With one core (a worker pinned to its core) nothing overlaps a
// timing; tasks then run while the job waits for them.
//
// The job's thread is not always timing: it also checks a plan (one run on the job's threads)
// and waits. While a job runs (a Foreground lives) and waits for nothing, the pool starts no task
// beyond the cores its threads leave free, and while it waits (Wait) it starts tasks on every
// core. At 2 threads on 2 cores, tasks then start only while the job waits for one, and a task
// started beside the job's check need not be waited for by the timing that follows. A timing that
// takes every core first lets the pool finish everything queued, on every core: the jobs sent
// ahead are compiled in one go, with one core idle only at its end, instead of one job's kernel at
// a time between timings.
//
//   PrepPool pool(UsableCores());
//   auto done = pool.Submit([&] { ... });   // std::shared_future<void>: get() rethrows
//   { PrepPool::Timing t(pool, threads);   // no task beyond cores - threads while it lives
//     ... time ... }
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace fusetune {

// The cores this process may run on (its CPU affinity), at least 1.
int UsableCores();

class PrepPool {
 public:
  // `cores`: the machine's cores for this process; that many threads. 0 makes no thread: Submit
  // then runs the task on the calling thread.
  explicit PrepPool(int cores);
  ~PrepPool();  // waits for running tasks; drops queued ones (their futures report broken_promise)
  PrepPool(const PrepPool&) = delete;
  PrepPool& operator=(const PrepPool&) = delete;

  std::shared_future<void> Submit(std::function<void()> task);

  // Waits for `done` (a submitted task's future) and rethrows its error; the time counts towards
  // idle_core_ms.
  void Wait(const std::shared_future<void>& done);

  // Core time no task used while a thread waited for one (Wait, or a Timing waiting for running
  // tasks to finish), in ms: on a machine of two, a job waiting for a kernel that compiles alone
  // leaves a core idle. Grows over the pool's life.
  double idle_core_ms() const;

  // While one lives, a job of `threads` threads runs on the calling thread.
  class Foreground {
   public:
    Foreground(PrepPool& pool, int threads);
    ~Foreground();
    Foreground(const Foreground&) = delete;
    Foreground& operator=(const Foreground&) = delete;

   private:
    PrepPool& pool_;
  };

  // While one lives, a timing of `threads` threads runs on the calling thread.
  class Timing {
   public:
    Timing(PrepPool& pool, int threads);
    ~Timing();
    Timing(const Timing&) = delete;
    Timing& operator=(const Timing&) = delete;

   private:
    PrepPool& pool_;
  };

  int cores() const { return cores_; }
  int max_running_seen() const;  // for tests: the most tasks that ran at once

 private:
  void Work();
  int Limit() const;  // tasks that may run now (under mutex_)
  void CountIdle();   // adds the idle cores since the last call (under mutex_, before a change)
  const int cores_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::packaged_task<void()>> queue_;
  int running_ = 0, timing_threads_ = 0, max_running_ = 0;
  int waiters_ = 0;      // threads in Wait or in a Timing's start
  int job_threads_ = 0;  // of the job in the Foreground
  double idle_core_ms_ = 0;
  std::chrono::steady_clock::time_point counted_ = std::chrono::steady_clock::now();
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace fusetune
