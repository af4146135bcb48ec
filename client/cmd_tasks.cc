// `fusetune tasks --server ADDR [--state S] [--json]`: tuning tasks on a server, newest first.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/commands.h"
#include "client/remote_client.h"
#include "ir/error.h"

namespace fusetune::cli {
namespace {

struct TasksFlags {
  RemoteFlags remote;
  std::vector<std::string> states;
  std::string client;
  int limit = 20;
  bool json = false;
};

std::string StateName(v1::TaskState s) {
  switch (s) {
    case v1::TASK_STATE_QUEUED:
      return "queued";
    case v1::TASK_STATE_RUNNING:
      return "running";
    case v1::TASK_STATE_DONE:
      return "done";
    case v1::TASK_STATE_FAILED:
      return "failed";
    case v1::TASK_STATE_CANCELLED:
      return "cancelled";
    default:
      return "?";
  }
}

v1::TaskState ParseState(const std::string& s) {
  for (v1::TaskState state : {v1::TASK_STATE_QUEUED, v1::TASK_STATE_RUNNING, v1::TASK_STATE_DONE,
                              v1::TASK_STATE_FAILED, v1::TASK_STATE_CANCELLED})
    if (StateName(state) == s) return state;
  throw UserError(fmt::format(
      "--state: '{}' is not a task state (queued, running, done, failed, cancelled)", s));
}

void RunTasks(const TasksFlags& f) {
  RemoteClient client(f.remote);
  v1::ListTasksRequest request;
  for (const std::string& s : f.states) request.add_states(ParseState(s));
  request.set_client(f.client);
  request.set_limit(f.limit);
  v1::ListTasksResponse response;
  client.Check(client.tuner().ListTasks(client.Context().get(), request, &response), "tasks");
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const v1::TaskStatus& t : response.tasks())
      out.push_back({{"id", t.task_id()},
                     {"state", StateName(t.state())},
                     {"phase", t.phase()},
                     {"done", t.done()},
                     {"total", t.total()},
                     {"client", t.client()},
                     {"target", t.target()},
                     {"error", t.error()},
                     {"created_at_ms", t.created_at_ms()},
                     {"updated_at_ms", t.updated_at_ms()}});
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (response.tasks().empty()) {
    std::cout << "no tasks on " << client.server() << "\n";
    return;
  }
  std::cout << fmt::format("{:>6}  {:<10} {:<22} {:>11}  {:<20} {}\n", "task", "state", "phase",
                           "progress", "client", "error");
  for (const v1::TaskStatus& t : response.tasks()) {
    std::string progress = t.total() > 0 ? fmt::format("{}/{}", t.done(), t.total()) : "-";
    std::string error = t.error().substr(0, 60);
    std::cout << fmt::format("{:>6}  {:<10} {:<22} {:>11}  {:<20} {}\n", t.task_id(),
                             StateName(t.state()), t.phase(), progress, t.client(), error);
  }
}

}  // namespace

void RegisterTasksCommand(CLI::App& app) {
  auto flags = std::make_shared<TasksFlags>();
  CLI::App* cmd = app.add_subcommand("tasks", "List the tuning tasks of a server, newest first.");
  AddRemoteFlags(cmd, flags->remote, /*server_required=*/true);
  cmd->add_option("--state", flags->states, "only tasks in these states (queued, running, ...)")
      ->delimiter(',');
  cmd->add_option("--client", flags->client, "only tasks of this client label");
  cmd->add_option("--limit", flags->limit, "most tasks shown")->check(CLI::Range(1, 10000));
  cmd->add_flag("--json", flags->json, "print JSON");
  cmd->callback([flags] { RunTasks(*flags); });
}

}  // namespace fusetune::cli
