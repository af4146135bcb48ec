#pragma once
// What `fusetune serve` is configured with: where it listens, who may call it, and the limits that
// keep one client or one worker from hurting the others.
#include <cstdint>
#include <string>

namespace fusetune::service {

struct ServiceOptions {
  std::string listen = "127.0.0.1:7600";  // host:port; port 0 picks a free one
  // host:port of the HTTP server for /metrics and the status page; empty = none. Unauthenticated:
  // bind it to a private address.
  std::string metrics_listen;
  std::string db_path;

  // Shared-token auth: empty = no token needed. Workers use `worker_token` when it is set, else
  // `client_token` (one token for everything).
  std::string client_token;
  std::string worker_token;

  // TLS: both set = the server speaks TLS only.
  std::string tls_cert_pem;
  std::string tls_key_pem;

  // Limits. Every refusal names the limit and the value that broke it.
  // An ONNX model carries its weights: a 12-layer BERT-base encoder is 340 MB.
  int64_t max_message_bytes = int64_t{512} << 20;
  int64_t max_nodes = 20000;                       // per submitted graph
  int64_t max_tensor_elements = int64_t{1} << 28;  // per tensor of a submitted graph
  int max_tasks_per_client = 8;                    // unfinished tasks per client label
  int max_running_tasks = 64;                      // tasks searching at once; the rest wait queued

  // The farm's timing: a worker heartbeats every `heartbeat_interval_ms`; a lease not extended by
  // a heartbeat for `lease_ms` goes back to the queue, `max_attempts` times at most.
  int heartbeat_interval_ms = 1000;
  int lease_ms = 10000;
  int max_attempts = 3;
  int max_lease_wait_ms = 10000;  // longest long poll a worker may ask for

  // Idle verification (server/service/idle_verifier.h): when on, once no task has been queued or
  // running for `verify_idle_quiet_ms`, workers re-check stored plans, each at most once per
  // `verify_idle_every_ms`.
  bool verify_idle = false;
  int verify_idle_quiet_ms = 2000;
  int64_t verify_idle_every_ms = int64_t{24} * 3600 * 1000;
};

}  // namespace fusetune::service
