// `fusetune kernel GRAPH --group %0,%1 [--recompute %0] [--schedule k=v,...] [--dim NAME=SIZE]
// [--print-ir|--print-llvm|--print-asm]`: show what the code generator makes of one fused group:
// its template, inputs and outputs, and the kernel IR (default), the optimised LLVM IR, or the
// target assembly. A graph with dynamic dimensions is bound with --dim, as for check/run/query.
// The work, in `fusetune-codegen`; the options are registered by client/cmd_kernel.cc.
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "client/codegen_commands.h"
#include "client/graph_loader.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_printer.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::cli {
namespace {

std::vector<ValueId> ParseGroup(const Graph& graph, const std::string& text,
                                const char* flag = "--group") {
  std::vector<ValueId> nodes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty() && item[0] == '%') item = item.substr(1);
    auto id = graph.FindByName(item);
    if (!id || graph.value(*id).kind != ValueKind::kNode)
      throw UserError(fmt::format("{}: %{} is not a node of the graph", flag, item));
    nodes.push_back(*id);
  }
  if (nodes.empty()) throw UserError(fmt::format("{} lists no nodes", flag));
  return nodes;
}

}  // namespace

void ShowKernel(const KernelOptions& o) {
  Graph graph = GraphSource(o.graph_path, {}, o.params_dir).Bind(OneDimBinding(o.dims, "kernel"));
  std::string why;
  const std::vector<ValueId> recompute =
      o.recompute.empty() ? std::vector<ValueId>{} : ParseGroup(graph, o.recompute, "--recompute");
  auto group = AnalyzeGroup(graph, ParseGroup(graph, o.group), &why, recompute);
  if (!group) throw UserError("--group " + o.group + " is not lowerable: " + why);
  Schedule schedule = Schedule::Parse(o.schedule);
  runtime::SetNumThreads(o.threads);
  codegen::Jit jit;
  auto names = [&](const std::vector<ValueId>& ids) {
    std::string s;
    for (ValueId v : ids) s += (s.empty() ? "" : ", ") + RelayRef(graph, v);
    return s;
  };
  // Emitting the module is what checks a schedule's knobs against the templates that emit LLVM IR
  // directly, so their default view emits it too: a bad knob is refused before anything is
  // printed, as by `run`.
  const bool emits_llvm = group->templ == GroupTemplate::kMatmul || group->Attention();
  std::unique_ptr<codegen::JitModule> module;
  if (o.print_llvm || o.print_asm || emits_llvm) {
    std::string symbol = "fusetune_kernel";
    module = codegen::EmitGroupModule(graph, *group, schedule, jit, symbol,
                                      {.opt_level = 3, .threads = o.threads});
  }
  std::cout << fmt::format(
      "// template {}; anchor {}; inputs [{}]; outputs [{}]{}\n", TemplateName(group->templ),
      group->anchor >= 0 ? RelayRef(graph, group->anchor) : "none", names(group->inputs),
      names(group->outputs),
      recompute.empty() ? "" : "; recomputes [" + names(group->recompute) + "]");
  const std::vector<Schedule> space = ScheduleSpace(graph, *group, o.threads);
  std::cout << fmt::format("// schedule '{}'\n// target {}\n// space ({} schedules):\n",
                           schedule.ToString(), jit.target().Fingerprint(), space.size());
  for (const Schedule& s : space)
    std::cout << "//   " << (s.knobs.empty() ? "default" : s.ToString()) << "\n";
  if (o.print_llvm || o.print_asm) {
    if (!o.unoptimized) jit.Optimize(*module);
    std::cout << (o.print_asm ? jit.Assembly(*module) : jit.PrintIR(*module));
    return;
  }
  if (emits_llvm) {
    std::cout << "// the " << TemplateName(group->templ)
              << " template emits LLVM IR directly; use --print-llvm or --print-asm\n";
    return;
  }
  std::cout << codegen::PrintKernel(
      codegen::BuildGroupKernel(graph, *group, schedule, jit.target(), "kernel"));
}

}  // namespace fusetune::cli
