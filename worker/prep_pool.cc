#include "worker/prep_pool.h"

#include <sched.h>

#include <algorithm>

namespace fusetune {

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

PrepPool::PrepPool(int cores) : cores_(std::max(0, cores)) {
  for (int i = 0; i < cores_; ++i) threads_.emplace_back([this] { Work(); });
}

PrepPool::~PrepPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::shared_future<void> PrepPool::Submit(std::function<void()> task) {
  std::packaged_task<void()> packaged(std::move(task));
  std::shared_future<void> done = packaged.get_future().share();
  if (cores_ == 0) {
    packaged();
    return done;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(packaged));
  }
  changed_.notify_all();
  return done;
}

int PrepPool::Limit() const {
  if (timing_threads_ > 0) return std::max(0, cores_ - timing_threads_);
  if (waiters_ > 0) return cores_;
  return std::max(0, cores_ - job_threads_);
}

void PrepPool::Work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || (!queue_.empty() && running_ < Limit()); });
    if (stopping_) return;
    std::packaged_task<void()> task = std::move(queue_.front());
    queue_.pop_front();
    CountIdle();
    ++running_;
    max_running_ = std::max(max_running_, running_);
    lock.unlock();
    task();  // an exception lands in the task's future
    lock.lock();
    CountIdle();
    --running_;
    changed_.notify_all();
  }
}

PrepPool::Foreground::Foreground(PrepPool& pool, int threads) : pool_(pool) {
  std::lock_guard<std::mutex> lock(pool_.mutex_);
  pool_.job_threads_ = std::max(1, threads);
}

PrepPool::Foreground::~Foreground() {
  {
    std::lock_guard<std::mutex> lock(pool_.mutex_);
    pool_.job_threads_ = 0;
  }
  pool_.changed_.notify_all();
}

PrepPool::Timing::Timing(PrepPool& pool, int threads) : pool_(pool) {
  std::unique_lock<std::mutex> lock(pool_.mutex_);
  pool_.CountIdle();
  ++pool_.waiters_;
  if (threads >= pool_.cores_) {
    // No core is left to compile beside this timing: what is queued is done first, on every core
    // (Limit while a thread waits), and the next timings of the jobs sent ahead start at once.
    pool_.changed_.notify_all();
    pool_.changed_.wait(lock, [&] { return pool_.queue_.empty() && pool_.running_ == 0; });
  }
  pool_.timing_threads_ = std::max(1, threads);
  // Tasks already running beyond the free cores finish first (their work is needed anyway).
  pool_.changed_.wait(lock, [&] { return pool_.running_ <= pool_.Limit(); });
  pool_.CountIdle();
  --pool_.waiters_;
}

PrepPool::Timing::~Timing() {
  {
    std::lock_guard<std::mutex> lock(pool_.mutex_);
    pool_.timing_threads_ = 0;
  }
  pool_.changed_.notify_all();
}

void PrepPool::CountIdle() {
  const auto now = std::chrono::steady_clock::now();
  if (waiters_ > 0)
    idle_core_ms_ += std::max(0, cores_ - running_) *
                     std::chrono::duration<double, std::milli>(now - counted_).count();
  counted_ = now;
}

void PrepPool::Wait(const std::shared_future<void>& done) {
  if (cores_ > 0 && done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      CountIdle();
      ++waiters_;
    }
    changed_.notify_all();  // every core may take a task now
    done.wait();
    std::lock_guard<std::mutex> lock(mutex_);
    CountIdle();
    --waiters_;
  }
  done.get();
}

double PrepPool::idle_core_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_core_ms_;
}

int PrepPool::max_running_seen() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_running_;
}

}  // namespace fusetune
