#pragma once
// The WorkerHub service, for the benchmark farm: Register, LeaseJob (a long poll), ReportResult
// (optionally leasing the next job in the same call) and Heartbeat. The queue itself is the
// store's; this class turns its rows into wire messages and wakes waiting tasks and workers.
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "db/store.h"
#include "proto/fusetune.grpc.pb.h"
#include "server/service/job_board.h"
#include "server/service/metrics.h"
#include "server/service/service_options.h"

namespace fusetune::service {

class WorkerHubService final : public v1::WorkerHub::Service {
 public:
  // `metrics` counts the measurements reported.
  WorkerHubService(db::Store& store, JobBoard& board, const ServiceOptions& options,
                   ServiceMetrics& metrics)
      : store_(store), board_(board), options_(options), metrics_(metrics) {}

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

  db::Store& store_;
  JobBoard& board_;
  const ServiceOptions& options_;
  ServiceMetrics& metrics_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::string> targets_;  // worker id -> fingerprint
};

}  // namespace fusetune::service
