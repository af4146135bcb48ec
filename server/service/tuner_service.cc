#include "server/service/tuner_service.h"

#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include "ir/error.h"
#include "proto/ir_convert.h"
#include "server/service/auth.h"
#include "server/service/request_checks.h"
#include "server/service/result_convert.h"
#include "server/service/status_error.h"
#include "server/target_names.h"
#include "server/tuner.h"

namespace fusetune::service {
namespace {

constexpr int kDefaultListLimit = 100;
constexpr int kMaxListLimit = 10000;

v1::TaskState StateToProto(db::TaskState s) {
  switch (s) {
    case db::TaskState::kQueued:
      return v1::TASK_STATE_QUEUED;
    case db::TaskState::kRunning:
      return v1::TASK_STATE_RUNNING;
    case db::TaskState::kDone:
      return v1::TASK_STATE_DONE;
    case db::TaskState::kFailed:
      return v1::TASK_STATE_FAILED;
    case db::TaskState::kCancelled:
      return v1::TASK_STATE_CANCELLED;
  }
  return v1::TASK_STATE_UNSPECIFIED;
}

db::TaskState StateFromProto(int s, int index) {
  switch (s) {
    case v1::TASK_STATE_QUEUED:
      return db::TaskState::kQueued;
    case v1::TASK_STATE_RUNNING:
      return db::TaskState::kRunning;
    case v1::TASK_STATE_DONE:
      return db::TaskState::kDone;
    case v1::TASK_STATE_FAILED:
      return db::TaskState::kFailed;
    case v1::TASK_STATE_CANCELLED:
      return db::TaskState::kCancelled;
    default:
      throw UserError(fmt::format("states[{}]: {} is not a task state", index, s));
  }
}

int ListLimit(int limit, const char* field) {
  if (limit < 0 || limit > kMaxListLimit)
    throw UserError(
        fmt::format("{}: must be between 0 and {}, got {}", field, kMaxListLimit, limit));
  return limit == 0 ? kDefaultListLimit : limit;
}

int Threads(int threads, const char* field) {
  if (threads < 0 || threads > 256)
    throw UserError(fmt::format("{}: must be between 1 and 256, got {}", field, threads));
  return threads == 0 ? 1 : threads;
}

// The caller's label: as given, else its address without the port.
std::string ClientLabel(const grpc::ServerContext& context, const std::string& given) {
  if (!given.empty()) return given;
  std::string peer = context.peer();
  size_t colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

}  // namespace

v1::TaskStatus TaskStatusOf(const TaskView& view) {
  const db::TaskRecord& t = view.record;
  v1::TaskStatus s;
  s.set_task_id(t.id);
  s.set_state(StateToProto(t.state));
  s.set_phase(view.phase);
  s.set_done(t.progress_done);
  s.set_total(t.progress_total);
  s.set_error(t.error);
  s.set_target(t.target);
  s.set_client(t.client);
  s.set_created_at_ms(t.created_at);
  s.set_updated_at_ms(t.updated_at);
  if (t.state == db::TaskState::kDone && !t.result_json.empty()) {
    auto status = google::protobuf::util::JsonStringToMessage(t.result_json, s.mutable_result());
    if (!status.ok())
      throw StatusError(
          grpc::StatusCode::DATA_LOSS,
          fmt::format("task {}: stored result unreadable: {}", t.id, status.ToString()));
  }
  return s;
}

v1::CachedPlan CachedPlanOf(const db::BestPlanRecord& r) {
  v1::CachedPlan p;
  p.set_region_signature(r.key.region_signature);
  p.set_target_fingerprint(r.key.target_fingerprint);
  p.set_threads(r.key.threads);
  p.set_search_version(r.key.search_version);
  for (const db::StoredGroup& g : r.groups) {
    v1::StoredGroup* sg = p.add_groups();
    for (int32_t pos : g.nodes) sg->add_positions(pos);
    *sg->mutable_schedule() = ScheduleToProto(Schedule::Parse(g.schedule));
  }
  p.set_tuned_us(r.tuned_us);
  p.set_greedy_us(r.greedy_us);
  p.set_unfused_us(r.unfused_us);
  p.set_chosen(r.chosen);
  for (const std::string& op : r.ops) p.add_ops(op);
  p.set_region_text(r.region_text);
  p.set_created_at_ms(r.created_at);
  if (r.margin) p.set_margin(*r.margin);
  p.set_decision(r.decision);
  p.set_rounds(r.rounds.value_or(0));
  p.set_verified_at_ms(r.verified_at.value_or(0));
  p.set_weights_bound(r.weights_bound);
  return p;
}

void TunerService::Authenticate(const grpc::ServerContext& context) const {
  RequireToken(context, options_.client_token, "client");
}

TaskView TunerService::ViewOrNotFound(int64_t id) const {
  std::optional<TaskView> view = tasks_.View(id);
  if (!view) throw StatusError(grpc::StatusCode::NOT_FOUND, fmt::format("task_id: no task {}", id));
  return std::move(*view);
}

std::string TunerService::LookupTarget(const std::string& target) const {
  std::string checked = CheckTarget(target, "target");
  if (checked != "any") {
    std::vector<std::string> known = cache_.BestPlanTargets();
    for (const db::WorkerRecord& w : queue_.ListWorkers()) known.push_back(w.target_fingerprint);
    return ResolveTargetName(checked, known);
  }
  std::set<std::string> fingerprints;
  for (const db::WorkerRecord& w : queue_.ListWorkers()) fingerprints.insert(w.target_fingerprint);
  if (fingerprints.size() == 1) return *fingerprints.begin();
  if (fingerprints.empty())
    throw StatusError(grpc::StatusCode::FAILED_PRECONDITION,
                      "target: no worker has registered, so \"any\" names no target; give a "
                      "target fingerprint");
  throw StatusError(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("target: {} targets are registered, so \"any\" is ambiguous; "
                                "give one fingerprint (see `fusetune workers`)",
                                fingerprints.size()));
}

grpc::Status TunerService::SubmitTune(grpc::ServerContext* context,
                                      const v1::SubmitTuneRequest* request,
                                      v1::SubmitTuneResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    Submission submission = CheckSubmitTune(*request, options_);
    int64_t id = tasks_.Submit(submission, ClientLabel(*context, submission.client));
    metrics_.CountSubmittedTask();
    response->set_task_id(id);
    *response->mutable_status() = TaskStatusOf(ViewOrNotFound(id));
  });
}

