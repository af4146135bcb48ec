#include "server/service/worker_hub_service.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/error.h"
#include "server/service/auth.h"
#include "server/service/request_checks.h"
#include "server/service/status_error.h"
#include "worker/job_proto.h"

namespace fusetune::service {
namespace {

std::string NewWorkerId() {
  std::random_device rd;
  return fmt::format("worker-{:08x}", rd());
}

void CheckWorkerId(const std::string& id) {
  if (id.empty()) throw UserError("worker_id: empty (register first to get one)");
  CheckLabel(id, "worker_id", 128);
}

}  // namespace

void WorkerHubService::Authenticate(const grpc::ServerContext& context) const {
  RequireToken(context,
               options_.worker_token.empty() ? options_.client_token : options_.worker_token,
               "worker");
}

std::string WorkerHubService::TargetOf(const std::string& worker_id) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = targets_.find(worker_id); it != targets_.end()) return it->second;
  }
  std::optional<db::WorkerRecord> worker = work_.store().FindWorker(worker_id);
  if (!worker)
    throw StatusError(
        grpc::StatusCode::FAILED_PRECONDITION,
        fmt::format("worker_id: '{}' is not registered; call Register first", worker_id));
  std::lock_guard lock(mutex_);
  targets_[worker_id] = worker->target_fingerprint;
  return worker->target_fingerprint;
}

grpc::Status WorkerHubService::Register(grpc::ServerContext* context,
                                        const v1::RegisterRequest* request,
                                        v1::RegisterResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    std::string id = request->worker_id().empty() ? NewWorkerId() : request->worker_id();
    CheckWorkerId(id);
    const v1::Target& target = request->target();
    if (target.fingerprint().empty())
      throw UserError("target.fingerprint: empty (a worker names the CPU it measures on)");
    if (target.fingerprint() == "any")
      throw UserError("target.fingerprint: \"any\" names no CPU; send the worker's fingerprint");
    CheckLabel(target.fingerprint(), "target.fingerprint", 4096);
    if (request->cores() < 0 || request->cores() > 65536)
      throw UserError(fmt::format("cores: must be between 0 and 65536, got {}", request->cores()));
    CheckLabel(request->version(), "version", 128);

    // The target's figures first: a task woken by the registration reads them.
    if (target.peak_gflops() > 0 && target.bandwidth_gbs() > 0) {
      db::TargetRecord t;
      t.fingerprint = target.fingerprint();
      t.cpu = target.cpu();
      t.triple = target.triple();
      for (const std::string& f : target.features())
        t.features += (t.features.empty() ? "" : ",") + f;
      t.cores = target.cores();
      t.peak_gflops = target.peak_gflops();
      t.bandwidth_gbs = target.bandwidth_gbs();
      t.measured_at = target.measured_at_ms();
      cache_.PutTarget(t);
    }
    db::WorkerRecord worker;
    worker.id = id;
    worker.target_fingerprint = target.fingerprint();
    worker.cores = request->cores();
    worker.version = request->version();
    work_.RegisterWorker(worker);  // releases the leases of a worker that registers again
    {
      std::lock_guard lock(mutex_);
      targets_[id] = worker.target_fingerprint;
    }
    spdlog::info("worker {} registered ({} cores, {})", id, worker.cores,
                 worker.target_fingerprint.substr(0, 60));
    response->set_worker_id(id);
    response->set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
    response->set_lease_ms(options_.lease_ms);
  });
}

