#include "server/service/auth.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "ir/error.h"
#include "server/service/status_error.h"

namespace fusetune::service {
namespace {

// Compares in time independent of where the strings differ, so the token cannot be guessed a
// byte at a time from response times.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

void RequireToken(const grpc::ServerContext& context, const std::string& expected,
                  const char* who) {
  if (expected.empty()) return;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kAuthMetadataKey);
  if (it == metadata.end())
    throw StatusError(grpc::StatusCode::UNAUTHENTICATED,
                      fmt::format("this server needs a {} token: send 'authorization: Bearer "
                                  "<token>' (fusetune: --token-file)",
                                  who));
  std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  if (!value.starts_with(kBearer) || !SameSecret(value.substr(kBearer.size()), expected))
    throw StatusError(grpc::StatusCode::UNAUTHENTICATED, fmt::format("the {} token is wrong", who));
}

std::string ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read the token file '{}'", path));
  std::stringstream s;
  s << in.rdbuf();
  std::string token = Trim(s.str());
  if (token.empty()) throw UserError(fmt::format("the token file '{}' is empty", path));
  if (token.find_first_of("\r\n") != std::string::npos)
    throw UserError(fmt::format("the token file '{}' holds more than one line", path));
  return token;
}

}  // namespace fusetune::service
