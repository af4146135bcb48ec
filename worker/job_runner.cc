// Runs a measurement job in this process (see job.h).
#include "worker/job.h"

namespace fusetune {

JobResult RunJob(const MeasureJob& job) {
  // TODO(lead): run through worker/executor once it lands.
  return FailedResult(job, "this worker cannot run kernels yet");
}

}  // namespace fusetune
