// opt_levels: what the LLVM optimisation levels cost in compile time and give in kernel speed,
// over every kernel of the greedy and unfused plans of some graphs (default schedules), so the
// worker's choice of levels (worker/executor.cc) rests on a measurement (BENCHMARKS.md "Tuning
// time"). Each setting is IR pipeline level / backend (CodeGenOpt) level. Kernel times of all
// settings are taken in interleaved rounds, so a disturbance on the shared machine hits them alike.
//
// With --space N, the matmul and attention groups of the greedy plan also run the first N
// schedules of their space (the tune compiles many of those).
//
// Usage: opt_levels [--threads N] [--rounds N] [--space N] [--settings 3/3,2/3,...] GRAPH.relay...
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/plan.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/compile.h"
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

struct Setting {
  int ir = 3, backend = 3;
  std::string Name() const { return fmt::format("O{}/cg{}", ir, backend); }
};

// "%3 %4 (nn.dense, add)": which kernel a line is about.
std::string GroupText(const Graph& g, const PlanGroup& pg) {
  std::string nodes, ops;
  for (ValueId v : pg.nodes) {
    nodes += (nodes.empty() ? "" : " ") + g.RefName(v);
    ops += (ops.empty() ? "" : ", ") + g.value(v).op->name;
  }
  if (!pg.schedule.knobs.empty()) ops += "; " + pg.schedule.ToString();
  return nodes + " (" + ops + ")";
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, rounds = 5, space = 0;
  std::vector<Setting> settings = {{3, 3}, {2, 3}, {2, 2}, {2, 1}, {1, 2}};
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--space" && i + 1 < argc) {
      space = std::atoi(argv[++i]);
    } else if (a == "--settings" && i + 1 < argc) {
      settings.clear();
      std::stringstream s(argv[++i]);
      std::string item;
      while (std::getline(s, item, ','))
        settings.push_back({item[0] - '0', item.size() > 2 ? item[2] - '0' : 3});
    } else if (!a.empty() && a[0] != '-') {
      files.push_back(a);
    } else {
      std::cerr << "usage: opt_levels [--threads N] [--rounds N] [--space N] [--settings 3/3,2/3] "
                   "GRAPH...\n";
      return 2;
    }
  }
  if (files.empty() || settings.empty()) {
    std::cerr << "usage: opt_levels [--threads N] [--rounds N] [--space N] [--settings 3/3,2/3] "
                 "GRAPH...\n";
    return 2;
  }
  std::map<int, std::unique_ptr<codegen::Jit>> jits;  // one per backend level
  for (const Setting& s : settings)
    if (!jits.count(s.backend)) jits[s.backend] = std::make_unique<codegen::Jit>(s.backend);
  runtime::SetNumThreads(threads);

  const size_t n = settings.size();
  std::vector<double> compile_ms(n), opt_ms(n), codegen_ms(n), kernel_us(n);
  int kernels = 0;
  for (const std::string& file : files) {
    Graph g = ParseRelay(ReadText(file), file);
    std::vector<Tensor> values = InterpretAll(g, RandomInputs(g, 1));
    Plan schedules;  // the greedy plan's matmul and attention groups on more of their space
    for (const PlanGroup& pg : GreedyPlan(g).groups) {
      auto group = AnalyzeGroup(g, pg.nodes);
      if (!group || !(group->templ == GroupTemplate::kMatmul || group->Attention())) continue;
      std::vector<Schedule> all = ScheduleSpace(g, *group, threads);
      for (size_t i = 1; i < all.size() && static_cast<int>(i) <= space; ++i)
        schedules.groups.push_back({pg.nodes, all[i]});
    }
    for (const Plan& plan : {GreedyPlan(g), UnfusedPlan(g), schedules}) {
      for (const PlanGroup& pg : plan.groups) {
        auto group = AnalyzeGroup(g, pg.nodes);
        if (!group) continue;
        std::vector<Tensor> outputs;
        std::vector<void*> buffers;
        for (ValueId in : group->inputs) buffers.push_back(values[in].data());
        for (ValueId out : group->outputs) outputs.emplace_back(g.value(out).type);
        for (Tensor& t : outputs) buffers.push_back(t.data());
        std::vector<std::unique_ptr<codegen::CompiledKernel>> compiled;
        for (size_t s = 0; s < n; ++s) {
          compiled.push_back(
              codegen::CompileGroup(g, *group, pg.schedule, *jits[settings[s].backend],
                                    {.opt_level = settings[s].ir, .threads = threads}));
          compile_ms[s] += compiled.back()->times().total_ms();
          opt_ms[s] += compiled.back()->times().optimize_ms;
          codegen_ms[s] += compiled.back()->times().codegen_ms;
        }
        std::vector<std::vector<double>> samples(n);
        TimingOptions once;
        once.warmup = 1;
        once.repeat = 1;
        once.min_repeat_ms = 5;
        for (int r = 0; r < rounds; ++r)
          for (size_t s = 0; s < n; ++s)
            samples[s].push_back(
                TimeCalls([&] { compiled[s]->Run(buffers.data()); }, once).median_us);
        std::string line = fmt::format(
            "{:<40.40s}", fmt::format("{} {}", file.substr(file.rfind('/') + 1), GroupText(g, pg)));
        const double base = Median(samples[0]);
        for (size_t s = 0; s < n; ++s) {
          const double us = Median(samples[s]);
          kernel_us[s] += us;
          line += fmt::format("  {:8.1f} us {:5.1f} ms", us, compiled[s]->times().total_ms());
          if (s > 0) line += fmt::format(" ({:.2f}x)", us / base);
        }
        ++kernels;
        std::cout << line << "\n" << std::flush;
      }
    }
  }
  std::cout << fmt::format("\n{} kernels, {} thread(s), median of {} interleaved rounds\n", kernels,
                           threads, rounds);
  for (size_t s = 0; s < n; ++s)
    std::cout << fmt::format(
        "{:<8} compile {:7.0f} ms (IR passes {:6.0f}, backend {:6.0f})  {:.2f}x   kernels "
        "{:9.0f} us  {:.3f}x\n",
        settings[s].Name(), compile_ms[s], opt_ms[s], codegen_ms[s], compile_ms[s] / compile_ms[0],
        kernel_us[s], kernel_us[s] / kernel_us[0]);
  return 0;
}
