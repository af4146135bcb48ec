#pragma once
// `fusetune serve`: the database (its cache and job queue), the task manager, both gRPC services
// (plus health checking and reflection), the lease reaper and, with `metrics_listen`, the metrics
// and status page HTTP server, started and stopped as one.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <grpcpp/server.h>

#include "db/cache.h"
#include "db/database.h"
#include "db/job_queue.h"
#include "server/service/http_status.h"
#include "server/service/idle_verifier.h"
#include "server/service/metrics.h"
#include "server/service/service_options.h"
#include "server/service/task_manager.h"
#include "server/service/tuner_service.h"
#include "server/service/work_queue.h"
#include "server/service/worker_hub_service.h"

namespace fusetune::service {

class Server {
 public:
  // Opens the database (a UserError names a bad file) and builds the services; nothing listens
  // yet.
  explicit Server(ServiceOptions options);
  ~Server();  // Shutdown()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens (UserError when it cannot, on either address) and resumes the unfinished tasks of
  // the store.
  void Start();
  int port() const { return port_; }  // the bound port (the chosen one for port 0)
  // The bound port of the metrics and status page server; 0 when `metrics_listen` is empty.
  int metrics_port() const { return http_ ? http_->port() : 0; }
  // Blocks until Shutdown() is called from another thread.
  void Wait();
  // Stops accepting, interrupts tasks (they stay unfinished in the store), ends long polls.
  void Shutdown();

  db::Cache& cache() { return *cache_; }
  WorkQueue& work() { return *work_; }
  ServiceMetrics& metrics() { return metrics_; }

 private:
  void ReapLeases();
  void StartHttp();

  ServiceOptions options_;
  ServiceMetrics metrics_;
  std::unique_ptr<db::Database> db_;
  std::unique_ptr<db::Cache> cache_;
  std::unique_ptr<db::JobQueue> queue_;
  std::unique_ptr<WorkQueue> work_;
  std::unique_ptr<TaskManager> tasks_;
  std::unique_ptr<TunerService> tuner_;
  std::unique_ptr<WorkerHubService> hub_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<StatusHttpServer> http_;
  std::unique_ptr<IdleVerifier> verifier_;  // with verify_idle
  int port_ = 0;
  std::thread reaper_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopped_ = false;
};

}  // namespace fusetune::service
