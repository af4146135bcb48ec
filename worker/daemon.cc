#include "worker/daemon.h"

#include <unistd.h>

#include <cmath>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/version.h"
#include "proto/fusetune.grpc.pb.h"
#include "worker/codegen/target.h"
#include "worker/job_proto.h"
#include "worker/sandbox.h"

namespace fusetune {
namespace {

constexpr int kLeaseWaitMs = 2000;
constexpr auto kRpcSlack = std::chrono::seconds(10);  // beyond a long poll's wait

// Exponential backoff with jitter, 100 ms doubling to 2 s: short enough that a restarted server
// hears from its workers well within a lease period.
class Backoff {
 public:
  std::chrono::milliseconds Next() {
    auto base = delay_;
    delay_ = std::min(delay_ * 2, std::chrono::milliseconds(2000));
    std::uniform_int_distribution<int> jitter(0, static_cast<int>(base.count() / 2));
    return base + std::chrono::milliseconds(jitter(rng_));
  }
  void Reset() { delay_ = std::chrono::milliseconds(100); }

 private:
  std::chrono::milliseconds delay_{100};
  std::mt19937 rng_{std::random_device{}()};
};

// Sleeps up to `d`, returning early when `stop` is set.
void SleepUnlessStopped(std::chrono::milliseconds d, const std::atomic<bool>& stop) {
  auto end = std::chrono::steady_clock::now() + d;
  while (!stop && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::min(d, std::chrono::milliseconds(50)));
}

std::string DefaultWorkerId() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return fmt::format("{}-{}", host, ::getpid());
}

class Daemon {
 public:
  Daemon(const DaemonOptions& options, const std::atomic<bool>& stop)
      : options_(options), stop_(stop), sandbox_(options.job_time_limit) {
    Reconnect();
    worker_id_ = options.worker_id.empty() ? DefaultWorkerId() : options.worker_id;
    if (!options.target.empty()) {
      target_.set_fingerprint(options.target);
    } else if (options.synthetic) {
      target_.set_fingerprint("synthetic");
    } else {
      const codegen::TargetInfo& host = codegen::HostTarget();
      target_.set_fingerprint(host.Fingerprint());
      target_.set_cpu(host.cpu_key);
      target_.set_triple(host.triple);
      for (const std::string& f : host.features) target_.add_features(f);
    }
    cores_ =
        options.cores > 0 ? options.cores : static_cast<int>(std::thread::hardware_concurrency());
    target_.set_cores(cores_);
  }

  int Run() {
    std::thread heartbeat([this] { HeartbeatLoop(); });
    int code = MainLoop();
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    heartbeat.join();
    return code;
  }

 private:
  // A fresh channel. gRPC reuses a subchannel, with its reconnect backoff, across channels of
  // one process; a local subchannel pool makes the new channel connect at once. Called after a
  // call finds the server unreachable, so a restarted server hears from this worker within a
  // backoff step instead of gRPC's own (up to minutes).
  void Reconnect() {
    std::shared_ptr<grpc::ChannelCredentials> credentials =
        options_.tls_ca_pem.empty()
            ? grpc::InsecureChannelCredentials()
            : grpc::SslCredentials(grpc::SslCredentialsOptions{options_.tls_ca_pem, "", ""});
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    auto stub =
        v1::WorkerHub::NewStub(grpc::CreateCustomChannel(options_.server, credentials, args));
    std::lock_guard lock(stub_mutex_);
    stub_ = std::move(stub);
  }
  std::shared_ptr<v1::WorkerHub::Stub> Stub() {
    std::lock_guard lock(stub_mutex_);
    return stub_;
  }

  void Prepare(grpc::ClientContext& context, std::chrono::milliseconds timeout) const {
    if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
    context.set_deadline(std::chrono::system_clock::now() + timeout);
  }

