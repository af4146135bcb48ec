// Times a graph under greedy and under greedy with its attention chain (batch_matmul .. softmax
// .. batch_matmul) merged into one attention kernel, alternating, in one process; checks both
// against the reference interpreter. A stand-in for `fusetune run --plan` when only the
// libraries are built (the measurements in BENCHMARKS.md, issue 13).
//   build/bench/attention/attention_kernel_bench GRAPH.relay THREADS ROUNDS [SCHEDULE]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ir/attention_pattern.h"
#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "worker/executor.h"

using namespace fusetune;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s GRAPH.relay THREADS ROUNDS [SCHEDULE]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  Graph g = ParseRelay(text.str(), argv[1]);
  const int threads = std::atoi(argv[2]), rounds = std::atoi(argv[3]);
  Schedule schedule = argc > 4 ? Schedule::Parse(argv[4]) : Schedule{};
  Plan greedy = GreedyPlan(g);
  std::vector<AttentionChain> chains = FindAttentionChains(g);
  if (chains.empty()) {
    std::fprintf(stderr, "%s: no attention chain (batch_matmul, softmax, batch_matmul)\n", argv[1]);
    return 1;
  }
  const std::vector<ValueId>& core = chains[0].core;
  Plan fused{"fused", {}};
  PlanGroup merged{{}, schedule};
  for (const PlanGroup& pg : greedy.groups) {
    PlanGroup rest{{}, pg.schedule};
    for (ValueId v : pg.nodes)
      (std::binary_search(core.begin(), core.end(), v) ? merged.nodes : rest.nodes).push_back(v);
    if (!rest.nodes.empty()) fused.groups.push_back(rest);
  }
  std::sort(merged.nodes.begin(), merged.nodes.end());
  fused.groups.push_back(merged);
  SortGroupsTopologically(g, fused);
  codegen::Jit jit;
  std::vector<Tensor> inputs = RandomInputs(g, 3);
  std::vector<Tensor> want = Interpret(g, inputs);
  PlanExecutor eg(g, greedy, jit, threads), ef(g, fused, jit, threads);
  eg.SetInputs(inputs);
  ef.SetInputs(inputs);
  for (PlanExecutor* e : {&eg, &ef}) {
    e->Run();
    double worst = 0;
    std::vector<Tensor> got = e->Outputs();
    for (size_t o = 0; o < got.size(); ++o)
      for (int64_t i = 0; i < got[o].size(); ++i)
        worst = std::max(worst, std::abs(got[o].Get(i) - want[o].Get(i)));
    std::printf("max_abs_error %g\n", worst);
  }
  TimingOptions t;
  t.repeat = 5;
  t.min_repeat_ms = 20;
  std::vector<double> tg, tf;
  for (int r = 0; r < rounds; ++r) {
    tg.push_back(eg.Measure(t).total.median_us);
    tf.push_back(ef.Measure(t).total.median_us);
  }
  std::sort(tg.begin(), tg.end());
  std::sort(tf.begin(), tf.end());
  double mg = tg[tg.size() / 2], mf = tf[tf.size() / 2];
  std::printf(
      "{\"graph\":\"%s\",\"threads\":%d,\"greedy_us\":%.1f,\"fused_us\":%.1f,"
      "\"fused_over_greedy\":%.3f,\"kernels_greedy\":%d,\"kernels_fused\":%d}\n",
      argv[1], threads, mg, mf, mf / mg, eg.num_kernels(), ef.num_kernels());
  return 0;
}
