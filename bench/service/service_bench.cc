// service_bench: a load generator for `fusetune serve`, run against an in-process server on
// 127.0.0.1 with a fresh SQLite file. Two figures (BENCHMARKS.md, "Service"):
//
//   lookup    LookupBest latency (p50, p99) and throughput, by region signature and by graph,
//             with C client threads each on its own channel, closed loop for D seconds.
//   dispatch  jobs per second through the durable queue: a task's RunJobs (enqueue, wait) while W
//             synthetic workers lease, answer at once and report (one ReportResult per job, which
//             also leases the next).
//
// Usage: service_bench [--clients C] [--seconds D] [--workers W] [--jobs N] [--only
// lookup|dispatch]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "ir/text/relay_parser.h"
#include "proto/fusetune.grpc.pb.h"
#include "server/service/queue_backend.h"
#include "server/service/server.h"
#include "server/tuner.h"
#include "worker/job_proto.h"

namespace fusetune {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kTarget = "bench-cpu";

// Answers every plan at once with made-up figures (4 µs per op, 6 µs per kernel).
JobResult Answer(const MeasureJob& job) {
  JobResult r;
  r.id = job.id;
  r.target = kTarget;
  for (const JobPlan& p : job.plans) {
    decltype(r.plans)::value_type t;  // one plan's figures
    t.name = p.name;
    const nlohmann::json plan = nlohmann::json::parse(p.json);
    for (const auto& g : plan.at("groups")) {
      double us = 6.0 + 4.0 * static_cast<double>(g.at("nodes").size());
      t.kernel_us.push_back(us);
      t.median_us += us;
    }
    t.ok = true;
    t.min_us = t.median_us;
    t.number = t.repeat = 1;
    r.plans.push_back(t);
  }
  return r;
}

// Fills the cache for `graph` in-process, so lookups find plans.
struct InstantBackend : MeasurementBackend {
  std::string TargetFingerprint() override { return kTarget; }
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t)>&) override {
    std::vector<JobResult> out;
    for (const MeasureJob& j : jobs) out.push_back(Answer(j));
    return out;
  }
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

struct LoadResult {
  double p50_ms = 0, p99_ms = 0, per_second = 0;
  int64_t calls = 0, errors = 0;
};

// `clients` threads call `request` in a closed loop for `seconds`.
LoadResult Load(const std::string& address, int clients, double seconds,
                const v1::LookupBestRequest& request, bool expect_found) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int64_t> errors{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      grpc::ChannelArguments args;
      args.SetInt("fusetune.bench.channel", c);  // a channel (connection) per client
      auto stub = v1::Tuner::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
      v1::LookupBestResponse warm;
      grpc::ClientContext warm_context;
      (void)stub->LookupBest(&warm_context, request, &warm);
      while (!go) std::this_thread::yield();
      auto end = Clock::now() + std::chrono::duration<double>(seconds);
      while (Clock::now() < end) {
        grpc::ClientContext context;
        v1::LookupBestResponse response;
        auto t0 = Clock::now();
        grpc::Status s = stub->LookupBest(&context, request, &response);
        auto t1 = Clock::now();
        bool found =
            response.has_plan() || (response.regions_size() > 0 && response.missing_size() == 0);
        if (!s.ok() || found != expect_found) ++errors;
        latencies[c].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    });
  }
  auto start = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  LoadResult r;
  r.calls = static_cast<int64_t>(all.size());
  r.errors = errors;
  r.per_second = static_cast<double>(all.size()) / elapsed;
  r.p50_ms = Percentile(all, 0.50);
  r.p99_ms = Percentile(all, 0.99);
  return r;
}

void Print(const std::string& what, int clients, const LoadResult& r) {
  std::printf("%-34s clients=%-2d calls=%-7lld p50=%6.3f ms  p99=%6.3f ms  %8.0f lookups/s%s\n",
              what.c_str(), clients, static_cast<long long>(r.calls), r.p50_ms, r.p99_ms,
              r.per_second, r.errors ? fmt::format("  ({} errors)", r.errors).c_str() : "");
  std::fflush(stdout);
}

void LookupBench(service::Server& server, const std::string& address, int clients, double seconds) {
  const std::string examples = std::string(FUSETUNE_SOURCE_DIR) + "/examples/";
  std::vector<std::pair<std::string, std::string>> graphs;
  for (const char* name : {"bmm_where_s256.relay", "bert_layer_s128.relay"}) {
    std::string text = ReadFile(examples + name);
    if (text.empty()) continue;
    Graph g = ParseRelay(text, name);
    InstantBackend backend;
    TuneOptions options;
    TuneReport report = Tune(g, options, server.cache(), backend);
    std::printf("cached %s: %zu regions\n", name, report.regions.size());
    graphs.push_back({name, text});
  }
  auto plans = server.cache().ListBestPlans();
  if (plans.empty()) throw std::runtime_error("no plans cached");

  v1::LookupBestRequest by_signature;
  by_signature.set_region_signature(plans[0].key.region_signature);
  by_signature.set_target(kTarget);
  for (int c : {1, clients})
    Print("LookupBest by region signature", c, Load(address, c, seconds, by_signature, true));
  for (const auto& [name, text] : graphs) {
    v1::LookupBestRequest by_graph;
    by_graph.mutable_graph()->set_relay_text(text);
    by_graph.set_target(kTarget);
    for (int c : {1, clients})
      Print("LookupBest by graph " + name, c, Load(address, c, seconds, by_graph, true));
  }
}

