// `fusetune kernel GRAPH --group %0,%1 [--schedule k=v,...] [--dim NAME=SIZE]
// [--print-ir|--print-llvm|--print-asm]`: show what the code generator makes of one fused group:
// its template, inputs and outputs, and the kernel IR (default), the optimised LLVM IR, or the
// target assembly. A graph with dynamic dimensions is bound with --dim, as for check/run/query.
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "client/commands.h"
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

struct KernelOptions {
  std::string graph_path;
  std::string group;
  std::string schedule;
  bool print_ir = false, print_llvm = false, print_asm = false, unoptimized = false;
  int threads = 1;
  std::vector<std::string> dims;
};

std::vector<ValueId> ParseGroup(const Graph& graph, const std::string& text) {
  std::vector<ValueId> nodes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty() && item[0] == '%') item = item.substr(1);
    auto id = graph.FindByName(item);
    if (!id || graph.value(*id).kind != ValueKind::kNode)
      throw UserError(fmt::format("--group: %{} is not a node of the graph", item));
    nodes.push_back(*id);
  }
  if (nodes.empty()) throw UserError("--group lists no nodes");
  return nodes;
}

void Show(const KernelOptions& o) {
  Graph graph = GraphSource(o.graph_path).Bind(OneDimBinding(o.dims, "kernel"));
  std::string why;
  auto group = AnalyzeGroup(graph, ParseGroup(graph, o.group), &why);
  if (!group) throw UserError("--group " + o.group + " is not lowerable: " + why);
  Schedule schedule = Schedule::Parse(o.schedule);
  runtime::SetNumThreads(o.threads);
  codegen::Jit jit;
  auto names = [&](const std::vector<ValueId>& ids) {
    std::string s;
    for (ValueId v : ids) s += (s.empty() ? "" : ", ") + RelayRef(graph, v);
    return s;
  };
  std::cout << fmt::format("// template {}; anchor {}; inputs [{}]; outputs [{}]\n",
                           TemplateName(group->templ),
                           group->anchor >= 0 ? RelayRef(graph, group->anchor) : "none",
                           names(group->inputs), names(group->outputs));
  std::string space;
  for (const Schedule& s : ScheduleSpace(graph, *group, o.threads))
    space += (space.empty() ? "" : " | ") + (s.knobs.empty() ? "default" : s.ToString());
  std::cout << fmt::format("// schedule '{}'; space: {}\n// target {}\n", schedule.ToString(),
                           space, jit.target().Fingerprint());
  if (o.print_llvm || o.print_asm) {
    std::string symbol = "fusetune_kernel";
    auto module = codegen::EmitGroupModule(graph, *group, schedule, jit, symbol,
                                           {.opt_level = 3, .threads = o.threads});
    if (!o.unoptimized) jit.Optimize(*module);
    std::cout << (o.print_asm ? jit.Assembly(*module) : jit.PrintIR(*module));
    return;
  }
  if (group->templ == GroupTemplate::kMatmul || group->Attention()) {
    std::cout << "// the " << TemplateName(group->templ)
              << " template emits LLVM IR directly; use --print-llvm or --print-asm\n";
    return;
  }
  std::cout << codegen::PrintKernel(
      codegen::BuildGroupKernel(graph, *group, schedule, jit.target(), "kernel"));
}

}  // namespace

void RegisterKernelCommand(CLI::App& app) {
  auto options = std::make_shared<KernelOptions>();
  CLI::App* cmd =
      app.add_subcommand("kernel", "Show the kernel the code generator makes for one fused group");
  cmd->add_option("GRAPH", options->graph_path, "Relay text (.relay) or ONNX model (.onnx)")
      ->required();
  cmd->add_option("--group", options->group, "the group's nodes, e.g. %0,%1")->required();
  cmd->add_option("--schedule", options->schedule, "schedule knobs, e.g. vector=8,parallel=0");
  cmd->add_option("--threads", options->threads, "threads the kernel is generated for")
      ->capture_default_str();
  AddDimFlag(cmd, options->dims, /*several=*/false);
  auto* ir = cmd->add_flag("--print-ir", options->print_ir, "print the kernel IR (default)");
  auto* llvm = cmd->add_flag("--print-llvm", options->print_llvm, "print the optimised LLVM IR");
  auto* assembly = cmd->add_flag("--print-asm", options->print_asm, "print the target assembly");
  ir->excludes(llvm)->excludes(assembly);
  llvm->excludes(assembly);
  cmd->add_flag("--O0", options->unoptimized,
                "with --print-llvm/--print-asm: skip the O3 pipeline");
  cmd->callback([options] { Show(*options); });
}

}  // namespace fusetune::cli