  // Returns false when the server refused the token (fatal).
  bool Register() {
    for (Backoff backoff; !stop_;) {
      grpc::ClientContext context;
      Prepare(context, std::chrono::seconds(10));
      v1::RegisterRequest request;
      request.set_worker_id(worker_id_);
      *request.mutable_target() = target_;
      request.set_cores(cores_);
      request.set_version(std::string("fusetune ") + Version());
      v1::RegisterResponse response;
      grpc::Status status = Stub()->Register(&context, request, &response);
      if (status.ok()) {
        std::lock_guard lock(mutex_);
        worker_id_ = response.worker_id();
        heartbeat_interval_ =
            std::chrono::milliseconds(std::max(100, response.heartbeat_interval_ms()));
        registered_ = true;
        spdlog::info("registered with {} as {}", options_.server, worker_id_);
        return true;
      }
      if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
          status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
        spdlog::error("the server refused this worker: {}", status.error_message());
        return false;
      }
      auto wait = backoff.Next();
      spdlog::warn("cannot reach {} ({}); retrying in {} ms", options_.server,
                   status.error_message(), wait.count());
      SleepUnlessStopped(wait, stop_);
      Reconnect();
    }
    return true;
  }

  bool registered() {
    std::lock_guard lock(mutex_);
    return registered_;
  }
  void Forget() {
    std::lock_guard lock(mutex_);
    registered_ = false;
  }

  int MainLoop() {
    std::optional<v1::MeasurementJob> next;
    Backoff backoff;
    while (!stop_) {
      if (!registered() && !Register()) return 2;
      if (stop_) break;
      if (!next) {
        grpc::ClientContext context;
        Prepare(context, std::chrono::milliseconds(kLeaseWaitMs) + kRpcSlack);
        v1::LeaseJobRequest request;
        request.set_worker_id(worker_id_);
        request.set_wait_ms(kLeaseWaitMs);
        v1::LeaseJobResponse response;
        grpc::Status status = Stub()->LeaseJob(&context, request, &response);
        if (!status.ok()) {
          if (!HandleError(status, "lease", backoff)) return 2;
          continue;
        }
        backoff.Reset();
        if (!response.has_job()) continue;
        next = response.job();
      }
      // Heartbeats from now on name this job, which keeps its lease (and only it) alive.
      SetCurrentJob(next->job_id());
      v1::MeasurementJob job = std::move(*next);
      next.reset();
      v1::MeasurementResult result = RunOne(job);
      if (!Report(result, next)) return 2;
    }
    return 0;
  }

  // Logs a failed call and decides what follows; false when the worker must exit.
  bool HandleError(const grpc::Status& status, const char* what, Backoff& backoff) {
    switch (status.error_code()) {
      case grpc::StatusCode::UNAUTHENTICATED:
        spdlog::error("the server refused this worker: {}", status.error_message());
        return false;
      case grpc::StatusCode::FAILED_PRECONDITION:
        spdlog::warn("{}: {}; registering again", what, status.error_message());
        Forget();
        return true;
      default: {
        auto wait = backoff.Next();
        spdlog::warn("{}: {} ({}); retrying in {} ms", what, status.error_message(),
                     static_cast<int>(status.error_code()), wait.count());
        SleepUnlessStopped(wait, stop_);
        if (status.error_code() == grpc::StatusCode::UNAVAILABLE) Reconnect();
        return true;
      }
    }
  }

  void SetCurrentJob(int64_t id) {
    std::lock_guard lock(mutex_);
    current_job_ = id;
  }

  v1::MeasurementResult RunOne(const v1::MeasurementJob& message) {
    auto start = std::chrono::steady_clock::now();
    const double idle_ms = std::chrono::duration<double, std::milli>(start - last_job_end_).count();
    v1::MeasurementResult out;
    try {
      MeasureJob job = JobFromProto(message);
      if (options_.job_delay_ms > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(options_.job_delay_ms));
      JobResult result = options_.synthetic ? SyntheticResult(job) : sandbox_.Run(job);
      result.id = message.job_id();
      result.target = target_.fingerprint();
      result.phases.idle_ms = idle_ms;
      out = ResultToProto(result);
      int ran = 0;
      for (const PlanResult& p : result.plans) ran += p.ok ? 1 : 0;
      spdlog::info(
          "job {} done in {:.0f} ms ({} of {} plans ran)", message.job_id(),
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count(),
          ran, result.plans.size());
      spdlog::debug("job {} phases: {}", message.job_id(), DescribePhases(result.phases));
    } catch (const std::exception& e) {
      out.set_job_id(message.job_id());
      out.set_failure(fmt::format("the worker could not read the job: {}", e.what()));
      spdlog::warn("job {}: {}", message.job_id(), out.failure());
    }
    out.set_worker_id(worker_id_);
    last_job_end_ = std::chrono::steady_clock::now();
    return out;
  }

