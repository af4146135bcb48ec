#pragma once
// Runs the tuner's measurement jobs on the backend: the request's threads and timing on every job,
// progress reported per phase, and an answer for exactly the plans asked for (a backend that
// answers otherwise gets those jobs marked failed, never misread).
#include <string>
#include <vector>

#include "ir/graph.h"
#include "server/measurement_backend.h"
#include "server/tune_options.h"
#include "worker/job.h"

namespace fusetune {

class JobRunner {
 public:
  JobRunner(MeasurementBackend& backend, const TuneOptions& options, const ProgressFn& progress);

  // The backend's target fingerprint, asked once.
  const std::string& target() const { return target_; }
  // A job that times `plans` of `graph` with the request's threads and timing.
  MeasureJob NewJob(const Graph& graph, std::vector<JobPlan> plans) const;
  // Runs `jobs` (numbered 1..n here) as the progress phase `phase`; results in job order.
  std::vector<JobResult> Run(const std::string& phase, std::vector<MeasureJob> jobs);

 private:
  MeasurementBackend& backend_;
  const TuneOptions& options_;
  const ProgressFn& progress_;
  std::string target_;
};

}  // namespace fusetune
