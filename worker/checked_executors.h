#pragma once
// Executors of plans that ran once and matched the reference in a decision's job (MeasureJob::
// alone), kept for a later job that asks for the same plan of the same graph, on the same inputs
// (seed) and threads. Validation and the whole graph's decision time the same plans again in every
// round, one job per round; for a 12-layer encoder, building an executor, binding (and packing)
// its weights and the checking call cost about as much as timing it, in each of them. The same
// executor on the same inputs computes what it computed when it was checked, so a later round
// times it without checking it again.
//
// Bounded in bytes (an estimate: every value of the graph once, and its parameters and constants
// once more, for weights packed at bind time) to 4 GiB or a quarter of the machine's memory; the
// least recently used leave first. Thread-safe: a job is prepared on another thread than the one
// that runs jobs (worker/job_runner.h).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ir/graph.h"
#include "worker/executor.h"
#include "worker/lru_map.h"

namespace fusetune {

class CheckedExecutors {
 public:
  // The default bound: 4 GiB, or a quarter of the machine's memory when that is less.
  static int64_t DefaultMaxBytes();
  explicit CheckedExecutors(int64_t max_bytes = DefaultMaxBytes());

  struct Checked {
    std::shared_ptr<const Graph> graph;  // the executor reads it for its whole life
    std::unique_ptr<PlanExecutor> executor;
    double max_abs_error = 0;         // its check's
    double max_output_magnitude = 0;  // and the reference's magnitude it was read on
    double call_ms = 0;               // one call, from its last timing
  };
  // What job plans are kept under: the graph's text, the plan's JSON, the inputs' seed, threads.
  static std::string Key(const std::string& graph_text, const std::string& plan_json, uint64_t seed,
                         int threads);
  // Upper bound on what an executor of any plan of `graph` holds.
  static int64_t Bytes(const Graph& graph);

  // The executor kept under `key`, taken out (a job gives it back with Keep after timing it), or
  // an empty Checked.
  Checked Take(const std::string& key);
  void Keep(const std::string& key, Checked checked);
  bool Contains(const std::string& key) const;

  size_t size() const;
  int64_t bytes() const;

 private:
  mutable std::mutex mutex_;
  LruMap<Checked> entries_;  // costs in bytes (Bytes)
};

}  // namespace fusetune
