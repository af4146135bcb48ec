#pragma once
// Runs the tuner's measurement jobs on the backend: every job gets its id and the request's threads
// and timing here, progress is reported per phase, and each job is answered for exactly the plans
// it asked for (a backend that answers otherwise gets those jobs marked failed, never misread).
#include <string>
#include <utility>
#include <vector>

#include "server/measurement_backend.h"
#include "server/tune_options.h"
#include "worker/job.h"

namespace fusetune {

class JobRunner {
 public:
  JobRunner(MeasurementBackend& backend, const TuneOptions& options, const ProgressFn& progress);

  // The backend's target fingerprint, asked once.
  const std::string& target() const { return target_; }
  // Runs `jobs` (numbered 1..n, with the request's threads and timing) as the progress phase
  // `phase`; results in job order.
  std::vector<JobResult> Run(const std::string& phase, std::vector<MeasureJob> jobs);

  // Where the time of every Run went: wall seconds per progress phase (in first-run order), and
  // the jobs' own phases summed (worker/job.h), for the report's breakdown.
  const std::vector<std::pair<std::string, double>>& stage_seconds() const { return stages_; }
  const JobPhases& job_phases() const { return job_phases_; }

 private:
  MeasurementBackend& backend_;
  const TuneOptions& options_;
  const ProgressFn& progress_;
  std::string target_;
  std::vector<std::pair<std::string, double>> stages_;
  JobPhases job_phases_;
};

}  // namespace fusetune
