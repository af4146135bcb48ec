// `fusetune workers --server ADDR [--json]`: the server's benchmark farm.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/commands.h"
#include "client/remote_client.h"
#include "client/tune_table.h"
#include "db/records.h"

namespace fusetune::cli {
namespace {

struct WorkersFlags {
  RemoteFlags remote;
  std::string target;
  bool json = false;
};

std::string Ago(int64_t ms) {
  int64_t s = (db::NowMs() - ms) / 1000;
  if (s < 120) return fmt::format("{}s ago", std::max<int64_t>(s, 0));
  if (s < 7200) return fmt::format("{}m ago", s / 60);
  return fmt::format("{}h ago", s / 3600);
}

void RunWorkers(const WorkersFlags& f) {
  RemoteClient client(f.remote);
  v1::ListWorkersRequest request;
  request.set_target(f.target);
  v1::ListWorkersResponse response;
  client.Check(client.tuner().ListWorkers(client.Context().get(), request, &response), "workers");
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const v1::Worker& w : response.workers())
      out.push_back({{"id", w.worker_id()},
                     {"target", w.target_fingerprint()},
                     {"cores", w.cores()},
                     {"version", w.version()},
                     {"online", w.online()},
                     {"registered_at_ms", w.registered_at_ms()},
                     {"last_heartbeat_ms", w.last_heartbeat_ms()},
                     {"current_job", w.current_job_id()}});
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (response.workers().empty()) {
    std::cout << "no workers have registered with " << client.server() << "\n";
    return;
  }
  std::cout << fmt::format("{:<28} {:<8} {:>5} {:<10} {:<8} {}\n", "worker", "state", "cores",
                           "heartbeat", "job", "target");
  for (const v1::Worker& w : response.workers())
    std::cout << fmt::format("{:<28} {:<8} {:>5} {:<10} {:<8} {}\n", w.worker_id(),
                             w.online() ? "online" : "offline", w.cores(),
                             Ago(w.last_heartbeat_ms()),
                             w.current_job_id() ? std::to_string(w.current_job_id()) : "-",
                             ShortTarget(w.target_fingerprint()));
}

}  // namespace

void RegisterWorkersCommand(CLI::App& app) {
  auto flags = std::make_shared<WorkersFlags>();
  CLI::App* cmd = app.add_subcommand("workers", "List the workers registered with a server.");
  AddRemoteFlags(cmd, flags->remote, /*server_required=*/true);
  cmd->add_option("--target", flags->target,
                  "only workers of this target: its whole fingerprint or its CPU name");
  cmd->add_flag("--json", flags->json, "print JSON");
  cmd->callback([flags] { RunWorkers(*flags); });
}

}  // namespace fusetune::cli