// Synthetic workers: register, then lease / answer at once / report, until `stop`.
void SyntheticWorker(const std::string& address, int index, const std::atomic<bool>& stop,
                     std::atomic<int64_t>& answered) {
  grpc::ChannelArguments args;
  args.SetInt("fusetune.bench.worker", index);
  auto hub = v1::WorkerHub::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  v1::RegisterRequest reg;
  reg.set_worker_id(fmt::format("bench-worker-{}", index));
  reg.mutable_target()->set_fingerprint(kTarget);
  v1::RegisterResponse reg_response;
  grpc::ClientContext reg_context;
  if (!hub->Register(&reg_context, reg, &reg_response).ok()) return;
  std::optional<v1::MeasurementJob> job;
  while (!stop) {
    if (!job) {
      grpc::ClientContext context;
      v1::LeaseJobRequest request;
      request.set_worker_id(reg.worker_id());
      request.set_wait_ms(200);
      v1::LeaseJobResponse response;
      if (!hub->LeaseJob(&context, request, &response).ok()) return;
      if (response.has_job()) job = response.job();
      continue;
    }
    JobResult result = Answer(JobFromProto(*job));
    result.id = job->job_id();
    grpc::ClientContext context;
    v1::ReportResultRequest request;
    *request.mutable_result() = ResultToProto(result);
    request.mutable_result()->set_worker_id(reg.worker_id());
    request.set_lease_next(true);
    request.set_wait_ms(200);
    v1::ReportResultResponse response;
    if (!hub->ReportResult(&context, request, &response).ok()) return;
    ++answered;
    job.reset();
    if (response.has_next_job()) job = response.next_job();
  }
}

void DispatchBench(service::Server& server, const std::string& address, int workers,
                   int jobs_per_round) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> answered{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] { SyntheticWorker(address, w, stop, answered); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // registered
  // One candidate job as the tuner writes it; `seed` makes each distinct (a distinct queue row).
  MeasureJob base;
  base.graph_text =
      "fn (%p0: Tensor[(128, 128), float32]) {\n  %n0 = exp(%p0);\n  negative(%n0)\n}\n";
  base.plans.push_back({"s0", R"({"plan":"g","groups":[{"nodes":["%n0","%n1"],"schedule":""}]})"});
  for (int round = 0; round < 3; ++round) {
    db::TaskRecord task;
    task.graph_text = base.graph_text;
    task.target = kTarget;
    int64_t task_id = server.work().store().CreateTask(task);
    std::vector<MeasureJob> jobs;
    for (int i = 0; i < jobs_per_round; ++i) {
      MeasureJob j = base;
      j.id = i + 1;
      j.seed = static_cast<uint64_t>(round) * 1000000 + static_cast<uint64_t>(i) + 1;
      jobs.push_back(j);
    }
    std::atomic<int> interrupt{service::kRun};
    service::QueueBackend backend(server.work(), task_id, kTarget, 3, interrupt);
    auto t0 = Clock::now();
    std::vector<JobResult> results = backend.RunJobs(jobs, {});
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    size_t ok = std::count_if(results.begin(), results.end(),
                              [](const JobResult& r) { return !r.plans.empty() && r.plans[0].ok; });
    std::printf("dispatch round %d: %d jobs, %d workers, %.3f s, %8.0f jobs/s (%zu answered ok)\n",
                round, jobs_per_round, workers, seconds, jobs_per_round / seconds, ok);
    std::fflush(stdout);
  }
  stop = true;
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace fusetune

int main(int argc, char** argv) {
  using namespace fusetune;
  int clients = 4, workers = 8, jobs = 4000;
  double seconds = 3;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--clients")
      clients = std::stoi(value);
    else if (flag == "--seconds")
      seconds = std::stod(value);
    else if (flag == "--workers")
      workers = std::stoi(value);
    else if (flag == "--jobs")
      jobs = std::stoi(value);
    else if (flag == "--only")
      only = value;
  }
  spdlog::set_level(spdlog::level::warn);
  auto db = std::filesystem::temp_directory_path() / fmt::format("service_bench_{}.db", ::getpid());
  service::ServiceOptions options;
  options.listen = "127.0.0.1:0";
  options.db_path = db.string();
  {
    service::Server server(options);
    server.Start();
    std::string address = fmt::format("127.0.0.1:{}", server.port());
    std::printf("server on %s, db %s, %u hardware threads\n", address.c_str(), db.c_str(),
                std::thread::hardware_concurrency());
    if (only.empty() || only == "lookup") LookupBench(server, address, clients, seconds);
    if (only.empty() || only == "dispatch") DispatchBench(server, address, workers, jobs);
    server.Shutdown();
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);
  return 0;
}
