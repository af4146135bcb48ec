#pragma once
// Where measurement jobs run: an in-process sandbox child (client/local_backend.h) or the
// service's worker farm (server/service/queue_backend.h). The tuner only hands it jobs.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "worker/job.h"

namespace fusetune {

class MeasurementBackend {
 public:
  virtual ~MeasurementBackend() = default;
  virtual std::string TargetFingerprint() = 0;
  // Runs every job, in any order; results in the order of `jobs`. `on_done` is called once per
  // finished job (from the calling thread).
  virtual std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                         const std::function<void(size_t finished)>& on_done) = 0;
};

struct TuneProgress {
  std::string phase;  // "calibrating", "measuring", "validating", "timing"
  size_t done = 0, total = 0;
};
using ProgressFn = std::function<void(const TuneProgress&)>;

}  // namespace fusetune
