#pragma once
// A Relay graph with a tensor for every value and a sequence of compiled groups over them: how
// the matmul benchmarks run fusetune's kernels (CompileGroup, the worker's path).
#include <cstring>
#include <map>
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
  // The value a call in turn `c` reads (RotateValue): 0 is value(name).
  Tensor& value(const std::string& name, int c) {
    const ValueId v = *graph_.FindByName(name);
    return c == 0 ? values_[v] : copies_.at(v)[c - 1];
  }

  // Calls read the values in `copies` in turn after the value `name` itself, as a model's layers
  // each read their own weights: with more copies than the last-level cache holds, every call's
  // weights come from memory while its other operands stay warm. Before any Add.
  void RotateValue(const std::string& name, const std::vector<Tensor>& copies) {
    copies_[*graph_.FindByName(name)] = copies;  // shares their storage
    layers_ = static_cast<int>(copies.size()) + 1;
  }
  // `n` copies of `t`, each with storage of its own (copying a Tensor shares it).
  static std::vector<Tensor> Copies(const Tensor& t, int n) {
    std::vector<Tensor> out;
    for (int c = 0; c < n; ++c) {
      out.emplace_back(t.type());
      std::memcpy(out.back().data(), t.data(), t.size() * sizeof(float));
    }
    return out;
  }

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
    std::vector<std::vector<void*>> layers(layers_);
    for (int c = 0; c < layers_; ++c) {
      auto data = [&](ValueId v) {
        auto it = copies_.find(v);
        return c == 0 || it == copies_.end() ? values_[v].data() : it->second[c - 1].data();
      };
      for (ValueId v : g.inputs) layers[c].push_back(data(v));
      for (ValueId v : g.outputs) layers[c].push_back(data(v));
      // Bound like the executor binds (kernel_abi.h): a wpack kernel packs its B here, once.
      kernels_.back()->Bind(layers[c].data());
    }
    buffers_.push_back(std::move(layers));
    return kernels_.back()->times();
  }
  void Run() {
    for (size_t i = 0; i < kernels_.size(); ++i) kernels_[i]->Run(buffers_[i][layer_].data());
    layer_ = (layer_ + 1) % layers_;
  }

 private:
  Graph graph_;
  std::vector<Tensor> values_;
  std::vector<std::unique_ptr<codegen::CompiledKernel>> kernels_;
  std::map<ValueId, std::vector<Tensor>> copies_;  // RotateValue's, read in turns 1 ..
  int layers_ = 1;
  int layer_ = 0;                                         // the copy the next Run reads
  std::vector<std::vector<std::vector<void*>>> buffers_;  // [kernel][copy]
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
