// `fusetune run GRAPH [--plan unfused|greedy|tuned|PLAN.json] [--db PATH] [--threads N]
// [--inputs DIR] [--outputs DIR] [--repeat N] [--in-sequence] [--against PLAN [--rounds N]]
// [--json] [--dim NAME=SIZE]`: compile every group of the plan, run the graph as that sequence of
// kernels, time each kernel and the whole, and compare the outputs with the reference
// interpreter. Its options; the work is client/run_graph.cc, in `fusetune-codegen`
// (client/codegen_commands.h).
#include <memory>

#include "client/codegen_commands.h"
#include "client/commands.h"
#include "client/graph_loader.h"

namespace fusetune::cli {

void RegisterRunCommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a graph under a fusion plan: compile, time and check every kernel");
  cmd->add_option("GRAPH", options->graph_path, "Relay text (.relay) or ONNX model (.onnx)")
      ->required();
  cmd->add_option(
         "--plan", options->plan,
         "unfused, greedy, tuned (the stored best plans, or for a size never tuned the nearest "
         "tuned size's, transferred; see `fusetune tune`), or a plan JSON file")
      ->capture_default_str();
  cmd->add_option("--db", options->db_path,
                  "SQLite file for --plan tuned (default: as for `fusetune tune`)");
  cmd->add_option("--threads", options->threads, "threads the kernels run with")
      ->capture_default_str();
  cmd->add_option("--inputs", options->inputs_dir,
                  "directory with NAME.npy per parameter (default: random inputs)");
  cmd->add_option("--outputs", options->outputs_dir, "write output_0.npy, ... here");
  cmd->add_option("--repeat", options->repeat, "timing repeats (median reported)")
      ->capture_default_str();
  cmd->add_flag("--in-sequence", options->in_sequence,
                "per-kernel figures read between the kernels of the whole plan's own repeats (what "
                "each costs after the one before it) instead of each kernel timed alone");
  cmd->add_option("--against", options->against,
                  "a second plan (unfused, greedy, tuned or a plan JSON file), checked like "
                  "--plan and timed against it in paired rounds in this process, alternating which "
                  "runs first: the ratio of every round, their median and a sign test");
  cmd->add_option("--rounds", options->rounds, "paired rounds with --against")
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "print the result as JSON");
  AddDimFlag(cmd, options->dims, /*several=*/false);
  AddParamsFlag(cmd, options->params_dir);
  cmd->add_flag("--exact", options->exact,
                "--plan tuned: stored plans of these exact sizes only, no transfer from the "
                "nearest tuned size");
  cmd->callback([options] { RunGraph(*options); });
}

}  // namespace fusetune::cli
