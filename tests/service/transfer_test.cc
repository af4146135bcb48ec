// LookupBest answers a size the store has never seen with the nearest tuned size's plan, marked
// `transferred_from`, unless the request asks for exact answers only; a real `fusetune serve`
// over a store filled by a local tune of the dynamic seed at two lengths.
#include <nlohmann/json.hpp>

#include "service_test_util.h"

namespace fusetune::testing {
namespace {

const std::string kDynSeed = std::string(FUSETUNE_SOURCE_DIR) + "/examples/bmm_where_dyn.relay";

const char* kSeed48 =
    R"(fn (%x: Tensor[(12, 48, 64), float32], %y: Tensor[(12, 48, 64), float32], %z: Tensor[(12, 48, 48), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
}
)";

v1::LookupBestResponse Lookup(v1::Tuner::Stub& stub, const std::string& target, int threads,
                              bool exact_only) {
  v1::LookupBestRequest request;
  request.mutable_graph()->set_relay_text(kSeed48);
  request.set_target(target);
  request.set_threads(threads);
  request.set_exact_only(exact_only);
  v1::LookupBestResponse response;
  grpc::Status s = stub.LookupBest(Ctx().get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response;
}

// The dynamic seed tuned locally at `lengths` into a fresh store, and a real `fusetune serve` over
// it.
struct TunedSeedServer {
  explicit TunedSeedServer(const std::string& lengths)
      : target(Tune(lengths)),
        server(dir, db),
        stub(v1::Tuner::NewStub(Channel(server.address()))) {}

  TestDir dir;
  const std::string db = dir.File("store.db");
  const std::string target;  // "" when the tune failed
  ServerProcess server;
  std::unique_ptr<v1::Tuner::Stub> stub;

 private:
  std::string Tune(const std::string& lengths) {
    CommandResult tune =
        RunFusetune(dir,
                    {"tune", "--json", "--db", db, "--repeat", "2", "--min-repeat-ms", "1",
                     kDynSeed, "--dim", "x.1,y.1=" + lengths},
                    {}, std::chrono::seconds(300));
    EXPECT_EQ(tune.exit_code, 0) << tune.err;
    // Several sizes tuned in one task print one report per size; the target is in each.
    std::smatch m;
    EXPECT_TRUE(std::regex_search(tune.out, m, std::regex("\"target\": \"([^\"]+)\""))) << tune.out;
    return m.empty() ? "" : m[1].str();
  }
};

TEST(Transfer, LookupBestAnswersAnUntunedSizeFromTheNearestTunedOne) {
  TunedSeedServer farm("32,56");
  ASSERT_FALSE(farm.target.empty());
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second is not a stale cached answer
    v1::LookupBestResponse r = Lookup(*farm.stub, farm.target, 1, false);
    EXPECT_TRUE(r.missing().empty()) << attempt;
    ASSERT_EQ(r.regions_size(), 1);
    EXPECT_FALSE(r.regions(0).found());
    EXPECT_FALSE(r.regions(0).cached());
    EXPECT_NE(r.regions(0).transferred_from().find("=56 (here 48)"), std::string::npos)
        << r.regions(0).transferred_from();
    EXPECT_GT(r.regions(0).plan_size(), 0);
  }
  v1::LookupBestResponse exact = Lookup(*farm.stub, farm.target, 1, true);
  EXPECT_EQ(exact.missing_size(), 1);
  EXPECT_TRUE(exact.regions(0).transferred_from().empty());
  // Another thread count: nothing to transfer from.
  v1::LookupBestResponse two = Lookup(*farm.stub, farm.target, 2, false);
  EXPECT_EQ(two.missing_size(), 1);
}

TEST(Transfer, LookupBestSaysWhichTunedSizeDidNotCarryOver) {
  // Tuned at S = 64 only, where S equals the head size: its plan does not hold at 48.
  TunedSeedServer farm("64");
  ASSERT_FALSE(farm.target.empty());
  v1::LookupBestResponse r = Lookup(*farm.stub, farm.target, 1, false);
  EXPECT_EQ(r.missing_size(), 1);
  ASSERT_EQ(r.regions_size(), 1);
  EXPECT_TRUE(r.regions(0).transferred_from().empty());
  EXPECT_EQ(r.regions(0).transfer_refused(),
            "tuned at s0=12 s1=64, where 64 is two sizes here (48 and 64)");
}

}  // namespace
}  // namespace fusetune::testing
