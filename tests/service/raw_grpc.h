#pragma once
// Calls to services fusetune has no generated stubs for (gRPC health checking and reflection),
// made with the generic stub and hand-encoded protobuf bytes. Both requests are tiny:
//   grpc.health.v1.HealthCheckRequest {service = ""}        -> no bytes
//   grpc.reflection.v1alpha.ServerReflectionRequest
//     {list_services = ""} (field 7, length-delimited)      -> 0x3a 0x00
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <string>

namespace fusetune::testing {

inline std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

inline grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

inline bool Next(grpc::CompletionQueue& cq) {
  void* tag = nullptr;
  bool ok = false;
  return cq.Next(&tag, &ok) && ok;
}

// A unary call: returns the status, the response bytes in *response.
inline grpc::Status RawUnary(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& method, const std::string& request,
                             std::string* response) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareUnaryCall(&context, method, Buffer(request), &cq);
  call->StartCall();
  grpc::ByteBuffer reply;
  grpc::Status status;
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  Next(cq);
  if (status.ok()) *response = Bytes(reply);
  return status;
}

// One request, one response on a bidirectional stream.
inline grpc::Status RawBidiOnce(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& method, const std::string& request,
                                std::string* response) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(&context, method, &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  Next(cq);
  call->Write(Buffer(request), reinterpret_cast<void*>(2));
  Next(cq);
  call->WritesDone(reinterpret_cast<void*>(3));
  Next(cq);
  grpc::ByteBuffer reply;
  call->Read(&reply, reinterpret_cast<void*>(4));
  if (Next(cq)) *response = Bytes(reply);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  Next(cq);
  return status;
}

}  // namespace fusetune::testing