  // Reports until the server has the result (or says it cannot take it); leases the next job in
  // the same call. False when the worker must exit.
  bool Report(const v1::MeasurementResult& result, std::optional<v1::MeasurementJob>& next) {
    for (Backoff backoff; !stop_;) {
      if (!registered() && !Register()) return false;
      grpc::ClientContext context;
      Prepare(context, std::chrono::milliseconds(kLeaseWaitMs) + kRpcSlack);
      v1::ReportResultRequest request;
      *request.mutable_result() = result;
      request.mutable_result()->set_worker_id(worker_id_);
      request.set_lease_next(true);
      request.set_wait_ms(kLeaseWaitMs);
      v1::ReportResultResponse response;
      grpc::Status status = Stub()->ReportResult(&context, request, &response);
      if (status.ok()) {
        if (response.duplicate())
          spdlog::info("job {} was already done elsewhere", result.job_id());
        if (response.has_next_job()) next = response.next_job();
        SetCurrentJob(next ? next->job_id() : 0);
        return true;
      }
      if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
          status.error_code() == grpc::StatusCode::NOT_FOUND) {
        spdlog::error("the server refused the result of job {}: {}", result.job_id(),
                      status.error_message());
        return true;
      }
      if (!HandleError(status, "report", backoff)) return false;
    }
    return true;
  }

  void HeartbeatLoop() {
    for (;;) {
      std::chrono::milliseconds interval;
      int64_t current;
      bool registered;
      std::string id;
      {
        std::lock_guard lock(mutex_);
        if (done_) return;
        interval = heartbeat_interval_;
        current = current_job_;
        registered = registered_;
        id = worker_id_;
      }
      SleepUntilDone(interval);
      if (!registered) continue;
      grpc::ClientContext context;
      Prepare(context, std::chrono::seconds(5));
      v1::HeartbeatRequest request;
      request.set_worker_id(id);
      request.set_current_job_id(current);
      v1::HeartbeatResponse response;
      grpc::Status status = Stub()->Heartbeat(&context, request, &response);
      if (status.ok() && !response.registered()) {
        spdlog::warn("the server does not know this worker; registering again");
        Forget();
      }
    }
  }

  void SleepUntilDone(std::chrono::milliseconds d) {
    auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard lock(mutex_);
        if (done_) return;
      }
      std::this_thread::sleep_for(std::min(d, std::chrono::milliseconds(50)));
    }
  }

  const DaemonOptions& options_;
  const std::atomic<bool>& stop_;
  Sandbox sandbox_;
  std::mutex stub_mutex_;
  std::shared_ptr<v1::WorkerHub::Stub> stub_;
  v1::Target target_;
  int cores_ = 1;
  std::mutex mutex_;
  std::string worker_id_;
  bool registered_ = false;
  bool done_ = false;
  int64_t current_job_ = 0;
  std::chrono::milliseconds heartbeat_interval_{1000};
  // When the last job ended (first: when the daemon started): the next job's idle time from here.
  std::chrono::steady_clock::time_point last_job_end_ = std::chrono::steady_clock::now();
};

}  // namespace

int RunWorkerDaemon(const DaemonOptions& options, const std::atomic<bool>& stop) {
  return Daemon(options, stop).Run();
}

JobResult SyntheticResult(const MeasureJob& job) {
  JobResult result;
  result.id = job.id;
  for (const JobPlan& plan : job.plans) {
    PlanResult t;
    t.name = plan.name;
    nlohmann::json doc = nlohmann::json::parse(plan.json);
    for (const auto& group : doc.at("groups")) {
      // 4 µs per op plus 6 µs per kernel launch, and schedules differ by a few percent.
      double ops = static_cast<double>(group.at("nodes").size());
      std::string schedule = group.value("schedule", "");
      double factor = 1.0 + 0.03 * static_cast<double>(std::hash<std::string>{}(schedule) % 4);
      double us = (6.0 + 4.0 * ops) * factor;
      t.kernel_us.push_back(us);
      t.median_us += us;
    }
    t.ok = t.median_us > 0;
    if (!t.ok) t.reason = "the plan has no groups";
    t.min_us = t.median_us * 0.98;
    t.number = t.ok ? 1 : 0;
    t.repeat = t.ok ? 1 : 0;
    result.plans.push_back(std::move(t));
  }
  return result;
}

}  // namespace fusetune
