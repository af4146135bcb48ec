#include "server/service/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "server/service/status_page.h"
#include "server/service/status_snapshot.h"

namespace fusetune::service {

Server::Server(ServiceOptions options) : options_(std::move(options)) {
  db_ = std::make_unique<db::Database>(options_.db_path);
  cache_ = std::make_unique<db::Cache>(*db_);
  queue_ = std::make_unique<db::JobQueue>(*db_);
  work_ = std::make_unique<WorkQueue>(*queue_);
  tasks_ = std::make_unique<TaskManager>(*cache_, *work_, options_);
  tuner_ = std::make_unique<TunerService>(*cache_, *queue_, *tasks_, options_, metrics_);
  hub_ = std::make_unique<WorkerHubService>(*cache_, *work_, options_, metrics_);
}

Server::~Server() { Shutdown(); }

void Server::Start() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (!options_.tls_cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({options_.tls_key_pem, options_.tls_cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  } else {
    credentials = grpc::InsecureServerCredentials();
  }
  builder.AddListeningPort(options_.listen, credentials, &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<int64_t>(options_.max_message_bytes, std::numeric_limits<int>::max())));
  builder.RegisterService(tuner_.get());
  builder.RegisterService(hub_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0)
    throw UserError(
        fmt::format("cannot listen on {} (in use, or not a host:port)", options_.listen));
  if (!options_.metrics_listen.empty()) StartHttp();
  tasks_->ResumeUnfinished();
  reaper_ = std::thread([this] { ReapLeases(); });
  if (options_.verify_idle) {
    verifier_ = std::make_unique<IdleVerifier>(*cache_, *work_, options_);
    verifier_->Start();
  }
}

void Server::StartHttp() {
  constexpr int kRowLimit = 200;  // rows per list on the status page and in /api/status
  StatusHttpServer::Handlers handlers;
  handlers.metrics = [this] { return metrics_.Scrape(*cache_, *queue_); };
  handlers.status_json = [this] {
    return StatusToJson(TakeStatusSnapshot(*cache_, *queue_, tasks_.get(), kRowLimit))
        .dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  handlers.status_html = [this] {
    return RenderStatusPage(TakeStatusSnapshot(*cache_, *queue_, tasks_.get(), kRowLimit));
  };
  http_ = std::make_unique<StatusHttpServer>(std::move(handlers));
  http_->Start(options_.metrics_listen);
}

void Server::Wait() {
  std::unique_lock lock(mutex_);
  stop_cv_.wait(lock, [&] { return stopped_; });
}

void Server::Shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  stop_cv_.notify_all();
  if (http_) http_->Stop();
  if (verifier_) verifier_->Stop();
  work_->Stop();
  tasks_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (reaper_.joinable()) reaper_.join();
}

// Expired leases go back to the queue and silent workers are marked offline. Nothing is reaped
// during the first lease period after a start: leases of workers that kept measuring while the
// server was down are extended by their next heartbeat instead of being handed to another worker.
void Server::ReapLeases() {
  const auto started = std::chrono::steady_clock::now();
  const auto grace = std::chrono::milliseconds(options_.lease_ms);
  std::unique_lock lock(mutex_);
  while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopped_; })) {
    if (std::chrono::steady_clock::now() - started < grace) continue;
    lock.unlock();
    try {
      db::RequeueStats stats = work_->RequeueExpiredLeases();
      if (stats.requeued + stats.failed > 0)
        spdlog::info("leases expired: {} jobs requeued, {} out of attempts", stats.requeued,
                     stats.failed);
      queue_->MarkWorkersOffline(db::NowMs() - options_.lease_ms);
    } catch (const std::exception& e) {
      spdlog::error("lease reaper: {}", e.what());
    }
    lock.lock();
  }
}

}  // namespace fusetune::service
