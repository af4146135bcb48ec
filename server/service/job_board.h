#pragma once
// In-memory notifications between the service's threads; the store stays the truth, this only
// says when to look at it again. Owned by WorkQueue (work_queue.h), which pairs each job
// transition with its notification:
//
//   new or requeued work ──▶ NotifyWork ───▶ workers' long polls (LeaseJob)
//   answered or failed   ──▶ JobsFinished ─▶ tasks waiting for those jobs
//   failed, ids unknown  ──▶ RequestPoll ──▶ every waiting task polls the store
//
// Finished job ids go into a bounded log that each waiting task reads from its own cursor, so a
// report wakes the tasks waiting on it without a store query per task. A task that fell behind
// the log's trimmed start, or is told to RequestPoll (a job failed for good somewhere), polls the
// store instead.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace fusetune::service {

class JobBoard {
 public:
  struct Cursor {
    uint64_t next = 0;        // sequence number of the next finished id to read
    uint64_t poll_epoch = 0;  // RequestPoll generations already seen
  };

  // ---- work for workers ----
  uint64_t WorkVersion() const;
  void NotifyWork();
  // Waits until the work version moves past `seen`, `deadline` passes or Stop(); true when work
  // may be there.
  bool WaitForWork(uint64_t seen, std::chrono::steady_clock::time_point deadline);

  // ---- finished jobs for tasks ----
  Cursor Subscribe() const;  // a cursor at the current end of the log
  void JobsFinished(const std::vector<int64_t>& job_ids);
  // Tells every waiting task to poll the store (a job may have ended without a report).
  void RequestPoll();
  // Finished ids after `cursor` (advancing it); waits up to `timeout` when there are none.
  // `*poll` is set when the caller must poll the store because of a RequestPoll or because
  // entries it had not read were trimmed.
  std::vector<int64_t> WaitFinished(Cursor& cursor, std::chrono::milliseconds timeout, bool* poll);

  // Wakes every waiter for good (server shutdown).
  void Stop();
  bool stopped() const;

 private:
  static constexpr size_t kLogCapacity = 1 << 16;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_, finished_cv_;
  uint64_t work_version_ = 0;
  std::deque<int64_t> log_;
  uint64_t log_start_ = 0;  // sequence number of log_.front()
  uint64_t poll_epoch_ = 0;
  bool stopped_ = false;
};

}  // namespace fusetune::service
