// `fusetune serve --listen ADDR --db PATH [...]`: the tuning service. Clients submit graphs
// (`tune --server`), workers (`fusetune worker`) measure; tasks, the job queue and every result
// live in the SQLite file, so a restarted server resumes where it stopped.
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/commands.h"
#include "client/logging.h"
#include "client/search_flags.h"
#include "ir/error.h"
#include "server/service/auth.h"
#include "server/service/http_status.h"
#include "server/service/server.h"

namespace fusetune::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

struct ServeFlags {
  std::string listen = service::ServiceOptions{}.listen;
  std::string metrics_listen;
  std::string db_path;
  std::string token_file, worker_token_file;
  std::string tls_cert, tls_key;
  int max_message_mb = static_cast<int>(service::ServiceOptions{}.max_message_bytes >> 20);
  int64_t max_nodes = service::ServiceOptions{}.max_nodes;
  int64_t max_tensor_elements = service::ServiceOptions{}.max_tensor_elements;
  int max_tasks_per_client = service::ServiceOptions{}.max_tasks_per_client;
  int lease_ms = service::ServiceOptions{}.lease_ms;
  int heartbeat_ms = service::ServiceOptions{}.heartbeat_interval_ms;
  int max_attempts = service::ServiceOptions{}.max_attempts;
  bool verify_idle = false;
  double verify_idle_every_hours = service::ServiceOptions{}.verify_idle_every_ms / 3.6e6;
  int verify_idle_quiet_ms = service::ServiceOptions{}.verify_idle_quiet_ms;
};

std::string ReadPem(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read '{}'", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void RunServe(const ServeFlags& f) {
  UseLogger("serve");
  service::ServiceOptions o;
  o.listen = f.listen;
  // A malformed address is refused before the store is opened.
  service::HostPort metrics_at;
  if (!f.metrics_listen.empty())
    metrics_at = service::ParseHostPort(f.metrics_listen, "--metrics-listen");
  o.metrics_listen = f.metrics_listen;
  SearchFlags db;
  db.db_path = f.db_path;
  o.db_path = DbPath(db);
  if (!f.token_file.empty()) o.client_token = service::ReadTokenFile(f.token_file);
  if (!f.worker_token_file.empty()) o.worker_token = service::ReadTokenFile(f.worker_token_file);
  if (f.tls_cert.empty() != f.tls_key.empty())
    throw UserError("--tls-cert and --tls-key go together");
  if (!f.tls_cert.empty()) {
    o.tls_cert_pem = ReadPem(f.tls_cert);
    o.tls_key_pem = ReadPem(f.tls_key);
  }
  o.max_message_bytes = int64_t{f.max_message_mb} << 20;
  o.max_nodes = f.max_nodes;
  o.max_tensor_elements = f.max_tensor_elements;
  o.max_tasks_per_client = f.max_tasks_per_client;
  o.lease_ms = f.lease_ms;
  o.heartbeat_interval_ms = f.heartbeat_ms;
  o.max_attempts = f.max_attempts;
  o.verify_idle = f.verify_idle;
  o.verify_idle_every_ms = static_cast<int64_t>(f.verify_idle_every_hours * 3.6e6);
  o.verify_idle_quiet_ms = f.verify_idle_quiet_ms;

  service::Server server(o);
  server.Start();
  std::string host = o.listen.substr(0, o.listen.rfind(':'));
  // Tests and scripts read the port from this line (--listen HOST:0 picks a free one).
  std::cout << fmt::format("fusetune serve: listening on {}:{} (db {}{}{})", host, server.port(),
                           o.db_path, o.client_token.empty() ? "" : ", token required",
                           o.tls_cert_pem.empty() ? "" : ", TLS")
            << std::endl;
  if (server.metrics_port() != 0) {
    std::string host = metrics_at.host.find(':') != std::string::npos ? "[" + metrics_at.host + "]"
                                                                      : metrics_at.host;
    // Tests and scripts read this port too (--metrics-listen HOST:0 picks a free one).
    std::cout << fmt::format("fusetune serve: metrics and status page on http://{}:{}/", host,
                             server.metrics_port())
              << std::endl;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("stopping; unfinished tasks resume at the next start");
  server.Shutdown();
}

}  // namespace

void RegisterServeCommand(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the tuning service: clients submit graphs (tune --server), workers measure\n"
      "(fusetune worker). Tasks, the job queue and results live in the SQLite file (--db).");
  cmd->add_option("--listen", flags->listen, "host:port to listen on (port 0: pick a free one)");
  cmd->add_option("--metrics-listen", flags->metrics_listen,
                  "host:port for Prometheus /metrics and the HTML status page (/); port 0 picks "
                  "a free one. Unauthenticated: use a private address. Default: off");
  cmd->add_option("--db", flags->db_path,
                  "SQLite file (default: $FUSETUNE_DB, else ~/.cache/fusetune/fusetune.db)");
  cmd->add_option("--token-file", flags->token_file,
                  "require this token from clients (and workers, unless --worker-token-file)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--worker-token-file", flags->worker_token_file,
                  "require this token from workers")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tls-cert", flags->tls_cert, "PEM certificate chain: serve TLS only")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tls-key", flags->tls_key, "PEM private key of --tls-cert")
      ->check(CLI::ExistingFile);
  cmd->add_option("--max-message-mb", flags->max_message_mb,
                  "largest request accepted (an ONNX model with its weights)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-nodes", flags->max_nodes, "most operators in a submitted graph")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  cmd->add_option("--max-tensor-elements", flags->max_tensor_elements,
                  "most elements in one tensor of a submitted graph")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--max-tasks-per-client", flags->max_tasks_per_client,
                  "unfinished tasks one client may have")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--lease-ms", flags->lease_ms,
                  "a job whose worker stops heartbeating goes back to the queue after this long")
      ->check(CLI::Range(200, 3600000));
  cmd->add_option("--heartbeat-ms", flags->heartbeat_ms, "how often workers heartbeat")
      ->check(CLI::Range(50, 600000));
  cmd->add_option("--max-attempts", flags->max_attempts,
                  "leases per job before it fails with the reasons")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--verify-idle", flags->verify_idle,
                "while no task is queued or running, workers re-check stored plans against their "
                "greedy and unfused plans, the least certain first (as `cache verify`); a plan "
                "slower beyond noise is replaced, the old one kept in the replaced plans. A new "
                "task always goes first");
  cmd->add_option("--verify-idle-every", flags->verify_idle_every_hours,
                  "with --verify-idle: hours before a plan is re-checked again")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--verify-idle-quiet-ms", flags->verify_idle_quiet_ms,
                  "with --verify-idle: how long the farm must be idle before a re-check starts")
      ->check(CLI::Range(0, 3600000));
  cmd->callback([flags] { RunServe(*flags); });
}

}  // namespace fusetune::cli
