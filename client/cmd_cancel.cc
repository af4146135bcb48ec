// `fusetune cancel TASK --server ADDR`: stop a tuning task. Its queued jobs that no other task
// needs leave the queue; a job a worker is running finishes and its measurement is kept.
#include <iostream>

#include <fmt/format.h>

#include "client/commands.h"
#include "client/remote_client.h"

namespace fusetune::cli {
namespace {

struct CancelFlags {
  RemoteFlags remote;
  int64_t task_id = 0;
};

void RunCancel(const CancelFlags& f) {
  RemoteClient client(f.remote);
  v1::CancelTaskRequest request;
  request.set_task_id(f.task_id);
  v1::CancelTaskResponse response;
  client.Check(client.tuner().CancelTask(client.Context().get(), request, &response), "cancel");
  if (response.cancelled()) {
    std::cout << fmt::format("cancelled task {}\n", f.task_id);
  } else {
    std::cout << fmt::format("task {} had already finished ({})\n", f.task_id,
                             response.status().phase());
    SetExitCode(1);
  }
}

}  // namespace

void RegisterCancelCommand(CLI::App& app) {
  auto flags = std::make_shared<CancelFlags>();
  CLI::App* cmd = app.add_subcommand(
      "cancel", "Cancel a tuning task on a server. Exit code 1 when it had already finished.");
  cmd->add_option("TASK", flags->task_id, "task id (see `fusetune tasks`)")->required();
  AddRemoteFlags(cmd, flags->remote, /*server_required=*/true);
  cmd->callback([flags] { RunCancel(*flags); });
}

}  // namespace fusetune::cli
