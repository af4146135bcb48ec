// The reference interpreter's speed: every measurement job's reference and every `run` check is
// an interpretation, and a whole model's (the 12-block GPT-2 stack's 1.1-2.7 s) is paid in each
// tune. Times the examples' BERT layer and GPT-2 MLP on their random inputs, as a job does.
#include <fstream>
#include <sstream>
#include <string>

#include <benchmark/benchmark.h>

#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"

namespace fusetune {
namespace {

void BM_Interpret(benchmark::State& state, const std::string& example) {
  const std::string path = std::string(FUSETUNE_SOURCE_DIR) + "/examples/" + example;
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  const Graph graph = ParseRelay(text.str(), path);
  const std::vector<Tensor> inputs = RandomInputs(graph, 1);
  for (auto _ : state) benchmark::DoNotOptimize(Interpret(graph, inputs));
}
BENCHMARK_CAPTURE(BM_Interpret, bert_layer_s128, std::string("bert_layer_s128.relay"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Interpret, gpt2_mlp, std::string("gpt2_mlp.relay"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fusetune

BENCHMARK_MAIN();