grpc::Status TunerService::WatchTask(grpc::ServerContext* context,
                                     const v1::WatchTaskRequest* request,
                                     grpc::ServerWriter<v1::TaskStatus>* writer) {
  return Answer([&] {
    Authenticate(*context);
    CheckTaskId(request->task_id(), "task_id");
    std::string last_sent;
    for (;;) {
      if (context->IsCancelled()) return;
      if (tasks_.stopping())
        throw StatusError(grpc::StatusCode::UNAVAILABLE, "the server is stopping; watch again");
      TaskView view = ViewOrNotFound(request->task_id());
      v1::TaskStatus status = TaskStatusOf(view);
      std::string bytes = status.SerializeAsString();
      if (bytes != last_sent) {
        if (!writer->Write(status)) return;  // the client went away
        last_sent = std::move(bytes);
      }
      if (db::IsTerminal(view.record.state)) return;
      tasks_.WaitForChange(view.version, std::chrono::seconds(1));
    }
  });
}

grpc::Status TunerService::GetTask(grpc::ServerContext* context, const v1::GetTaskRequest* request,
                                   v1::TaskStatus* response) {
  return Answer([&] {
    Authenticate(*context);
    CheckTaskId(request->task_id(), "task_id");
    *response = TaskStatusOf(ViewOrNotFound(request->task_id()));
  });
}

grpc::Status TunerService::CancelTask(grpc::ServerContext* context,
                                      const v1::CancelTaskRequest* request,
                                      v1::CancelTaskResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    CheckTaskId(request->task_id(), "task_id");
    ViewOrNotFound(request->task_id());
    response->set_cancelled(tasks_.Cancel(request->task_id()));
    *response->mutable_status() = TaskStatusOf(ViewOrNotFound(request->task_id()));
  });
}

grpc::Status TunerService::ListTasks(grpc::ServerContext* context,
                                     const v1::ListTasksRequest* request,
                                     v1::ListTasksResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    db::TaskFilter filter;
    for (int i = 0; i < request->states_size(); ++i)
      filter.states.push_back(StateFromProto(request->states(i), i));
    CheckLabel(request->client(), "client", 128);
    filter.client = request->client();
    filter.limit = ListLimit(request->limit(), "limit");
    std::vector<db::TaskRecord> tasks = queue_.ListTasks(filter);
    for (auto it = tasks.rbegin(); it != tasks.rend(); ++it) {  // newest first
      std::optional<TaskView> view = tasks_.View(it->id);
      if (view) *response->add_tasks() = TaskStatusOf(*view);
    }
  });
}

