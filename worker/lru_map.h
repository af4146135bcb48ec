#pragma once
// A map that keeps its most recently used entries within a budget: each entry has a cost (its
// bytes, or 1 to count entries), and adding one evicts the least recently used until the total
// fits. What the worker's caches of kernels, reference values and checked executors share. Not
// thread-safe: an owner that is locks around it.
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace fusetune {

template <class V>
class LruMap {
 public:
  explicit LruMap(int64_t budget) : budget_(budget) {}

  // The value under `key`, now the most recently used; nullptr when there is none.
  V* Find(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    recency_.splice(recency_.begin(), recency_, it->second.position);
    return &it->second.value;
  }

  bool Contains(const std::string& key) const { return entries_.count(key) > 0; }

  // The value under `key` taken out of the map, or nullopt.
  std::optional<V> Take(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    std::optional<V> value(std::move(it->second.value));
    Erase(it);
    return value;
  }

  // `value` under `key` at `cost`, replacing what `key` held, the least recently used evicted
  // until the total fits the budget. A value that alone costs more than the budget is not kept
  // (false), and the map is left as it was.
  bool Put(const std::string& key, V value, int64_t cost) {
    if (cost > budget_) return false;
    if (auto it = entries_.find(key); it != entries_.end()) Erase(it);
    while (cost_ + cost > budget_) Erase(entries_.find(recency_.back()));
    recency_.push_front(key);
    entries_.emplace(key, Entry{std::move(value), cost, recency_.begin()});
    cost_ += cost;
    return true;
  }

  size_t size() const { return entries_.size(); }
  int64_t cost() const { return cost_; }

 private:
  struct Entry {
    V value;
    int64_t cost = 0;
    std::list<std::string>::iterator position;  // in recency_, most recent first
  };
  using Iterator = typename std::unordered_map<std::string, Entry>::iterator;

  void Erase(Iterator it) {
    cost_ -= it->second.cost;
    recency_.erase(it->second.position);
    entries_.erase(it);
  }

  int64_t budget_;
  int64_t cost_ = 0;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> recency_;
};

}  // namespace fusetune
