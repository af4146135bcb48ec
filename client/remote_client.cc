#include "client/remote_client.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "ir/bind_params.h"
#include "ir/error.h"
#include "ir/plan.h"
#include "proto/ir_convert.h"
#include "server/report_assembly.h"
#include "server/service/auth.h"
#include "server/service/result_convert.h"

namespace fusetune::cli {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read '{}'", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ONNX model bytes are imported by the server; Relay text is parsed (printed Relay starts with
// "fn (", which an ONNX protobuf never does: its first byte is a field tag). The parameters of
// `graph` that carry weights are named with their types, never their values (the server tunes
// them as constants; nothing there computes with them).
void SetGraphSource(v1::GraphSource* source, const std::string& graph_name,
                    const std::string& graph_text, const Graph& graph) {
  if (graph_name.ends_with(".onnx") && !graph_text.starts_with("fn (")) {
    source->set_onnx_model(graph_text);
  } else {
    source->set_relay_text(graph_text);
  }
  source->set_name(graph_name);
  for (const std::string& name : BoundParamNames(graph)) {
    v1::BoundParam* p = source->add_bound_params();
    p->set_name(name);
    *p->mutable_type() = TensorTypeToProto(graph.value(*graph.FindByName(name)).type);
  }
}

}  // namespace

void AddRemoteFlags(CLI::App* cmd, RemoteFlags& flags, bool server_required) {
  auto* server = cmd->add_option("--server", flags.server,
                                 "address of a `fusetune serve` (host:port; default "
                                 "$FUSETUNE_SERVER)")
                     ->envname("FUSETUNE_SERVER");
  if (server_required) server->required();
  cmd->add_option("--token-file", flags.token_file, "file holding the server's client token")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tls-ca", flags.tls_ca, "PEM file of the CA to trust: connect with TLS")
      ->check(CLI::ExistingFile);
}

RemoteClient::RemoteClient(const RemoteFlags& flags) : server_(flags.server) {
  if (!flags.token_file.empty()) token_ = service::ReadTokenFile(flags.token_file);
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      flags.tls_ca.empty()
          ? grpc::InsecureChannelCredentials()
          : grpc::SslCredentials(grpc::SslCredentialsOptions{ReadFile(flags.tls_ca), "", ""});
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  // Watching a task across a server restart: reconnect within a second, not gRPC's minutes.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a new client is a new connection
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  tuner_ = v1::Tuner::NewStub(grpc::CreateCustomChannel(server_, credentials, args));
}

std::unique_ptr<grpc::ClientContext> RemoteClient::Context(
    std::chrono::milliseconds timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) context->AddMetadata(service::kAuthMetadataKey, "Bearer " + token_);
  if (timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

void RemoteClient::Check(const grpc::Status& status, const std::string& what) const {
  if (status.ok()) return;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::FAILED_PRECONDITION:
      throw UserError(fmt::format("{}: {}", what, status.error_message()));
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      throw std::runtime_error(fmt::format("{}: cannot reach the server at {}: {}", what, server_,
                                           status.error_message()));
    default:
      throw std::runtime_error(
          fmt::format("{}: the server at {} failed: {}", what, server_, status.error_message()));
  }
}

v1::TuneOptions TuneOptionsToProto(const TuneOptions& o) {
  v1::TuneOptions p;
  const SearchOptions& s = o.search;
  p.set_threads(s.threads);
  p.set_budget(s.budget);
  p.set_max_group_size(s.max_group_size);
  p.set_max_region_nodes(s.max_region_nodes);
  p.set_max_kernel_args(s.max_kernel_args);
  p.set_schedules_per_group(s.schedules_per_group);
  p.set_no_horizontal(!s.horizontal);
  p.set_no_attention(!s.attention);
  p.set_no_norm_fold(!s.norm_fold);
  p.set_no_recompute(!s.recompute);
  p.set_no_softmax_rows(!s.softmax_rows);
  p.set_no_layer_norm_rows(!s.layer_norm_rows);
  p.set_schedule_budget(s.schedule_budget);
  p.set_warm_start(o.warm_start == WarmStart::kOnly  ? v1::WARM_START_ONLY
                   : o.warm_start == WarmStart::kOff ? v1::WARM_START_COLD
                                                     : v1::WARM_START_SEARCH);
  for (const std::string& op : s.never_fuse_ops) p.add_never_fuse_ops(op);
  for (const std::string& n : s.never_fuse_nodes) p.add_never_fuse_nodes("%" + n);
  for (const std::set<std::string>& group : s.forbidden_groups) {
    v1::PlanGroup* g = p.add_forbidden_groups();
    for (const std::string& n : group) g->add_nodes("%" + n);
  }
  p.set_retune(!o.use_cache);
  v1::TimingOptions* t = p.mutable_timing();
  t->set_warmup(o.timing.warmup);
  t->set_repeat(o.timing.repeat);
  t->set_min_repeat_ms(o.timing.min_repeat_ms);
  t->set_flush_cache(o.timing.flush_cache);
  return p;
}