grpc::Status TunerService::LookupBest(grpc::ServerContext* context,
                                      const v1::LookupBestRequest* request,
                                      v1::LookupBestResponse* response) {
  const auto started = std::chrono::steady_clock::now();
  grpc::Status status = Answer([&] {
    Authenticate(*context);
    int threads = Threads(request->threads(), "threads");
    if (request->search_version() < 0)
      throw UserError(
          fmt::format("search_version: must not be negative, got {}", request->search_version()));
    int version = request->search_version() == 0 ? kSearchVersion : request->search_version();
    switch (request->query_case()) {
      case v1::LookupBestRequest::kRegionSignature: {
        CheckRegionSignature(request->region_signature(), "region_signature");
        std::string target = LookupTarget(request->target());
        response->set_target(target);
        std::optional<db::BestPlanRecord> plan =
            cache_.FindBestPlan({request->region_signature(), target, threads, version});
        if (plan) {
          *response->mutable_plan() = CachedPlanOf(*plan);
        } else {
          response->add_missing(request->region_signature());
        }
        return;
      }
      case v1::LookupBestRequest::kGraph: {
        if (version != kSearchVersion)
          throw UserError(
              fmt::format("search_version: graph lookups use this server's search "
                          "version {}, got {}",
                          kSearchVersion, version));
        std::string target = LookupTarget(request->target());
        const std::string key = LookupCache::KeyOf(*request, target);
        if (std::optional<v1::LookupBestResponse> hit = lookups_.Find(key, cache_)) {
          *response = std::move(*hit);
          return;
        }
        std::string text;
        Graph graph = GraphFromSource(request->graph(), GraphLimits(options_), "graph", &text);
        SearchOptions search = TuneOptionsFromProto(request->options(), graph).search;
        if (request->threads() != 0) search.threads = threads;
        response->set_target(target);
        std::vector<std::string> missing;
        TuneReport report =
            LookupCached(graph, search, cache_, target, &missing, request->exact_only());
        for (const RegionReport& r : report.regions)
          *response->add_regions() = RegionToProto(graph, r, r.cached);
        for (const std::string& m : missing) response->add_missing(m);
        lookups_.Put(key, *response, LookupCache::PlanKeysOf(*response, search.threads, version),
                     cache_);
        return;
      }
      default:
        throw UserError("query: missing (set graph or region_signature)");
    }
  });
  // Answered lookups only: a refused request says nothing about the cache. Every region looked
  // up is a hit (its plan came back) or a miss; a graph's repeated regions count each time.
  if (status.ok()) {
    int64_t hits = 0, misses = 0;
    if (request->query_case() == v1::LookupBestRequest::kRegionSignature) {
      (response->has_plan() ? hits : misses) = 1;
    } else {
      for (const v1::RegionResult& r : response->regions()) ++(r.cached() ? hits : misses);
    }
    metrics_.ObserveLookup(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), hits,
        misses);
  }
  return status;
}

grpc::Status TunerService::ListCache(grpc::ServerContext* context,
                                     const v1::ListCacheRequest* request,
                                     v1::ListCacheResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    db::BestPlanFilter filter;
    const std::string& prefix = request->region_signature_prefix();
    if (prefix.size() > 32 || prefix.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw UserError(fmt::format(
          "region_signature_prefix: '{}' is not a prefix of a signature (lowercase hex)",
          prefix.substr(0, 64)));
    filter.region_signature_prefix = prefix;
    if (!request->target().empty() && request->target() != "any")
      filter.target_fingerprint = CheckTarget(request->target(), "target");
    if (request->threads() != 0) filter.threads = Threads(request->threads(), "threads");
    if (request->search_version() < 0) throw UserError("search_version: must not be negative");
    if (request->search_version() != 0) filter.search_version = request->search_version();
    CheckLabel(request->op(), "op", 128);
    filter.op = request->op();
    int limit = ListLimit(request->limit(), "limit");
    filter.limit = limit + 1;
    std::vector<db::BestPlanRecord> plans = cache_.ListBestPlans(filter);
    response->set_truncated(static_cast<int>(plans.size()) > limit);
    if (response->truncated()) plans.resize(limit);
    for (const db::BestPlanRecord& p : plans) *response->add_plans() = CachedPlanOf(p);
  });
}

grpc::Status TunerService::ListWorkers(grpc::ServerContext* context,
                                       const v1::ListWorkersRequest* request,
                                       v1::ListWorkersResponse* response) {
  return Answer([&] {
    Authenticate(*context);
    std::string target = request->target().empty() ? "" : CheckTarget(request->target(), "target");
    std::map<std::string, int64_t> current;
    db::JobFilter leased;
    leased.state = db::JobState::kLeased;
    for (const db::JobRecord& j : queue_.ListJobs(leased)) current[j.lease_owner] = j.id;
    for (const db::WorkerRecord& w : queue_.ListWorkers()) {
      if (!target.empty() && target != "any" && w.target_fingerprint != target &&
          TargetCpu(w.target_fingerprint) != target)
        continue;
      v1::Worker* out = response->add_workers();
      out->set_worker_id(w.id);
      out->set_target_fingerprint(w.target_fingerprint);
      out->set_cores(w.cores);
      out->set_version(w.version);
      out->set_online(w.state == db::WorkerState::kOnline);
      out->set_registered_at_ms(w.registered_at);
      out->set_last_heartbeat_ms(w.last_heartbeat);
      if (auto it = current.find(w.id); it != current.end()) out->set_current_job_id(it->second);
    }
  });
}

}  // namespace fusetune::service
