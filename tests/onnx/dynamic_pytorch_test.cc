// A PyTorch encoder layer exported with dynamic_axes (tests/onnx/export_dynamic_layer.py), bound
// at several sequence lengths and run by the reference interpreter against PyTorch's outputs.
// Skipped when /usr/bin/python3 lacks torch and onnx.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "ir/dims.h"
#include "ir/interpreter.h"
#include "ir/npy.h"
#include "ir/onnx/onnx_import.h"
#include "ir/text/family.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

namespace fs = std::filesystem;

TEST(OnnxDynamicPyTorch, EncoderLayerAtSeveralLengthsMatchesPyTorch) {
  if (std::system("/usr/bin/python3 -c 'import torch, onnx, numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch and onnx";
  char tmpl[] = "/tmp/fusetune_dynamic_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string command = std::string("/usr/bin/python3 ") + FUSETUNE_SOURCE_DIR +
                              "/tests/onnx/export_dynamic_layer.py --out " + dir +
                              " --seqs 5,11,16 2>" + dir + "/export.log";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  std::ifstream in(dir + "/model.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  DimImporter import = [&](const DimResolver& r) {
    return ImportOnnx(bytes, "model.onnx", {}, &r);
  };
  std::vector<DynamicDim> dims = DiscoverDims(import);
  ASSERT_EQ(dims.size(), 1u) << DimsText(dims);
  EXPECT_EQ(dims[0].name, "seq");
  EXPECT_EQ(dims[0].sites, (std::vector<DimSite>{{"x", 1}}));

  std::string family;
  for (int seq : {5, 11, 16}) {
    Graph g = BindDims(import, dims, {{"seq", seq}});
    Tensor x = ReadNpy(fmt::format("{}/x_{}.npy", dir, seq));
    Tensor want = ReadNpy(fmt::format("{}/y_{}.npy", dir, seq));
    std::vector<Tensor> got = Interpret(g, std::vector<Tensor>{x});
    ASSERT_EQ(got[0].shape(), want.shape()) << seq;
    EXPECT_LE(MaxAbsDifference(got[0], want), 1e-4) << seq;
    // One graph at three lengths: one family.
    std::string key = FamilyKey(g);
    if (family.empty()) family = key;
    EXPECT_EQ(key, family) << seq;
  }
  // A length the exported reshapes cannot take does not exist here: every length fits.
  EXPECT_NO_THROW(BindDims(import, dims, {{"seq", 1}}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusetune::testing