TuneReport RemoteTune(const RemoteFlags& flags, const std::string& graph_name,
                      const std::string& graph_text, const Graph& graph, const TuneOptions& options,
                      const std::string& target, const ProgressFn& progress) {
  RemoteClient client(flags);
  v1::SubmitTuneRequest request;
  SetGraphSource(request.mutable_graph(), graph_name, graph_text, graph);
  request.set_target(target.empty() ? "any" : target);
  *request.mutable_options() = TuneOptionsToProto(options);
  v1::SubmitTuneResponse submitted;
  client.Check(client.tuner().SubmitTune(client.Context().get(), request, &submitted), "tune");
  const int64_t id = submitted.task_id();
  std::cerr << fmt::format("task {} submitted to {}\n", id, client.server());

  // The stream ends after a terminal state; a dropped stream (a server restart) is watched again.
  v1::TaskStatus last = submitted.status();
  for (int attempt = 0;; ++attempt) {
    RemoteClient watcher(flags);  // a fresh connection each time: the server may have restarted
    auto context = watcher.Context(std::chrono::milliseconds(0));
    v1::WatchTaskRequest watch;
    watch.set_task_id(id);
    auto reader = watcher.tuner().WatchTask(context.get(), watch);
    v1::TaskStatus status;
    while (reader->Read(&status)) {
      last = status;
      if (progress && status.total() > 0 && status.state() == v1::TASK_STATE_RUNNING)
        progress({status.phase(), static_cast<size_t>(status.done()),
                  static_cast<size_t>(status.total())});
    }
    grpc::Status end = reader->Finish();
    if (last.state() >= v1::TASK_STATE_DONE) break;
    if (!end.ok() && end.error_code() != grpc::StatusCode::UNAVAILABLE)
      client.Check(end, fmt::format("watching task {}", id));
    if (attempt >= 600)
      throw std::runtime_error(fmt::format("lost task {} on {}", id, client.server()));
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 10 ? 200 : 1000));
  }
  switch (last.state()) {
    case v1::TASK_STATE_DONE:
      return service::ReportFromProto(graph, last.result());
    case v1::TASK_STATE_CANCELLED:
      throw std::runtime_error(fmt::format("task {} was cancelled", id));
    default:
      throw std::runtime_error(fmt::format("task {} failed: {}", id, last.error()));
  }
}

TuneReport RemoteLookup(const RemoteFlags& flags, const std::string& graph_name,
                        const std::string& graph_text, const Graph& graph,
                        const SearchOptions& options, const std::string& target,
                        std::vector<std::string>* missing, bool exact_only) {
  RemoteClient client(flags);
  v1::LookupBestRequest request;
  SetGraphSource(request.mutable_graph(), graph_name, graph_text, graph);
  request.set_target(target.empty() ? "any" : target);
  request.set_threads(options.threads);
  request.set_exact_only(exact_only);
  TuneOptions tune;
  tune.search = options;
  *request.mutable_options() = TuneOptionsToProto(tune);
  v1::LookupBestResponse response;
  client.Check(client.tuner().LookupBest(client.Context().get(), request, &response), "query");
  v1::TuneResult result;
  result.set_target(response.target());
  result.set_threads(options.threads);
  for (const v1::RegionResult& r : response.regions()) *result.add_regions() = r;
  TuneReport report = service::ReportFromProto(graph, result);
  SumRegionFigures(report);
  report.tuned_plan.name = "tuned";
  missing->assign(response.missing().begin(), response.missing().end());
  if (missing->empty()) {  // as LookupCached does: the whole graph's plan from its regions'
    for (const RegionReport& r : report.regions)
      for (const PlanGroup& g : r.plan) report.tuned_plan.groups.push_back(g);
    SortGroupsTopologically(graph, report.tuned_plan);
  }
  return report;
}

}  // namespace fusetune::cli
