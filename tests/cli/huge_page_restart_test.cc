// `fusetune` restarts itself on huge-page malloc only for a large ONNX model, and never twice or
// against the user's own malloc tunable.
#include "client/huge_page_restart.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fusetune::cli {
namespace {

namespace fs = std::filesystem;

class HugePageRestart : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fusetune_huge_pages_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = (dir_ / "model.onnx").string();
    std::ofstream(model_, std::ios::binary) << std::string(1000, 'x');
  }
  void TearDown() override { fs::remove_all(dir_); }

  bool Wants(std::vector<std::string> args, const char* tunables, int64_t min_bytes) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return WantsHugePageMalloc(argv, tunables, min_bytes);
  }

  fs::path dir_;
  std::string model_;
};

TEST_F(HugePageRestart, OnlyForAnOnnxFileOfTheBoundOrLarger) {
  EXPECT_TRUE(Wants({"tune", model_, "--threads", "1"}, nullptr, 1000));
  EXPECT_FALSE(Wants({"tune", model_}, nullptr, 1001)) << "smaller than the bound";
  EXPECT_FALSE(Wants({"query", "--json"}, nullptr, 1)) << "no model";
  const std::string relay = (dir_ / "graph.relay").string();
  std::ofstream(relay) << std::string(1000, 'x');
  EXPECT_FALSE(Wants({"tune", relay}, nullptr, 1)) << "Relay text is small: no restart";
  EXPECT_FALSE(Wants({"tune", (dir_ / "missing.onnx").string()}, nullptr, 1))
      << "the command reports a missing file itself";
  fs::create_directories(dir_ / "models.onnx");
  EXPECT_FALSE(Wants({"tune", (dir_ / "models.onnx").string()}, nullptr, 1)) << "a directory";
}

TEST_F(HugePageRestart, NeverTwiceNorAgainstTheUsersTunable) {
  EXPECT_TRUE(Wants({model_}, "glibc.malloc.arena_max=2", 1));
  EXPECT_FALSE(Wants({model_}, "glibc.malloc.hugetlb=1", 1)) << "restarted already";
  EXPECT_FALSE(Wants({model_}, "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0", 1))
      << "the user turned it off";
}

}  // namespace
}  // namespace fusetune::cli
