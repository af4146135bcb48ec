#include "worker/checked_executors.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace fusetune {

int64_t CheckedExecutors::DefaultMaxBytes() {
  const int64_t bound = int64_t{4} << 30;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return bound;
  return std::min(bound, static_cast<int64_t>(pages) * page / 4);
}

CheckedExecutors::CheckedExecutors(int64_t max_bytes) : entries_(max_bytes) {}

std::string CheckedExecutors::Key(const std::string& graph_text, const std::string& plan_json,
                                  uint64_t seed, int threads) {
  return fmt::format("{}\n{}\n{}\n{}", seed, threads, plan_json, graph_text);
}

int64_t CheckedExecutors::Bytes(const Graph& graph) {
  int64_t bytes = 0;
  for (const Value& value : graph.values())
    bytes += value.type.NumBytes() * (value.kind == ValueKind::kNode ? 1 : 2);
  return bytes;
}

CheckedExecutors::Checked CheckedExecutors::Take(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<Checked> checked = entries_.Take(key);
  return checked ? std::move(*checked) : Checked{};
}

void CheckedExecutors::Keep(const std::string& key, Checked checked) {
  const int64_t bytes = Bytes(*checked.graph);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.Put(key, std::move(checked), bytes);
}

bool CheckedExecutors::Contains(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.Contains(key);
}

size_t CheckedExecutors::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

int64_t CheckedExecutors::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.cost();
}

}  // namespace fusetune
