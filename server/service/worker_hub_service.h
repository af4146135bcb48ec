#pragma once
// The WorkerHub service, for the benchmark farm: Register, LeaseJob (a long poll), ReportResult
// (optionally leasing the next job in the same call) and Heartbeat. The queue is WorkQueue's, which
// makes each transition and wakes whoever waits for it; this class checks requests and turns rows
// into wire messages.
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "db/cache.h"
#include "proto/fusetune.grpc.pb.h"
#include "server/service/metrics.h"
#include "server/service/service_options.h"
#include "server/service/work_queue.h"

namespace fusetune::service {

class WorkerHubService final : public v1::WorkerHub::Service {
 public:
  // `cache` keeps the targets workers describe; `metrics` counts the measurements reported.
  WorkerHubService(db::Cache& cache, WorkQueue& work, const ServiceOptions& options,
                   ServiceMetrics& metrics)
      : cache_(cache), work_(work), options_(options), metrics_(metrics) {}

  grpc::Status Register(grpc::ServerContext* context, const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override;
  grpc::Status LeaseJob(grpc::ServerContext* context, const v1::LeaseJobRequest* request,
                        v1::LeaseJobResponse* response) override;
  grpc::Status ReportResult(grpc::ServerContext* context, const v1::ReportResultRequest* request,
                            v1::ReportResultResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;

 private:
  void Authenticate(const grpc::ServerContext& context) const;
  // The registered worker's target; FAILED_PRECONDITION when it is unknown (register again).
  std::string TargetOf(const std::string& worker_id);
  // Leases the worker's next job, waiting up to `wait_ms` for one.
  std::optional<v1::MeasurementJob> Lease(grpc::ServerContext& context,
                                          const std::string& worker_id, int wait_ms);

  db::Cache& cache_;
  WorkQueue& work_;
  const ServiceOptions& options_;
  ServiceMetrics& metrics_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::string> targets_;  // worker id -> fingerprint
};

}  // namespace fusetune::service
