#pragma once
// Shared-token auth. A caller sends `authorization: Bearer <token>` metadata; the Tuner service
// checks the client token, WorkerHub the worker token, so a leaked client token cannot feed the
// cache fake measurements. Works with and without TLS (tokens in clear text over plain TCP are
// for trusted networks only).
#include <string>

#include <grpcpp/server_context.h>

namespace fusetune::service {

inline constexpr const char* kAuthMetadataKey = "authorization";

// Throws StatusError(UNAUTHENTICATED) unless `expected` is empty or the call carries it.
// `who` ("client", "worker") goes into the message.
void RequireToken(const grpc::ServerContext& context, const std::string& expected, const char* who);

// Reads a token file: its content with surrounding whitespace removed; an empty or unreadable
// file is a UserError naming the path.
std::string ReadTokenFile(const std::string& path);

}  // namespace fusetune::service
