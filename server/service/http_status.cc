#include "server/service/http_status.h"

#include <sys/socket.h>

#include <charconv>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "ir/error.h"

namespace fusetune::service {
namespace {

constexpr const char* kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";

// One route: the body from `make`, or a 500 naming the failure (a store error must not kill the
// server, and a scraper should see why).
httplib::Server::Handler Route(std::function<std::string()> make, const char* content_type) {
  return [make = std::move(make), content_type](const httplib::Request& request,
                                                httplib::Response& response) {
    try {
      response.set_content(make(), content_type);
      response.set_header("Cache-Control", "no-store");
    } catch (const std::exception& e) {
      spdlog::error("http {}: {}", request.path, e.what());
      response.status = 500;
      response.set_content(fmt::format("error: {}\n", e.what()), "text/plain; charset=utf-8");
    }
  };
}

}  // namespace

HostPort ParseHostPort(const std::string& text, const std::string& flag) {
  auto bad = [&](const std::string& why) {
    return UserError(
        fmt::format("{}: '{}' is not HOST:PORT ({}); for example 127.0.0.1:7601, or "
                    "port 0 to pick a free one",
                    flag, text, why));
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw bad("no port");
  HostPort out;
  out.host = text.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  else if (out.host.find(':') != std::string::npos)
    throw bad("write an IPv6 address in brackets");
  if (out.host.empty()) throw bad("no host");
  std::string port = text.substr(colon + 1);
  const char* end = port.data() + port.size();
  auto [ptr, ec] = std::from_chars(port.data(), end, out.port);
  if (port.empty() || ec != std::errc() || ptr != end || out.port < 0 || out.port > 65535)
    throw bad("the port must be a number from 0 to 65535");
  return out;
}

StatusHttpServer::StatusHttpServer(Handlers handlers) : handlers_(std::move(handlers)) {}

StatusHttpServer::~StatusHttpServer() { Stop(); }

void StatusHttpServer::Start(const std::string& listen) {
  HostPort where = ParseHostPort(listen, "--metrics-listen");
  http_ = std::make_unique<httplib::Server>();
  // cpp-httplib sets SO_REUSEPORT by default, which would let a second server share a port
  // that is in use; SO_REUSEADDR alone still refuses a port another socket listens on.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // A scraper and a browser or two: a few threads are plenty, and short keep-alives let Stop()
  // return promptly.
  http_->new_task_queue = [] { return new httplib::ThreadPool(4); };
  http_->set_keep_alive_timeout(2);
  http_->Get("/metrics", Route(handlers_.metrics, kPrometheusType));
  http_->Get("/api/status", Route(handlers_.status_json, "application/json"));
  http_->Get("/", Route(handlers_.status_html, "text/html; charset=utf-8"));
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("ok\n", "text/plain; charset=utf-8");
  });
  http_->set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (response.status != 404) return;
    response.set_content(
        fmt::format("no page at {}; try /, /metrics, /api/status or /healthz\n", request.path),
        "text/plain; charset=utf-8");
  });
  if (where.port == 0) {
    port_ = http_->bind_to_any_port(where.host);
  } else {
    port_ = http_->bind_to_port(where.host, where.port) ? where.port : -1;
  }
  if (port_ <= 0) {
    http_.reset();
    port_ = 0;
    throw UserError(fmt::format(
        "--metrics-listen: cannot listen on {} (the port is in use, or the host is not an "
        "address of this machine)",
        listen));
  }
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

void StatusHttpServer::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fusetune::service
