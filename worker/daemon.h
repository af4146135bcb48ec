#pragma once
// `fusetune worker`: the benchmark farm's daemon. It registers with the server, then leases one
// job at a time, runs it in its sandbox, reports the result (leasing the next job in the same
// call) and heartbeats meanwhile, which keeps its lease alive. Whenever the server cannot be
// reached it retries with exponential backoff; a finished result is kept and reported once the
// server is back (the server accepts a late report exactly once), so a server restart costs no
// measurement.
#include <atomic>
#include <chrono>
#include <string>

#include "worker/job.h"

namespace fusetune {

struct DaemonOptions {
  std::string server;      // host:port
  std::string token;       // sent as `authorization: Bearer <token>` when not empty
  std::string tls_ca_pem;  // not empty: TLS, trusting these roots
  std::string worker_id;   // empty: <hostname>-<pid>
  std::string target;      // empty: this host's fingerprint (synthetic mode: "synthetic")
  int cores = 0;           // advertised; 0 = the hardware's
  std::chrono::milliseconds job_time_limit{std::chrono::seconds(120)};
  // Answer every job at once with made-up figures instead of measuring (tests of the farm and
  // load generation). Results go under the target "synthetic" unless `target` says otherwise, so
  // they never mix with real measurements.
  bool synthetic = false;
  int job_delay_ms = 0;  // sleep before each job (tests: a window to kill processes in)
};

// Runs until `stop` is set. Returns the exit code: 0 after a stop, 2 when the server refuses the
// worker's token.
int RunWorkerDaemon(const DaemonOptions& options, const std::atomic<bool>& stop);

// Synthetic mode's answer: deterministic figures from each plan's groups (fusing more ops into a
// group is cheaper per op), so a search over them has a definite best plan.
JobResult SyntheticResult(const MeasureJob& job);

}  // namespace fusetune
