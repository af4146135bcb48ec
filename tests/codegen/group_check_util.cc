#include "group_check_util.h"

#include <cmath>
#include <mutex>

#include <fmt/format.h>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::testing {

namespace {

codegen::Jit& SharedJit() {
  static codegen::Jit jit;
  return jit;
}

}  // namespace

Graph ParseGraph(const std::string& relay) { return ParseRelay(relay, "test.relay"); }

std::vector<GroupResult> CheckGroups(const Graph& graph,
                                     const std::vector<std::vector<std::string>>& groups_in,
                                     Tolerance tol, int threads, uint64_t seed,
                                     const Schedule& schedule) {
  std::vector<std::vector<ValueId>> groups;
  if (groups_in.empty()) {
    for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v)
      if (graph.value(v).kind == ValueKind::kNode) groups.push_back({v});
  } else {
    for (const auto& names : groups_in) {
      std::vector<ValueId> ids;
      for (const std::string& n : names) {
        auto id = graph.FindByName(n);
        if (!id) throw std::runtime_error("no node %" + n);
        ids.push_back(*id);
      }
      groups.push_back(ids);
    }
  }
  std::vector<Tensor> inputs = RandomInputs(graph, seed);
  std::vector<Tensor> values = InterpretAll(graph, inputs);
  runtime::SetNumThreads(threads);
  std::vector<GroupResult> results;
  for (const auto& ids : groups) {
    GroupResult r;
    for (ValueId v : ids) r.group += (r.group.empty() ? "" : ",") + graph.RefName(v);
    std::string why;
    auto group = AnalyzeGroup(graph, ids, &why);
    if (!group) {
      r.ok = false;
      r.first_failure = "not a legal group: " + why;
      results.push_back(r);
      continue;
    }
    auto kernel = codegen::CompileGroup(graph, *group, schedule, SharedJit(),
                                        {.opt_level = 3, .threads = threads});
    std::vector<Tensor> outs;
    std::vector<void*> buffers;
    for (ValueId in : group->inputs) buffers.push_back(const_cast<void*>(values[in].data()));
    for (ValueId out : group->outputs) {
      outs.emplace_back(graph.value(out).type);
      // Poison the output so a kernel that skips elements is caught.
      for (int64_t i = 0; i < outs.back().size(); ++i)
        outs.back().Set(i, graph.value(out).type.dtype == DType::kFloat32 ? 12345.0 : 77.0);
    }
    for (Tensor& t : outs) buffers.push_back(t.data());
    kernel->Run(buffers.data());
    for (size_t o = 0; o < outs.size(); ++o) {
      const Tensor& want = values[group->outputs[o]];
      const Tensor& got = outs[o];
      for (int64_t i = 0; i < got.size(); ++i) {
        double w = want.Get(i), g = got.Get(i);
        bool same;
        if (std::isnan(w) || std::isnan(g)) {
          same = std::isnan(w) && std::isnan(g);
        } else if (std::isinf(w) || std::isinf(g)) {
          same = w == g;
        } else {
          double err = std::fabs(g - w);
          r.max_abs_error = std::max(r.max_abs_error, err);
          same = err <= tol.abs + tol.rel * std::fabs(w);
        }
        if (!same && r.ok) {
          r.ok = false;
          r.first_failure = fmt::format("output {} element {}: got {} want {}",
                                        graph.RefName(group->outputs[o]), i, g, w);
        }
      }
    }
    results.push_back(r);
  }
  runtime::SetNumThreads(1);
  return results;
}

GroupResult CheckWholeGraph(const std::string& relay, Tolerance tol, int threads, uint64_t seed) {
  Graph graph = ParseGraph(relay);
  std::vector<std::string> names;
  for (const Value& v : graph.values())
    if (v.kind == ValueKind::kNode) names.push_back(v.name);
  return CheckGroups(graph, {names}, tol, threads, seed).at(0);
}

}  // namespace fusetune::testing
