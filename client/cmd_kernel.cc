// `fusetune kernel GRAPH --group %0,%1 [--schedule k=v,...] [--dim NAME=SIZE]
// [--print-ir|--print-llvm|--print-asm]`: show what the code generator makes of one fused group:
// its template, inputs and outputs, and the kernel IR (default), the optimised LLVM IR, or the
// target assembly. A graph with dynamic dimensions is bound with --dim, as for check/run/query.
// Its options; the work is client/kernel_show.cc, in `fusetune-codegen`
// (client/codegen_commands.h).
#include <memory>

#include "client/codegen_commands.h"
#include "client/commands.h"
#include "client/graph_loader.h"

namespace fusetune::cli {

void RegisterKernelCommand(CLI::App& app) {
  auto options = std::make_shared<KernelOptions>();
  CLI::App* cmd =
      app.add_subcommand("kernel", "Show the kernel the code generator makes for one fused group");
  cmd->add_option("GRAPH", options->graph_path, "Relay text (.relay) or ONNX model (.onnx)")
      ->required();
  cmd->add_option("--group", options->group, "the group's nodes, e.g. %0,%1")->required();
  cmd->add_option("--recompute", options->recompute,
                  "members the group recomputes instead of storing (as in a plan that holds them "
                  "in several groups), e.g. %0");
  cmd->add_option("--schedule", options->schedule, "schedule knobs, e.g. vector=8,parallel=0");
  cmd->add_option("--threads", options->threads, "threads the kernel is generated for")
      ->capture_default_str();
  AddDimFlag(cmd, options->dims, /*several=*/false);
  AddParamsFlag(cmd, options->params_dir);
  auto* ir = cmd->add_flag("--print-ir", options->print_ir, "print the kernel IR (default)");
  auto* llvm = cmd->add_flag("--print-llvm", options->print_llvm, "print the optimised LLVM IR");
  auto* assembly = cmd->add_flag("--print-asm", options->print_asm, "print the target assembly");
  ir->excludes(llvm)->excludes(assembly);
  llvm->excludes(assembly);
  cmd->add_flag("--O0", options->unoptimized,
                "with --print-llvm/--print-asm: skip the O3 pipeline");
  cmd->callback([options] { ShowKernel(*options); });
}

}  // namespace fusetune::cli
