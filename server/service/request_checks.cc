#include "server/service/request_checks.h"

#include <map>

#include <fmt/format.h>

#include "ir/bind_params.h"
#include "ir/error.h"
#include "ir/onnx/onnx_import.h"
#include "ir/op.h"
#include "ir/text/relay_parser.h"
#include "ir/text/relay_printer.h"
#include "proto/ir_convert.h"
#include "server/request_policy.h"

namespace fusetune::service {
namespace {

// The range is the control's (server/search_options.h); 0 / absent takes `fallback`.
template <typename T>
T InRange(T value, T fallback, ControlRange<T> range, const std::string& field) {
  if (value == 0) return fallback;
  if (!range.Contains(value))
    throw UserError(
        fmt::format("{}: must be between {} and {}, got {}", field, range.lo, range.hi, value));
  return value;
}

std::string NodeName(const std::string& given, const Graph& graph, const std::string& field) {
  std::optional<std::string> name = ControlNodeName(graph, given);
  if (!name) throw UserError(fmt::format("{}: '{}' is not a node of the graph", field, given));
  return *name;
}

}  // namespace

Limits GraphLimits(const ServiceOptions& options) {
  Limits limits;
  limits.max_nodes = options.max_nodes;
  limits.max_elements = options.max_tensor_elements;
  limits.max_text_bytes = options.max_message_bytes;
  return limits;
}

namespace {

Graph GraphOfSource(const v1::GraphSource& source, const Limits& limits, const char* field,
                    std::string* text) {
  std::string name = source.name().empty() ? std::string(field) : source.name();
  if (source.name().size() > 4096) throw UserError(fmt::format("{}.name: too long", field));
  switch (source.source_case()) {
    case v1::GraphSource::kRelayText: {
      if (source.relay_text().empty()) throw UserError(fmt::format("{}.relay_text: empty", field));
      Graph graph = ParseRelay(source.relay_text(), name, limits);
      *text = source.relay_text();
      return graph;
    }
    case v1::GraphSource::kOnnxModel: {
      if (source.onnx_model().empty()) throw UserError(fmt::format("{}.onnx_model: empty", field));
      Graph graph = ImportOnnx(source.onnx_model(), name, limits);
      *text = PrintRelay(graph);  // the initialisers are kept as bound parameters' names
      return graph;
    }
    case v1::GraphSource::kGraph: {
      Graph graph = GraphFromProto(source.graph(), limits);
      *text = PrintRelay(graph);
      return graph;
    }
    default:
      throw UserError(fmt::format("{}: missing (set relay_text, onnx_model or graph)", field));
  }
}

}  // namespace

Graph GraphFromSource(const v1::GraphSource& source, const Limits& limits, const char* field,
                      std::string* text) {
  Graph graph = GraphOfSource(source, limits, field, text);
  if (source.bound_params().empty()) return graph;
  const std::string where = fmt::format("{}.bound_params", field);
  std::map<std::string, TensorType> types;
  for (const v1::BoundParam& p : source.bound_params()) {
    if (!types.emplace(p.name(), TensorTypeFromProto(p.type(), where + " %" + p.name())).second)
      throw UserError(fmt::format("{}: %{} is given twice", where, p.name()));
  }
  try {
    return BindParamPlaceholders(graph, types, limits);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", where, e.what()));
  }
}

std::string CheckTarget(const std::string& target, const char* field) {
  if (target.empty()) return "any";
  CheckLabel(target, field, 4096);
  return target;
}

void CheckTaskId(int64_t id, const char* field) {
  if (id <= 0) throw UserError(fmt::format("{}: task ids are positive, got {}", field, id));
}

void CheckLabel(const std::string& label, const char* field, size_t max_bytes) {
  if (label.size() > max_bytes)
    throw UserError(
        fmt::format("{}: {} bytes, at most {} allowed", field, label.size(), max_bytes));
  for (size_t i = 0; i < label.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(label[i]);
    if (c < 0x20 || c > 0x7e)
      throw UserError(fmt::format("{}: byte {} (0x{:02x}) is not printable ASCII", field, i, c));
  }
}

void CheckRegionSignature(const std::string& signature, const char* field) {
  bool ok = signature.size() == 32 &&
            signature.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!ok)
    throw UserError(fmt::format("{}: '{}' is not a region signature (32 lowercase hex digits)",
                                field, signature.substr(0, 64)));
}

