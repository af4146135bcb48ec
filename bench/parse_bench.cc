// Front-end speed: parse + verify + infer + sign a generated 10,000-node Relay graph (target
// under 0.5 s), with the stages also timed alone.
//
// The graph repeats a 10-node block (dense, bias_add, multiply by a literal, tanh, residual add,
// transpose, max-reduce, subtract, exp, softmax), each block reading the previous one.
#include <string>

#include <benchmark/benchmark.h>

#include "ir/text/relay_parser.h"
#include "ir/text/relay_printer.h"
#include "ir/text/signature.h"

namespace fusetune {
namespace {

std::string GenerateRelay(int blocks) {
  std::string text =
      "fn (%x: Tensor[(64, 64), float32], %w: Tensor[(64, 64), float32], "
      "%b: Tensor[(64,), float32]) {\n";
  std::string prev = "%x";
  int n = 0;
  auto bind = [&](const std::string& call) {
    text += "  %" + std::to_string(n) + " = " + call + ";\n";
    return "%" + std::to_string(n++);
  };
  for (int i = 0; i < blocks; ++i) {
    std::string d = bind("nn.dense(" + prev + ", %w, units=64)");
    std::string bias = bind("nn.bias_add(" + d + ", %b, axis=-1)");
    std::string scaled = bind("multiply(" + bias + ", 0.5f)");
    std::string t = bind("tanh(" + scaled + ")");
    std::string res = bind("add(" + t + ", " + prev + ")");
    std::string tr = bind("transpose(" + res + ", axes=[1, 0])");
    std::string m = bind("max(" + tr + ", axis=[1], keepdims=True)");
    std::string s = bind("subtract(" + tr + ", " + m + ")");
    std::string e = bind("exp(" + s + ")");
    prev = bind("nn.softmax(" + e + ", axis=-1)");
  }
  text += "  " + prev + "\n}\n";
  return text;
}

const std::string& Text10k() {
  static const std::string text = GenerateRelay(1000);
  return text;
}

void BM_ParseVerifyInferSign10k(benchmark::State& state) {
  const std::string& text = Text10k();
  for (auto _ : state) {
    Graph g = ParseRelay(text, "generated.relay");
    std::string signature = Signature(g);
    benchmark::DoNotOptimize(signature);
  }
  state.counters["nodes"] = 10000;
  state.counters["bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_ParseVerifyInferSign10k)->Unit(benchmark::kMillisecond);

void BM_ParseOnly10k(benchmark::State& state) {
  const std::string& text = Text10k();
  for (auto _ : state) {
    Graph g = ParseRelay(text, "generated.relay");
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK(BM_ParseOnly10k)->Unit(benchmark::kMillisecond);

void BM_SignOnly10k(benchmark::State& state) {
  Graph g = ParseRelay(Text10k(), "generated.relay");
  for (auto _ : state) {
    std::string signature = Signature(g);
    benchmark::DoNotOptimize(signature);
  }
}
BENCHMARK(BM_SignOnly10k)->Unit(benchmark::kMillisecond);

// Subgraph signatures of every block (1,000 calls of 10 nodes each on the 10k graph).
void BM_SignEveryBlock10k(benchmark::State& state) {
  Graph g = ParseRelay(Text10k(), "generated.relay");
  std::vector<std::vector<ValueId>> blocks(1000);
  for (ValueId id = 0; id < static_cast<ValueId>(g.values().size()); ++id) {
    if (g.value(id).kind != ValueKind::kNode) continue;
    blocks[std::stoi(g.value(id).name) / 10].push_back(id);
  }
  for (auto _ : state) {
    for (const auto& block : blocks) {
      std::string signature = Signature(g, block);
      benchmark::DoNotOptimize(signature);
    }
  }
}
BENCHMARK(BM_SignEveryBlock10k)->Unit(benchmark::kMillisecond);

void BM_Print10k(benchmark::State& state) {
  Graph g = ParseRelay(Text10k(), "generated.relay");
  for (auto _ : state) {
    std::string text = PrintRelay(g);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_Print10k)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fusetune

BENCHMARK_MAIN();
