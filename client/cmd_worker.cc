// `fusetune worker --server ADDR`: a benchmark machine of the farm. Leases measurement jobs for
// this CPU, runs each in a sandbox child process, reports, and reconnects with backoff.
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/commands.h"
#include "client/logging.h"
#include "ir/error.h"
#include "server/service/auth.h"
#include "worker/daemon.h"

namespace fusetune::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

struct WorkerFlags {
  DaemonOptions daemon;
  std::string token_file;
  std::string tls_ca;
  int time_limit_s = 120;
};

void RunWorker(WorkerFlags f) {
  UseLogger("worker");
  if (!f.token_file.empty()) f.daemon.token = service::ReadTokenFile(f.token_file);
  if (!f.tls_ca.empty()) {
    std::ifstream in(f.tls_ca);
    std::stringstream s;
    s << in.rdbuf();
    f.daemon.tls_ca_pem = s.str();
  }
  f.daemon.job_time_limit = std::chrono::seconds(f.time_limit_s);
  if (const char* delay = std::getenv("FUSETUNE_TEST_JOB_DELAY_MS"))
    f.daemon.job_delay_ms = std::atoi(delay);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  SetExitCode(RunWorkerDaemon(f.daemon, g_stop));
}

}  // namespace

void RegisterWorkerCommand(CLI::App& app) {
  auto flags = std::make_shared<WorkerFlags>();
  CLI::App* cmd = app.add_subcommand(
      "worker",
      "Measure jobs for a `fusetune serve`: register, lease one job at a time, run it in a\n"
      "sandbox child process, report; reconnect with backoff when the server goes away.");
  cmd->add_option("--server", flags->daemon.server, "address of the server (host:port)")
      ->envname("FUSETUNE_SERVER")
      ->required();
  cmd->add_option("--threads", flags->daemon.cores,
                  "cores this worker offers (default: all of the machine's)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--token-file", flags->token_file, "file holding the server's worker token")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tls-ca", flags->tls_ca, "PEM file of the CA to trust: connect with TLS")
      ->check(CLI::ExistingFile);
  cmd->add_option("--id", flags->daemon.worker_id,
                  "worker id, stable across restarts (default: hostname-pid)");
  cmd->add_option("--time-limit", flags->time_limit_s,
                  "seconds a job may take before its sandbox is killed")
      ->check(CLI::Range(1, 86400));
  // For tests of the farm and load generation: answer with made-up figures (under the target
  // "synthetic" unless --target says otherwise, so they never mix with real measurements).
  cmd->add_flag("--synthetic", flags->daemon.synthetic)->group("");
  cmd->add_option("--target", flags->daemon.target)->group("");
  cmd->callback([flags] { RunWorker(*flags); });
}

}  // namespace fusetune::cli
