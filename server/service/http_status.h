#pragma once
// The metrics and status HTTP server of `fusetune serve` (--metrics-listen): a small cpp-httplib
// server on its own port, separate from gRPC so scrapers and browsers need no gRPC, and so it can
// be bound to a private address. It serves
//   GET /metrics     Prometheus text format 0.0.4
//   GET /            the HTML status page
//   GET /api/status  the status page's data as JSON
//   GET /healthz     "ok"
// Nothing here is authenticated; nothing served holds graph text or tokens.
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace fusetune::service {

struct HostPort {
  std::string host;  // without brackets for IPv6
  int port = 0;
};
// "HOST:PORT" or "[V6]:PORT" with a port in 0..65535; a UserError names `flag` and the value.
HostPort ParseHostPort(const std::string& text, const std::string& flag);

class StatusHttpServer {
 public:
  struct Handlers {
    std::function<std::string()> metrics;
    std::function<std::string()> status_json;
    std::function<std::string()> status_html;
  };
  explicit StatusHttpServer(Handlers handlers);
  ~StatusHttpServer();  // Stop()
  StatusHttpServer(const StatusHttpServer&) = delete;
  StatusHttpServer& operator=(const StatusHttpServer&) = delete;

  // Binds `listen` (HOST:PORT; port 0 picks a free one) and serves on a thread of its own.
  // UserError when the address is malformed or cannot be bound (in use, not local).
  void Start(const std::string& listen);
  int port() const { return port_; }
  // Stops accepting and waits for the serving thread.
  void Stop();

 private:
  Handlers handlers_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fusetune::service
