// A stack of PyTorch encoder layers (torch.nn.TransformerEncoder, exported by
// bench/models/export_model.py with each layer's own weights) imports, its repeated layers share
// their region signatures (so a 12-layer model is tuned as one layer), and `fusetune run` under the
// greedy plan, with the exported weights, matches PyTorch's output; so does a stack of LLaMA-style
// decoder blocks, cut into regions alike in every layer. Skipped when /usr/bin/python3 lacks torch
// and onnx (install python3-torch python3-onnx to run it).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/npy.h"
#include "ir/onnx/onnx_import.h"
#include "ir/tensor.h"
#include "model_builder.h"
#include "tests/cli/run_command.h"

namespace fusetune::testing {
namespace {

namespace fs = std::filesystem;

bool PythonHasTorch() {
  static const bool ok =
      std::system("/usr/bin/python3 -c 'import torch, onnx, numpy' >/dev/null 2>&1") == 0;
  return ok;
}

// Small sizes keep the test to seconds; the structure is BERT-base's (post-LN, GELU by erf).
constexpr const char* kSizes = "--d-model 64 --heads 4 --ff 128 --seq 16";

class EncoderStack : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PythonHasTorch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch and onnx";
    char tmpl[] = "/tmp/fusetune_stack_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Exports a `model` stack of `layers` into dir_/NAME; returns that directory.
  std::string Export(const std::string& model, int layers) {
    const std::string out = dir_ + "/" + model + std::to_string(layers);
    const std::string command = std::string("/usr/bin/python3 ") + FUSETUNE_SOURCE_DIR +
                                "/bench/models/export_model.py --model " + model + " --layers " +
                                std::to_string(layers) + " " + kSizes + " --out " + out + " 2>" +
                                dir_ + "/export.log";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return out;
  }

  // The region signatures of the model, in the order `fusetune query --json` lists the regions
  // (an empty store: every region is missing, exit 3, and the report still lists them all).
  std::vector<std::string> RegionSignatures(const std::string& model) {
    CommandResult r = RunFusetune("query --local --db " + dir_ + "/empty.db --json " + model);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    const nlohmann::json report = nlohmann::json::parse(r.out);
    std::vector<std::string> signatures;
    for (const auto& region : report["regions"]) {
      EXPECT_FALSE(region["cached"].get<bool>());
      signatures.push_back(region["signature"].get<std::string>());
    }
    return signatures;
  }

  std::string dir_;
};

std::map<std::string, int> Count(const std::vector<std::string>& names) {
  std::map<std::string, int> counts;
  for (const std::string& n : names) ++counts[n];
  return counts;
}

TEST_F(EncoderStack, TwoLayersImportShareSignaturesAndRunLikePyTorch) {
  const std::string two = Export("bert", 2);
  const std::string one = Export("bert", 1);

  // Import: two layers' worth of ops, every weight a parameter with data, one real input.
  Graph g = ImportOnnxFile(two + "/model.onnx");
  std::map<std::string, int> ops = Count(OpNames(g));
  EXPECT_EQ(ops["nn.dense"], 8);  // fused QKV, output projection, two FFN denses per layer
  EXPECT_EQ(ops["nn.batch_matmul"], 4);
  EXPECT_EQ(ops["nn.softmax"], 2);
  EXPECT_EQ(ops["erf"], 2);
  int without_data = 0;
  for (ValueId p : g.params()) without_data += g.value(p).data == nullptr;
  EXPECT_EQ(without_data, 1);

  // Regions: each of layer 1's has a twin in layer 2 with the same signature, and the stack has
  // exactly the signatures of one layer, so tuning it costs what tuning one layer does.
  std::vector<std::string> stack = RegionSignatures(two + "/model.onnx");
  std::vector<std::string> layer = RegionSignatures(one + "/model.onnx");
  ASSERT_FALSE(layer.empty());
  EXPECT_EQ(stack.size(), 2 * layer.size());
  for (const auto& [signature, n] : Count(stack)) {
    EXPECT_EQ(n, 2 * Count(layer)[signature]) << "region " << signature;
  }
  EXPECT_EQ(std::set<std::string>(stack.begin(), stack.end()),
            std::set<std::string>(layer.begin(), layer.end()));

  // End to end with the exported weights, compiled kernels under TVM's greedy grouping.
  CommandResult r = RunFusetune("run " + two + "/model.onnx --plan greedy --inputs " + two +
                                "/inputs --outputs " + two + "/out --repeat 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(nlohmann::json::parse(r.out)["max_abs_error"].get<double>(), 1e-4);
  Tensor got = ReadNpy(two + "/out/output_0.npy");
  Tensor want = ReadNpy(two + "/y.npy");
  ASSERT_EQ(got.shape(), want.shape());
  const double err = MaxAbsDifference(got, want);
  EXPECT_LE(err, 1e-3);
  std::cout << "max |fusetune greedy - PyTorch| = " << err << "\n";
}

// LLaMA's residual stream joins every layer's tail (output projection, RMS norm, SwiGLU MLP, the
// next layer's RMS norm) into one piece, cut into regions at its period: all four layers' tails
// but the last (which feeds the final norm) share one signature, and the stack has the signatures
// of one layer plus that tail. Cut by bytes alone, the tails fell into pieces of different sizes.
TEST_F(EncoderStack, ALlamaStackIsCutAlikeInEveryLayerAndRunsLikePyTorch) {
  const std::string four = Export("llama", 4);
  const std::string one = Export("llama", 1);
  Graph g = ImportOnnxFile(four + "/model.onnx");
  std::map<std::string, int> ops = Count(OpNames(g));
  EXPECT_EQ(ops["nn.dense"], 28);    // Q, K, V, output, gate, up, down per layer
  EXPECT_EQ(ops["concatenate"], 8);  // rotate_half of Q and K
  EXPECT_EQ(ops["sigmoid"], 4);

  std::vector<std::string> stack = RegionSignatures(four + "/model.onnx");
  std::vector<std::string> layer = RegionSignatures(one + "/model.onnx");
  const std::set<std::string> layer_set(layer.begin(), layer.end());
  std::map<std::string, int> counts = Count(stack);
  int repeated_tails = 0;
  for (const auto& [signature, n] : counts) {
    if (!layer_set.count(signature)) {
      EXPECT_EQ(n, 3) << "a signature the 1-layer model lacks, not the 3 inner tails: "
                      << signature;
      ++repeated_tails;
    }
  }
  EXPECT_EQ(repeated_tails, 1);
  EXPECT_EQ(counts.size(), layer_set.size() + 1);

  CommandResult r = RunFusetune("run " + four + "/model.onnx --plan greedy --inputs " + four +
                                "/inputs --outputs " + four + "/out --repeat 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Tensor got = ReadNpy(four + "/out/output_0.npy");
  Tensor want = ReadNpy(four + "/y.npy");
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LE(MaxAbsDifference(got, want), 1e-3);
}

}  // namespace
}  // namespace fusetune::testing
