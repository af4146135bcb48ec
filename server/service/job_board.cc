#include "server/service/job_board.h"

namespace fusetune::service {

uint64_t JobBoard::WorkVersion() const {
  std::lock_guard lock(mutex_);
  return work_version_;
}

void JobBoard::NotifyWork() {
  {
    std::lock_guard lock(mutex_);
    ++work_version_;
  }
  work_cv_.notify_all();
}

bool JobBoard::WaitForWork(uint64_t seen, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  work_cv_.wait_until(lock, deadline, [&] { return stopped_ || work_version_ != seen; });
  return !stopped_ && work_version_ != seen;
}

JobBoard::Cursor JobBoard::Subscribe() const {
  std::lock_guard lock(mutex_);
  return {log_start_ + log_.size(), poll_epoch_};
}

void JobBoard::JobsFinished(const std::vector<int64_t>& job_ids) {
  if (job_ids.empty()) return;
  {
    std::lock_guard lock(mutex_);
    for (int64_t id : job_ids) log_.push_back(id);
    while (log_.size() > kLogCapacity) {
      log_.pop_front();
      ++log_start_;
    }
  }
  finished_cv_.notify_all();
}

void JobBoard::RequestPoll() {
  {
    std::lock_guard lock(mutex_);
    ++poll_epoch_;
  }
  finished_cv_.notify_all();
}

std::vector<int64_t> JobBoard::WaitFinished(Cursor& cursor, std::chrono::milliseconds timeout,
                                            bool* poll) {
  std::unique_lock lock(mutex_);
  auto end = [&] { return log_start_ + log_.size(); };
  finished_cv_.wait_for(lock, timeout, [&] {
    return stopped_ || cursor.next < end() || cursor.poll_epoch != poll_epoch_;
  });
  *poll = cursor.poll_epoch != poll_epoch_ || cursor.next < log_start_;
  cursor.poll_epoch = poll_epoch_;
  if (cursor.next < log_start_) cursor.next = log_start_;
  std::vector<int64_t> out(log_.begin() + static_cast<ptrdiff_t>(cursor.next - log_start_),
                           log_.end());
  cursor.next = end();
  return out;
}

void JobBoard::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  work_cv_.notify_all();
  finished_cv_.notify_all();
}

bool JobBoard::stopped() const {
  std::lock_guard lock(mutex_);
  return stopped_;
}

}  // namespace fusetune::service
