#pragma once
// The Tuner service, for clients. Handlers are thin: authenticate, check the request
// (request_checks.h), call the task manager, the cache or the job queue, answer. No search logic
// lives here.
#include "db/cache.h"
#include "db/job_queue.h"
#include "proto/fusetune.grpc.pb.h"
#include "server/service/lookup_cache.h"
#include "server/service/metrics.h"
#include "server/service/service_options.h"
#include "server/service/task_manager.h"

namespace fusetune::service {

class TunerService final : public v1::Tuner::Service {
 public:
  // Lookups read `cache`; task and worker listings read `queue`. `metrics` counts submissions and
  // lookups.
  TunerService(db::Cache& cache, const db::JobQueue& queue, TaskManager& tasks,
               const ServiceOptions& options, ServiceMetrics& metrics)
      : cache_(cache), queue_(queue), tasks_(tasks), options_(options), metrics_(metrics) {}

  grpc::Status SubmitTune(grpc::ServerContext* context, const v1::SubmitTuneRequest* request,
                          v1::SubmitTuneResponse* response) override;
  grpc::Status WatchTask(grpc::ServerContext* context, const v1::WatchTaskRequest* request,
                         grpc::ServerWriter<v1::TaskStatus>* writer) override;
  grpc::Status GetTask(grpc::ServerContext* context, const v1::GetTaskRequest* request,
                       v1::TaskStatus* response) override;
  grpc::Status CancelTask(grpc::ServerContext* context, const v1::CancelTaskRequest* request,
                          v1::CancelTaskResponse* response) override;
  grpc::Status ListTasks(grpc::ServerContext* context, const v1::ListTasksRequest* request,
                         v1::ListTasksResponse* response) override;
  grpc::Status LookupBest(grpc::ServerContext* context, const v1::LookupBestRequest* request,
                          v1::LookupBestResponse* response) override;
  grpc::Status ListCache(grpc::ServerContext* context, const v1::ListCacheRequest* request,
                         v1::ListCacheResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context, const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;

 private:
  void Authenticate(const grpc::ServerContext& context) const;
  TaskView ViewOrNotFound(int64_t id) const;
  // A lookup's target: a fingerprint as given, or for ""/"any" the only one workers registered.
  std::string LookupTarget(const std::string& target) const;

  db::Cache& cache_;
  const db::JobQueue& queue_;
  TaskManager& tasks_;
  const ServiceOptions& options_;
  ServiceMetrics& metrics_;
  LookupCache lookups_;
};

// A task as the wire shows it (the result decoded from the stored JSON).
v1::TaskStatus TaskStatusOf(const TaskView& view);
v1::CachedPlan CachedPlanOf(const db::BestPlanRecord& record);

}  // namespace fusetune::service
