// `--params DIR` end to end: weights bound to a Relay graph's parameters (as TVM's
// bind_params_by_name) are what `run` computes with, keep the graph's signature, make the tune
// measure weights packed once (`wpack`), and every kind of bad binding is a clear error.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "ir/npy.h"
#include "tests/cli/run_command.h"
#include "tests/db/measured_schedules.h"

namespace fusetune {
namespace {

using testing::AnyPacksWeightsOnce;
using testing::MeasuredSchedules;
using testing::RunFusetune;
using testing::TempDb;
using testing::WriteTempFile;

const char* kDense = R"(fn (%x: Tensor[(32, 96), float32], %w: Tensor[(80, 96), float32],
    %b: Tensor[(80,), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = add(%0, %b);
  tanh(%1)
}
)";

// A fresh directory under the temp directory, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("fusetune_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

Tensor RandomF32(std::vector<int64_t> shape, uint64_t seed) {
  return Tensor::Random(TensorType{DType::kFloat32, std::move(shape)}, seed);
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ParamsCli, RunComputesWithTheBoundWeightsAndTheSignatureStays) {
  const std::string graph = WriteTempFile("params_dense.relay", kDense);
  TempDir params("params_weights"), inputs("params_x"), all("params_all"), out_bound("params_o1"),
      out_given("params_o2");
  const Tensor x = RandomF32({32, 96}, 1), w = RandomF32({80, 96}, 2), b = RandomF32({80}, 3);
  WriteNpy(params.File("w.npy"), w);
  WriteNpy(params.File("b.npy"), b);
  WriteNpy(inputs.File("x.npy"), x);
  WriteNpy(all.File("x.npy"), x);
  WriteNpy(all.File("w.npy"), w);
  WriteNpy(all.File("b.npy"), b);

  auto bound = RunFusetune("run --json --repeat 1 --params " + params.path() + " --inputs " +
                           inputs.path() + " --outputs " + out_bound.path() + " " + graph);
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_LT(nlohmann::json::parse(bound.out)["max_abs_error"].get<double>(), 1e-4);
  auto given = RunFusetune("run --json --repeat 1 --inputs " + all.path() + " --outputs " +
                           out_given.path() + " " + graph);
  ASSERT_EQ(given.exit_code, 0) << given.err;
  const std::string a = Bytes(out_bound.File("output_0.npy")),
                    c = Bytes(out_given.File("output_0.npy"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, c) << "bound weights compute what the same weights given as inputs compute";

  // Binding is not a new graph: plans stored for the unbound graph serve the bound one.
  auto plain = RunFusetune("check --json " + graph);
  auto with = RunFusetune("check --json --params " + params.path() + " " + graph);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(with.exit_code, 0) << with.err;
  const auto listed = nlohmann::json::parse(with.out)["params"];
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_FALSE(listed[0]["bound"].get<bool>()) << "%x";
  EXPECT_TRUE(listed[1]["bound"].get<bool>()) << "%w";
  EXPECT_TRUE(listed[2]["bound"].get<bool>()) << "%b";
  EXPECT_EQ(nlohmann::json::parse(plain.out)["signature"],
            nlohmann::json::parse(with.out)["signature"]);
}

TEST(ParamsCli, TuneMeasuresWeightsPackedOnceOnlyWhenTheWeightsAreBound) {
  const std::string graph = WriteTempFile("params_tune.relay", kDense);
  TempDir params("params_tune_weights");
  WriteNpy(params.File("w.npy"), RandomF32({80, 96}, 2));
  const std::string fast = " --local --json --repeat 2 --min-repeat-ms 1 ";

  TempDb unbound("params_unbound");
  auto plain = RunFusetune("tune" + fast + "--db " + unbound.path() + " " + graph);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_FALSE(AnyPacksWeightsOnce(MeasuredSchedules(unbound.path())))
      << "a weight that is an input cannot be packed ahead";

  TempDb bound("params_bound");
  auto tuned = RunFusetune("tune" + fast + "--params " + params.path() + " --db " + bound.path() +
                           " " + graph);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  EXPECT_TRUE(AnyPacksWeightsOnce(MeasuredSchedules(bound.path())))
      << "the schedule space offers wpack for a bound weight";
  const auto j = nlohmann::json::parse(tuned.out);
  EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4);
}

// Binding is in no key: the store's plan for the graph tuned without weights would answer the
// same graph with them. The tune with --params refuses it (it never offered wpack), searches the
// region again, says so, and stores a plan that answers the next tune with weights.
TEST(ParamsCli, ATuneWithParamsSearchesAgainARegionTunedWithoutThem) {
  const std::string graph = WriteTempFile("params_again.relay", kDense);
  TempDir params("params_again_weights");
  WriteNpy(params.File("w.npy"), RandomF32({80, 96}, 2));
  WriteNpy(params.File("b.npy"), RandomF32({80}, 3));
  TempDb db("params_again");
  const std::string fast = " --local --repeat 2 --min-repeat-ms 1 --db " + db.path() + " ";

  auto plain = RunFusetune("tune --json" + fast + graph);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto first = nlohmann::json::parse(plain.out)["regions"];
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0]["searched_again"].is_null());
  EXPECT_FALSE(AnyPacksWeightsOnce(MeasuredSchedules(db.path())));

  auto bound = RunFusetune("tune" + fast + "--params " + params.path() + " " + graph);
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_NE(bound.out.find("stored plan was tuned without bound weights: searched again"),
            std::string::npos)
      << bound.out;
  EXPECT_TRUE(AnyPacksWeightsOnce(MeasuredSchedules(db.path())));
  const std::string signature = first[0]["signature"].get<std::string>();
  auto shown = RunFusetune("cache show --json --db " + db.path() + " " + signature);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_TRUE(nlohmann::json::parse(shown.out)[0]["weights_bound"].get<bool>()) << shown.out;

  auto again = RunFusetune("tune --json" + fast + "--params " + params.path() + " " + graph);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto third = nlohmann::json::parse(again.out)["regions"];
  EXPECT_TRUE(third[0]["cached"].get<bool>()) << again.out;
  EXPECT_TRUE(third[0]["searched_again"].is_null());
}

TEST(ParamsCli, EachKindOfBadBindingIsAClearError) {
  const std::string graph = WriteTempFile("params_bad.relay", kDense);
  auto missing = RunFusetune("check --params /nonexistent/weights " + graph);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/weights: not a directory"), std::string::npos)
      << missing.err;

  TempDir empty("params_empty");
  auto none = RunFusetune("check --params " + empty.path() + " " + graph);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no .npy files"), std::string::npos) << none.err;

  TempDir typo("params_typo");
  WriteNpy(typo.File("weight.npy"), RandomF32({80, 96}, 2));
  auto unknown = RunFusetune("run --params " + typo.path() + " " + graph);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no parameter %weight to bind (the parameters: %x, %w, %b)"),
            std::string::npos)
      << unknown.err;

  TempDir transposed("params_transposed");
  WriteNpy(transposed.File("w.npy"), RandomF32({96, 80}, 2));
  auto wrong = RunFusetune("tune --local --params " + transposed.path() + " " + graph);
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("the parameter is Tensor[(80, 96), float32]"), std::string::npos)
      << wrong.err;

  TempDir garbled("params_garbled");
  std::ofstream(garbled.File("w.npy")) << "not an npy file";
  auto bad = RunFusetune("query --local --params " + garbled.path() + " " + graph);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("w.npy"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fusetune