std::optional<v1::MeasurementJob> WorkerHubService::Lease(grpc::ServerContext& context,
                                                          const std::string& worker_id,
                                                          int wait_ms) {
  if (wait_ms < 0) throw UserError(fmt::format("wait_ms: must not be negative, got {}", wait_ms));
  std::string target = TargetOf(worker_id);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(std::min(wait_ms, options_.max_lease_wait_ms));
  for (;;) {
    uint64_t seen = work_.WorkVersion();
    if (std::optional<db::JobRecord> row = work_.Lease(worker_id, target, options_.lease_ms)) {
      MeasureJob job = JobFromJson(std::string(row->payload.begin(), row->payload.end()));
      job.id = row->id;
      v1::MeasurementJob message = JobToProto(job);
      message.set_lease_deadline_ms(row->lease_deadline);
      message.set_attempt(row->attempts);
      return message;
    }
    if (work_.stopped()) throw StatusError(grpc::StatusCode::UNAVAILABLE, "the server is stopping");
    if (std::chrono::steady_clock::now() >= deadline || context.IsCancelled()) return std::nullopt;
    // Wake on new work, and at least every 250 ms (a lease may have expired meanwhile).
    work_.WaitForWork(seen, std::min(deadline, std::chrono::steady_clock::now() +
                                                   std::chrono::milliseconds(250)));
  }
}

grpc::Status WorkerHubService::LeaseJob(grpc::ServerContext* context,
                                        const v1::LeaseJobRequest* request,
                                        v1::LeaseJobResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    CheckWorkerId(request->worker_id());
    if (auto job = Lease(*context, request->worker_id(), request->wait_ms())) {
      *response->mutable_job() = std::move(*job);
    } else {
      response->set_retry_after_ms(std::min(1000, options_.max_lease_wait_ms));
    }
  });
}

grpc::Status WorkerHubService::ReportResult(grpc::ServerContext* context,
                                            const v1::ReportResultRequest* request,
                                            v1::ReportResultResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    const v1::MeasurementResult& r = request->result();
    CheckWorkerId(r.worker_id());
    if (r.job_id() <= 0)
      throw UserError(fmt::format("result.job_id: job ids are positive, got {}", r.job_id()));
    std::string target = TargetOf(r.worker_id());
    if (!r.failure().empty()) {
      // The worker could not measure: another attempt, or failed for good.
      bool recorded =
          work_.FailAttempt(r.job_id(), r.worker_id(), r.failure().substr(0, 4096)).has_value();
      response->set_accepted(recorded);
      if (recorded) metrics_.CountFailedAttempt();
    } else {
      JobResult result = ResultFromProto(r);
      if (result.plans.empty()) throw UserError("result.plans: empty (and no failure given)");
      if (!r.target_fingerprint().empty() && r.target_fingerprint() != target)
        throw UserError(
            fmt::format("result.target_fingerprint: '{}' is not the target worker "
                        "'{}' registered with",
                        r.target_fingerprint().substr(0, 200), r.worker_id()));
      result.target = target;
      std::string json = ResultToJson(result);
      db::ReportOutcome outcome =
          work_.Complete(r.job_id(), target, std::vector<uint8_t>(json.begin(), json.end()));
      switch (outcome) {
        case db::ReportOutcome::kUnknownJob:
          throw StatusError(grpc::StatusCode::NOT_FOUND,
                            fmt::format("result.job_id: no job {} on the queue", r.job_id()));
        case db::ReportOutcome::kDuplicate:
          response->set_duplicate(true);
          break;
        case db::ReportOutcome::kCompleted: {
          response->set_accepted(true);
          int64_t ok = std::count_if(result.plans.begin(), result.plans.end(),
                                     [](const PlanResult& plan) { return plan.ok; });
          metrics_.CountMeasurements(ok, static_cast<int64_t>(result.plans.size()) - ok);
          break;
        }
      }
    }
    if (request->lease_next()) {
      if (auto job = Lease(*context, r.worker_id(), request->wait_ms()))
        *response->mutable_next_job() = std::move(*job);
    }
  });
}

grpc::Status WorkerHubService::Heartbeat(grpc::ServerContext* context,
                                         const v1::HeartbeatRequest* request,
                                         v1::HeartbeatResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    CheckWorkerId(request->worker_id());
    if (request->current_job_id() < 0)
      throw UserError(
          fmt::format("current_job_id: must not be negative, got {}", request->current_job_id()));
    response->set_registered(work_.store().Heartbeat(request->worker_id(),
                                                     request->current_job_id(), options_.lease_ms));
    if (!response->registered()) {
      std::lock_guard lock(mutex_);
      targets_.erase(request->worker_id());
    }
  });
}

}  // namespace fusetune::service
