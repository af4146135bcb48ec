// Weights bound with --params and a server: a server keeps its tasks as Relay text, so a remote
// tune with bound weights is refused saying what to do (it would store plans measured without
// them); a lookup needs no weights (binding changes no signature) and is answered.
#include <filesystem>

#include "ir/npy.h"
#include "service_test_util.h"

namespace fusetune::testing {
namespace {

const char* kDense = R"(fn (%x: Tensor[(32, 96), float32], %w: Tensor[(80, 96), float32]) {
  %0 = nn.dense(%x, %w);
  tanh(%0)
}
)";

TEST(ParamsAndAServer, ARemoteTuneWithBoundWeightsIsRefusedAndALookupIsAnswered) {
  TestDir dir;
  const std::string graph = dir.Write("dense.relay", kDense);
  const std::string params = dir.File("weights");
  std::filesystem::create_directories(params);
  WriteNpy(params + "/w.npy", Tensor::Random(TensorType{DType::kFloat32, {80, 96}}, 5));
  ServerProcess server(dir, dir.File("farm.db"));

  CommandResult tune =
      RunFusetune(dir, {"tune", "--server", server.address(), "--params", params, graph});
  EXPECT_EQ(tune.exit_code, 2);
  EXPECT_NE(tune.err.find("--params binds weights for local tunes only"), std::string::npos)
      << tune.err;
  EXPECT_NE(tune.err.find("--local"), std::string::npos) << tune.err;

  // Nothing stored yet: once a worker names the target, the lookup reaches the server and says
  // the region has no plan (exit 3), the same answer as without --params.
  Process worker({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));
  CommandResult plain;
  ASSERT_TRUE(Eventually(
      [&] {
        plain = RunFusetune(dir, {"query", "--server", server.address(), graph});
        return plain.exit_code == 3;
      },
      std::chrono::seconds(30)))
      << plain.err << worker.Err();
  CommandResult bound =
      RunFusetune(dir, {"query", "--server", server.address(), "--params", params, graph});
  EXPECT_EQ(bound.exit_code, 3) << bound.err;
  EXPECT_EQ(bound.out, plain.out);
}

}  // namespace
}  // namespace fusetune::testing
