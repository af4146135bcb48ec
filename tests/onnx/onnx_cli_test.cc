// `fusetune check` and `fusetune run` on .onnx files, as processes: the loader dispatches on the
// extension, weights come from the model, and import errors exit 2 naming the node.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/npy.h"
#include "ir/onnx/onnx_import.h"
#include "model_builder.h"
#include "tests/cli/run_command.h"

namespace fusetune::testing {
namespace {

namespace fs = std::filesystem;

class OnnxCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fusetune_onnx_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "inputs");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const ModelBuilder& m, const std::string& name) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << m.Bytes();
    return path;
  }

  fs::path dir_;
};

// A dense layer with bias and GELU-by-erf, weights as initialisers.
ModelBuilder DenseGelu() {
  ModelBuilder m(14);
  m.Input("input.1", {2, 8, 16}).Output("y", {2, 8, 32});
  m.Initializer("onnx::MatMul_3", {16, 32}, Ramp(16 * 32, 0.01f));
  m.Initializer("fc.bias", {32}, Ramp(32, 0.05f));
  m.Node("MatMul", {"input.1", "onnx::MatMul_3"}, {"mm"});
  m.Node("Add", {"fc.bias", "mm"}, {"h"});
  m.FloatConstant("sqrt2", {}, {1.4142135f});
  m.Node("Div", {"h", "sqrt2"}, {"d"});
  m.Node("Erf", {"d"}, {"e"});
  m.FloatConstant("one", {}, {1.0f});
  m.Node("Add", {"e", "one"}, {"e1"});
  m.Node("Mul", {"h", "e1"}, {"g"});
  m.FloatConstant("half", {}, {0.5f});
  m.Node("Mul", {"g", "half"}, {"y"});
  return m;
}

TEST_F(OnnxCli, CheckPrintsTheImportedGraph) {
  const std::string model = Write(DenseGelu(), "dense_gelu.onnx");
  CommandResult r = RunFusetune("check " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("%input.1: Tensor[(2, 8, 16), float32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nn.dense(%input.1, %onnx__MatMul_3_T)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("erf("), std::string::npos) << r.out;
}

// A large model restarts `fusetune` on huge-page malloc (client/huge_page_restart.h): the bound
// at one byte makes this one large, and the restarted command answers as the other does.
TEST_F(OnnxCli, ALargeModelRestartsTheCommandWithTheSameAnswer) {
  const std::string model = Write(DenseGelu(), "dense_gelu.onnx");
  CommandResult plain = RunFusetune("check --types " + model, "GLIBC_TUNABLES=");
  CommandResult restarted =
      RunFusetune("check --types " + model, "GLIBC_TUNABLES= FUSETUNE_HUGE_PAGE_MODEL_BYTES=1");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(restarted.exit_code, 0) << restarted.err;
  EXPECT_EQ(restarted.out, plain.out);
  EXPECT_NE(plain.out.find("nn.dense"), std::string::npos) << plain.out;
}

TEST_F(OnnxCli, RunTakesInputsByNameAndWeightsFromTheModel) {
  ModelBuilder m = DenseGelu();
  const std::string model = Write(m, "dense_gelu.onnx");
  Tensor x = F32({2, 8, 16}, Ramp(2 * 8 * 16, 0.01f));
  WriteNpy((dir_ / "inputs" / "input.1.npy").string(), x);
  for (const char* plan : {"greedy", "unfused"}) {
    SCOPED_TRACE(plan);
    const fs::path out = dir_ / (std::string("out_") + plan);
    CommandResult r = RunFusetune("run " + model + " --plan " + plan + " --inputs " +
                                  (dir_ / "inputs").string() + " --outputs " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Tensor got = ReadNpy((out / "output_0.npy").string());
    Tensor want = Interpret(m.Import(), std::vector<Tensor>{x}).at(0);
    EXPECT_LE(MaxAbsDifference(got, want), 1e-5);
    // Not the all-zero output a run without the weights would give.
    EXPECT_GT(MaxAbsDifference(got, Tensor(want.type())), 0.1);
  }
}

TEST_F(OnnxCli, ImportErrorsExitTwoNamingTheNode) {
  ModelBuilder m(13);
  m.Input("x", {4}).Output("y");
  m.Node("TopK", {"x"}, {"y"}, "top");
  const std::string model = Write(m, "topk.onnx");
  CommandResult r = RunFusetune("check " + model);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("node 0 'top' (TopK): op TopK is not supported"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace fusetune::testing
