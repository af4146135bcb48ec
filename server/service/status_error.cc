#include "server/service/status_error.h"

#include <spdlog/spdlog.h>

#include "ir/error.h"

namespace fusetune::service {

grpc::Status Answer(const std::function<void()>& body) {
  try {
    body();
    return grpc::Status::OK;
  } catch (const StatusError& e) {
    return grpc::Status(e.code(), e.what());
  } catch (const UserError& e) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  }
}

}  // namespace fusetune::service
