// codegen_bench: the figures of issue 3 §8 that belong to the element-wise, reduction and
// composite templates and to the JIT, each beside its peer measured in the same run.
//
//   subtract+exp  x[100,120,120] - m[100,120,1]   vs numpy (1 thread) and memcpy of the same bytes
//   softmax       last axis of [12,256,256]        vs PyTorch (ATEN_CPU_CAPABILITY=avx512)
//   compile time  every kernel of the benchmark set (seeds + BERT layer, greedy and unfused plans)
//   JIT memory    RSS over N compile/remove cycles
//
// Usage: codegen_bench [--no-peers] [--cycles N] [--json]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/runtime/aligned_buffer.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/timing.h"

using namespace fusetune;

namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double RssMiB() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

nlohmann::json RunPeers() {
  std::string cmd = fmt::format(
      "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ATEN_CPU_CAPABILITY=avx512 "
      "OMP_WAIT_POLICY=PASSIVE "
      "/usr/bin/python3 {}/bench/codegen/peers.py",
      FUSETUNE_SOURCE_DIR);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  pclose(pipe);
  try {
    return nlohmann::json::parse(out);
  } catch (...) {
    std::cerr << "peers.py gave no JSON: " << out << "\n";
    return {};
  }
}

// A whole single-group graph compiled and timed on random inputs.
struct GroupBench {
  Graph graph;
  FusedGroup group;
  std::vector<Tensor> inputs, outputs;
  std::vector<void*> buffers;

  explicit GroupBench(const std::string& relay) : graph(ParseRelay(relay, "bench.relay")) {
    std::vector<ValueId> nodes;
    for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v)
      if (graph.value(v).kind == ValueKind::kNode) nodes.push_back(v);
    std::string why;
    auto g = AnalyzeGroup(graph, nodes, &why);
    if (!g) throw std::runtime_error(why);
    group = *g;
    inputs = RandomInputs(graph, 1);
    std::vector<Tensor> all = InterpretAll(graph, inputs);
    for (ValueId in : group.inputs) buffers.push_back(all[in].data()), inputs.push_back(all[in]);
    for (ValueId out : group.outputs) outputs.emplace_back(graph.value(out).type);
    for (Tensor& t : outputs) buffers.push_back(t.data());
  }

  double TimeUs(codegen::Jit& jit, int threads) {
    runtime::SetNumThreads(threads);
    auto kernel =
        codegen::CompileGroup(graph, group, Schedule{}, jit, {.opt_level = 3, .threads = threads});
    TimingOptions options;
    options.repeat = 9;
    return TimeCalls([&] { kernel->Run(buffers.data()); }, options).median_us;
  }
};

struct CopyArgs {
  const char* src;
  char* dst;
  int64_t bytes;
};

double MemcpyUs(int64_t bytes, int threads) {
  runtime::AlignedBuffer src(bytes), dst(bytes);
  std::memset(src.data(), 1, bytes);
  runtime::SetNumThreads(threads);
  CopyArgs args{src.as<char>(), dst.as<char>(), bytes};
  auto chunk = [](void* ctx, int64_t begin, int64_t end) {
    auto* a = static_cast<CopyArgs*>(ctx);
    int64_t per = a->bytes / 64;
    std::memcpy(a->dst + begin * per, a->src + begin * per, (end - begin) * per);
  };
  TimingOptions options;
  options.repeat = 9;
  return TimeCalls([&] { fusetune_parallel_for(64, chunk, &args); }, options).median_us;
}

}  // namespace