TuneOptions TuneOptionsFromProto(const v1::TuneOptions& p, const Graph& graph) {
  TuneOptions o;
  SearchOptions& s = o.search;
  const SearchOptions defaults;
  s.threads = InRange(p.threads(), defaults.threads, limits::kThreads, "options.threads");
  if (p.budget() < limits::kBudget.lo)
    throw UserError(fmt::format("options.budget: must not be negative, got {}", p.budget()));
  s.budget = p.budget();
  s.max_group_size = InRange(p.max_group_size(), defaults.max_group_size, limits::kMaxGroupSize,
                             "options.max_group_size");
  s.max_region_nodes = InRange(p.max_region_nodes(), defaults.max_region_nodes,
                               limits::kMaxRegionNodes, "options.max_region_nodes");
  s.max_kernel_args = InRange(p.max_kernel_args(), defaults.max_kernel_args, limits::kMaxKernelArgs,
                              "options.max_kernel_args");
  s.schedules_per_group = InRange(p.schedules_per_group(), defaults.schedules_per_group,
                                  limits::kSchedulesPerGroup, "options.schedules_per_group");
  s.horizontal = !p.no_horizontal();
  s.attention = !p.no_attention();
  s.norm_fold = !p.no_norm_fold();
  s.recompute = !p.no_recompute();
  s.softmax_rows = !p.no_softmax_rows();
  s.layer_norm_rows = !p.no_layer_norm_rows();
  if (p.has_schedule_budget()) {
    if (p.schedule_budget() < limits::kScheduleBudget.lo ||
        p.schedule_budget() > limits::kScheduleBudget.hi)
      throw UserError(fmt::format("options.schedule_budget: must be in [{}, {}], got {}",
                                  limits::kScheduleBudget.lo, limits::kScheduleBudget.hi,
                                  p.schedule_budget()));
    s.schedule_budget = p.schedule_budget();
  }
  switch (p.warm_start()) {
    case v1::WARM_START_ONLY:
      o.warm_start = WarmStart::kOnly;
      break;
    case v1::WARM_START_COLD:
      o.warm_start = WarmStart::kOff;
      break;
    default:
      o.warm_start = WarmStart::kSearch;
      break;
  }
  for (int i = 0; i < p.never_fuse_ops_size(); ++i) {
    const std::string& op = p.never_fuse_ops(i);
    if (std::string problem = ControlOpProblem(op); !problem.empty())
      throw UserError(fmt::format("options.never_fuse_ops[{}]: {}", i, problem));
    s.never_fuse_ops.insert(op);
  }
  for (int i = 0; i < p.never_fuse_nodes_size(); ++i)
    s.never_fuse_nodes.insert(
        NodeName(p.never_fuse_nodes(i), graph, fmt::format("options.never_fuse_nodes[{}]", i)));
  for (int i = 0; i < p.forbidden_groups_size(); ++i) {
    const v1::PlanGroup& g = p.forbidden_groups(i);
    std::string field = fmt::format("options.forbidden_groups[{}]", i);
    if (g.nodes_size() < static_cast<int>(kMinForbiddenGroupNodes))
      throw UserError(fmt::format("{}: {}", field, kForbiddenGroupTooSmall));
    std::set<std::string> names;
    for (int k = 0; k < g.nodes_size(); ++k)
      names.insert(NodeName(g.nodes(k), graph, fmt::format("{}.nodes[{}]", field, k)));
    s.forbidden_groups.push_back(std::move(names));
  }
  o.use_cache = !p.retune();
  if (p.has_timing()) {
    const v1::TimingOptions& t = p.timing();
    auto check = [](auto value, auto range, const char* field) {
      if (!range.Contains(value))  // false for NaN as well
        throw UserError(
            fmt::format("{}: must be between {} and {}, got {}", field, range.lo, range.hi, value));
    };
    check(t.warmup(), limits::kWarmup, "options.timing.warmup");
    check(t.repeat(), limits::kRepeat, "options.timing.repeat");
    check(t.min_repeat_ms(), limits::kMinRepeatMs, "options.timing.min_repeat_ms");
    if (t.timeout_ms() < 0)
      throw UserError(
          fmt::format("options.timing.timeout_ms: must not be negative, got {}", t.timeout_ms()));
    o.timing.warmup = t.warmup();
    o.timing.repeat = t.repeat();
    o.timing.min_repeat_ms = t.min_repeat_ms();
    o.timing.flush_cache = t.flush_cache();
  }
  return o;
}

Submission CheckSubmitTune(const v1::SubmitTuneRequest& request, const ServiceOptions& options) {
  Submission s;
  s.graph = GraphFromSource(request.graph(), GraphLimits(options), "graph", &s.graph_text);
  s.bound_params = BoundParamNames(s.graph);
  if (s.graph.num_nodes() == 0)
    throw UserError("graph: has no operators to tune (its result is a parameter or constant)");
  s.graph_name = request.graph().name();
  TuneOptionsFromProto(request.options(), s.graph);  // checks every field
  s.options = request.options();
  s.target = CheckTarget(request.target(), "target");
  CheckLabel(request.client(), "client", 128);
  s.client = request.client();
  return s;
}

}  // namespace fusetune::service
