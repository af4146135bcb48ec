#pragma once
// Errors that end an RPC with a particular status. Handlers throw them (or UserError, which is
// INVALID_ARGUMENT) and one wrapper turns them into a grpc::Status, so every handler reads as
// "check, call, answer" and none can forget to finish with a status.
#include <functional>
#include <stdexcept>
#include <string>

#include <grpcpp/support/status.h>

namespace fusetune::service {

class StatusError : public std::runtime_error {
 public:
  StatusError(grpc::StatusCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  grpc::StatusCode code() const { return code_; }

 private:
  grpc::StatusCode code_;
};

// Runs `body`; UserError -> INVALID_ARGUMENT, StatusError -> its code, anything else -> INTERNAL,
// each with the exception's message.
grpc::Status Answer(const std::function<void()>& body);

}  // namespace fusetune::service
