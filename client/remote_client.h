#pragma once
// The client side of the service: flags shared by every remote subcommand, a connection that adds
// the token to each call, and the remote forms of `tune` and `query`. They return the same
// TuneReport that local mode computes, so cmd_tune/cmd_query print both the same way.
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <CLI/CLI.hpp>

#include "proto/fusetune.grpc.pb.h"
#include "server/tuner.h"

namespace fusetune::cli {

struct RemoteFlags {
  std::string server;      // host:port; empty = local mode
  std::string token_file;  // the client token, sent as `authorization: Bearer`
  std::string tls_ca;      // PEM roots: connect with TLS
};

// --server (also $FUSETUNE_SERVER), --token-file, --tls-ca.
void AddRemoteFlags(CLI::App* cmd, RemoteFlags& flags, bool server_required);

class RemoteClient {
 public:
  explicit RemoteClient(const RemoteFlags& flags);
  v1::Tuner::Stub& tuner() { return *tuner_; }
  // A context carrying the token, with a deadline `timeout` from now (0: none).
  std::unique_ptr<grpc::ClientContext> Context(
      std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // Throws for a failed call: the server's refusals (bad input, auth, limits, unknown ids) are
  // UserError (exit code 2); an unreachable server or an internal error is runtime_error (1).
  void Check(const grpc::Status& status, const std::string& what) const;
  const std::string& server() const { return server_; }

 private:
  std::string server_;
  std::string token_;
  std::unique_ptr<v1::Tuner::Stub> tuner_;
};

// Submits `graph_text` (parsed locally as `graph`; the bytes of an ONNX model when `graph_name`
// ends in .onnx), streams progress to `progress` and returns the finished task's report over
// `graph`'s node ids. Throws when the task fails or is cancelled.
TuneReport RemoteTune(const RemoteFlags& flags, const std::string& graph_name,
                      const std::string& graph_text, const Graph& graph, const TuneOptions& options,
                      const std::string& target, const ProgressFn& progress);

// The stored plans of `graph`'s regions on the server, as LookupCached gives them locally.
TuneReport RemoteLookup(const RemoteFlags& flags, const std::string& graph_name,
                        const std::string& graph_text, const Graph& graph,
                        const SearchOptions& options, const std::string& target,
                        std::vector<std::string>* missing, bool exact_only = false);

v1::TuneOptions TuneOptionsToProto(const TuneOptions& options);

}  // namespace fusetune::cli
