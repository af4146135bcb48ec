// The PyTorch BERT encoder layer, exported by bench/bert/export_bert.py, imported and run by the
// reference interpreter against PyTorch's own output. Skipped when /usr/bin/python3 lacks torch
// and onnx (install python3-torch python3-onnx to run it).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/npy.h"
#include "ir/onnx/onnx_import.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

namespace fs = std::filesystem;

bool PythonHasTorch() {
  static const bool ok =
      std::system("/usr/bin/python3 -c 'import torch, onnx, numpy' >/dev/null 2>&1") == 0;
  return ok;
}

class BertLayer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PythonHasTorch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch and onnx";
    char tmpl[] = "/tmp/fusetune_bert_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Exports a layer with these sizes into dir_ (a test failure if the script fails).
  void Export(const std::string& flags) {
    const std::string command = std::string("/usr/bin/python3 ") + FUSETUNE_SOURCE_DIR +
                                "/bench/bert/export_bert.py --out " + dir_ + " " + flags + " 2>" +
                                dir_ + "/export.log";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }

  std::string dir_;
};

std::map<std::string, int> OpCounts(const Graph& g) {
  std::map<std::string, int> counts;
  for (const std::string& op : OpNames(g)) ++counts[op];
  return counts;
}

void ExpectMatchesPyTorch(const std::string& dir, double tolerance) {
  Graph g = ImportOnnxFile(dir + "/model.onnx");
  ASSERT_EQ(g.outputs().size(), 1u);
  Tensor x = ReadNpy(dir + "/inputs/x.npy");
  Tensor want = ReadNpy(dir + "/y.npy");
  std::vector<Tensor> got = Interpret(g, std::vector<Tensor>{x});
  ASSERT_EQ(got[0].shape(), want.shape());
  const double err = MaxAbsDifference(got[0], want);
  EXPECT_LE(err, tolerance);
  std::cout << "max |fusetune reference - PyTorch| = " << err << "\n";
}

TEST_F(BertLayer, SmallLayerAtOpset14MatchesPyTorch) {
  Export("--d-model 64 --heads 4 --ff 128 --seq 16 --opset 14");
  Graph g = ImportOnnxFile(dir_ + "/model.onnx");
  std::map<std::string, int> ops = OpCounts(g);
  // Q/K/V, output projection and the two feed-forward layers: one fused QKV dense, then three.
  EXPECT_EQ(ops["nn.dense"], 4);
  EXPECT_EQ(ops["nn.batch_matmul"], 2);  // scores and context
  EXPECT_EQ(ops["nn.softmax"], 1);
  EXPECT_EQ(ops["erf"], 1);
  // Two layer norms, decomposed by the exporter (opset 14 has no LayerNormalization), put back
  // together by the importer (ir/layer_norm_pattern.h).
  EXPECT_EQ(ops["nn.layer_norm"], 2);
  EXPECT_EQ(ops["mean"], 0);
  EXPECT_EQ(ops["sqrt"], 0);
  // The only parameter without data is the layer's input.
  int without_data = 0;
  for (ValueId p : g.params()) without_data += g.value(p).data == nullptr;
  EXPECT_EQ(without_data, 1);
  ExpectMatchesPyTorch(dir_, 1e-5);
}

TEST_F(BertLayer, SmallLayerAtOpset13WithBatchMatchesPyTorch) {
  Export("--d-model 32 --heads 2 --ff 64 --seq 8 --batch 2 --opset 13");
  ExpectMatchesPyTorch(dir_, 1e-5);
}

TEST_F(BertLayer, BertBaseSizeAtSequence128MatchesPyTorch) {
  Export("--seq 128 --opset 14");
  ExpectMatchesPyTorch(dir_, 1e-4);
}

}  // namespace
}  // namespace fusetune::testing