int main(int argc, char** argv) {
  bool peers = true, json = false;
  int cycles = 1000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-peers")
      peers = false;
    else if (a == "--json")
      json = true;
    else if (a == "--cycles" && i + 1 < argc)
      cycles = std::atoi(argv[++i]);
    else {
      std::cerr << "usage: codegen_bench [--no-peers] [--cycles N] [--json]\n";
      return 2;
    }
  }
  codegen::Jit jit;
  nlohmann::ordered_json r;
  r["target"] = jit.target().Fingerprint();

  // subtract + exp ------------------------------------------------------------------------------
  GroupBench sub_exp(
      "fn (%x: Tensor[(100, 120, 120), float32], %m: Tensor[(100, 120, 1), float32]) { "
      "exp(subtract(%x, %m)) }");
  const int64_t bytes = 100 * 120 * 120 * 4;
  for (int t : {1, 2}) {
    r[fmt::format("sub_exp_t{}_us", t)] = sub_exp.TimeUs(jit, t);
    r[fmt::format("memcpy_t{}_us", t)] = MemcpyUs(bytes, t);
  }
  // softmax -----------------------------------------------------------------------------------
  GroupBench softmax("fn (%x: Tensor[(12, 256, 256), float32]) { nn.softmax(%x) }");
  for (int t : {1, 2}) r[fmt::format("softmax_t{}_us", t)] = softmax.TimeUs(jit, t);

  if (peers) {
    nlohmann::json p = RunPeers();
    for (auto& [k, v] : p.items()) r["peer_" + k] = v;
    auto ratio = [&](const std::string& ours, const std::string& theirs) {
      if (r.contains(ours) && r.contains(theirs))
        r["ratio_" + ours + "_vs_" + theirs] = r[ours].get<double>() / r[theirs].get<double>();
    };
    ratio("sub_exp_t1_us", "peer_numpy_sub_exp_us");
    ratio("softmax_t1_us", "peer_torch_softmax_t1_us");
    ratio("softmax_t2_us", "peer_torch_softmax_t2_us");
  }
  r["ratio_sub_exp_t1_vs_memcpy"] =
      r["sub_exp_t1_us"].get<double>() / r["memcpy_t1_us"].get<double>();
  r["ratio_sub_exp_t2_vs_memcpy"] =
      r["sub_exp_t2_us"].get<double>() / r["memcpy_t2_us"].get<double>();

  // compile times over the benchmark set -------------------------------------------------------
  std::vector<double> all_ms, matmul_ms;
  runtime::SetNumThreads(1);
  for (const char* file : {"examples/sub_exp_100x120x120.relay", "examples/bmm_where_s256.relay",
                           "examples/bert_layer_s128.relay"}) {
    Graph g = ParseRelay(ReadText(std::string(FUSETUNE_SOURCE_DIR) + "/" + file), file);
    for (const Plan& plan : {GreedyPlan(g), UnfusedPlan(g)}) {
      for (const PlanGroup& pg : plan.groups) {
        auto group = AnalyzeGroup(g, pg.nodes);
        if (!group) continue;
        auto kernel =
            codegen::CompileGroup(g, *group, pg.schedule, jit, {.opt_level = 3, .threads = 1});
        all_ms.push_back(kernel->times().total_ms());
        if (group->templ == GroupTemplate::kMatmul) matmul_ms.push_back(kernel->times().total_ms());
      }
    }
  }
  std::sort(all_ms.begin(), all_ms.end());
  std::sort(matmul_ms.begin(), matmul_ms.end());
  r["compile_kernels"] = all_ms.size();
  r["compile_median_ms"] = all_ms[all_ms.size() / 2];
  r["compile_max_ms"] = all_ms.back();
  if (!matmul_ms.empty()) r["compile_matmul_max_ms"] = matmul_ms.back();

  // JIT memory over compile/remove cycles ------------------------------------------------------
  {
    for (int i = 0; i < 50; ++i)
      codegen::CompileGroup(sub_exp.graph, sub_exp.group, Schedule{}, jit);  // warm up
    double before = RssMiB();
    for (int i = 0; i < cycles; ++i)
      codegen::CompileGroup(sub_exp.graph, sub_exp.group, Schedule{}, jit);
    r["jit_cycles"] = cycles;
    r["jit_rss_growth_mib"] = RssMiB() - before;
  }

  if (json) {
    std::cout << r.dump(2) << "\n";
    return 0;
  }
  for (auto& [k, v] : r.items()) {
    if (v.is_number_float())
      std::cout << fmt::format("{:<46} {:.3f}\n", k, v.get<double>());
    else
      std::cout << fmt::format("{:<46} {}\n", k, v.dump());
  }
  return 0;
}
