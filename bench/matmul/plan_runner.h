#pragma once
// A Relay graph with a tensor for every value and a sequence of compiled groups over them: how
// the matmul benchmarks run fusetune's kernels (CompileGroup, the worker's path).
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/matmul/timing.h"
#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::bench {

class PlanRunner {
 public:
  explicit PlanRunner(const std::string& text) : graph_(ParseRelay(text, "bench.relay")) {
    std::vector<Tensor> inputs = RandomInputs(graph_, 7);
    values_.resize(graph_.values().size());
    for (size_t i = 0; i < graph_.params().size(); ++i) values_[graph_.params()[i]] = inputs[i];
    for (size_t v = 0; v < values_.size(); ++v) {
      const auto& value = graph_.values()[v];
      if (value.kind == ValueKind::kConst) values_[v] = *value.data;
      if (value.kind == ValueKind::kNode) values_[v] = Tensor(value.type);
    }
  }
  const Graph& graph() const { return graph_; }
  Tensor& value(const std::string& name) { return values_[*graph_.FindByName(name)]; }

  FusedGroup Group(const std::vector<std::string>& names) const {
    std::vector<ValueId> ids;
    for (const std::string& n : names) ids.push_back(*graph_.FindByName(n));
    std::string why;
    auto g = AnalyzeGroup(graph_, ids, &why);
    if (!g) throw std::runtime_error("not a group: " + why);
    return *g;
  }

  // Adds a kernel for the group to the sequence; returns its compile times.
  codegen::CompileTimes Add(codegen::Jit& jit, const std::vector<std::string>& names, int threads,
                            const Schedule& s = {}) {
    FusedGroup g = Group(names);
    codegen::CompileOptions options;
    options.threads = threads;
    kernels_.push_back(codegen::CompileGroup(graph_, g, s, jit, options));
    std::vector<void*> buffers;
    for (ValueId v : g.inputs) buffers.push_back(values_[v].data());
    for (ValueId v : g.outputs) buffers.push_back(values_[v].data());
    // Bound like the executor binds (kernel_abi.h): a wpack kernel packs its B here, once.
    kernels_.back()->Bind(buffers.data());
    buffers_.push_back(std::move(buffers));
    return kernels_.back()->times();
  }
  void Run() {
    for (size_t i = 0; i < kernels_.size(); ++i) kernels_[i]->Run(buffers_[i].data());
  }

 private:
  Graph graph_;
  std::vector<Tensor> values_;
  std::vector<std::unique_ptr<codegen::CompiledKernel>> kernels_;
  std::vector<std::vector<void*>> buffers_;
};

// "Tensor[(a, b), float32]"
inline std::string T(std::vector<int64_t> shape) {
  std::string s = "Tensor[(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",), float32]" : "), float32]");
}

inline double Gflops(double flops, double us) { return flops / us / 1e3; }

inline Candidate Ours(const std::string& name, int threads, PlanRunner* plan) {
  return {name, [threads] { runtime::SetNumThreads(threads); }, [plan] { plan->Run(); }};
}

}  // namespace fusetune::bench
