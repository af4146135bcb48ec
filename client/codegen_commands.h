#pragma once
// The subcommands that compile kernels: their options, parsed by both executables
// (client/cmd_run.cc, cmd_kernel.cc, cmd_sandbox_child.cc register them), and their work, which
// each executable defines its own way: `fusetune-codegen` does it (client/run_graph.cc,
// client/kernel_show.cc, client/codegen_main.cc), `fusetune` execs `fusetune-codegen` with the
// same arguments (client/codegen_forward.cc), so stdout, stderr and the exit code are that
// binary's.
#include <string>
#include <vector>

namespace fusetune::cli {

struct RunOptions {
  std::string graph_path;
  std::string plan = "greedy";
  std::string db_path;
  int threads = 1;
  std::string inputs_dir;
  std::string outputs_dir;
  int repeat = 5;
  bool json = false;
  std::vector<std::string> dims;
  std::string params_dir;
  bool exact = false;
  bool in_sequence = false;  // per-kernel figures from the whole plan's repeats, not alone
  std::string against;       // a second plan, timed against --plan in paired rounds
  int rounds = 5;            // paired rounds with --against
};

struct KernelOptions {
  std::string graph_path;
  std::string group;
  std::string recompute;  // members of the group it recomputes instead of storing
  std::string schedule;
  bool print_ir = false, print_llvm = false, print_asm = false, unoptimized = false;
  int threads = 1;
  std::vector<std::string> dims;
  std::string params_dir;
};

// `fusetune run`: compiles the plan, runs and times it, compares with the reference interpreter.
void RunGraph(const RunOptions& options);
// `fusetune kernel`: prints the kernel IR, LLVM IR or assembly of one group.
void ShowKernel(const KernelOptions& options);
// `fusetune sandbox-child`: returns the exit code.
int SandboxChild();

}  // namespace fusetune::cli
