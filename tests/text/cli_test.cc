// Runs the built `fusetune` binary on the examples and on a bad file.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct CliRun {
  int exit_code;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CliRun Fusetune(const std::string& args) {
  // ctest runs each test as its own process, several at once: names must not collide.
  static int counter = 0;
  std::string stem = ::testing::TempDir() + "/fusetune_check_" + std::to_string(::getpid()) + "_" +
                     std::to_string(counter++);
  std::string out = stem + ".out", err = stem + ".err";
  std::string cmd = std::string(FUSETUNE_BINARY) + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  CliRun r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

std::string Example(const std::string& name) {
  return std::string(FUSETUNE_SOURCE_DIR) + "/examples/" + name;
}

TEST(CheckCommand, EveryExamplePasses) {
  for (const char* name :
       {"bmm_where_s256.relay", "sub_exp_100x120x120.relay", "bert_layer_s128.relay"}) {
    CliRun r = Fusetune("check " + Example(name));
    EXPECT_EQ(r.exit_code, 0) << name << r.err;
    EXPECT_NE(r.out.find("\nsignature: "), std::string::npos) << name;
    EXPECT_EQ(r.err, "") << name;
  }
}

TEST(CheckCommand, PrintsTheTypedSeedAndItsSignature) {
  CliRun r = Fusetune("check " + Example("bmm_where_s256.relay"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "fn (%x: Tensor[(12, 256, 64), float32], %y: Tensor[(12, 256, 64), float32], %z: "
            "Tensor[(12, 256, 256), float32]) -> Tensor[(12, 256, 256), float32] {\n"
            "  %0 = nn.batch_matmul(%x, %y) /* ty=Tensor[(12, 256, 256), float32] */;\n"
            "  %1 = ones_like(%0) /* ty=Tensor[(12, 256, 256), float32] */;\n"
            "  where(%z, %0, %1) /* ty=Tensor[(12, 256, 256), float32] */\n"
            "}\n"
            "signature: 21a45f1ad64c8f4d1eb04eb003dc183b\n");
}

TEST(CheckCommand, Json) {
  std::string path = Example("sub_exp_100x120x120.relay");
  CliRun r = Fusetune("check --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& piece :
       {"\"graph\": \"" + path + "\"", std::string("\"signature\": \""),
        std::string("\"name\": \"%m\""),
        std::string("\"type\": \"Tensor[(100, 120, 1), float32]\""),
        std::string("\"op\": \"subtract\""), std::string("\"op\": \"exp\""),
        std::string("\"outputs\": [\n    \"%1\"\n  ]")}) {
    EXPECT_NE(r.out.find(piece), std::string::npos) << piece << "\n" << r.out;
  }
  EXPECT_LT(r.out.find("\"graph\""), r.out.find("\"signature\""));
  EXPECT_LT(r.out.find("\"params\""), r.out.find("\"nodes\""));
}

TEST(CheckCommand, TypesTable) {
  CliRun r = Fusetune("check --types " + Example("bmm_where_s256.relay"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("%0\tnn.batch_matmul\tTensor[(12, 256, 256), float32]\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("%x\tparam\tTensor[(12, 256, 64), float32]\n"), std::string::npos);
}

TEST(CheckCommand, BadInputExitsTwoWithThePositionedMessage) {
  std::string path = ::testing::TempDir() + "/bad.relay";
  {
    std::ofstream f(path);
    f << "fn (%x: Tensor[(12, 256, 64), float32]) {\n  %0 = nn.bach_matmul(%x, %x);\n  %0\n}\n";
  }
  CliRun r = Fusetune("check " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, path + ":2:8: error: unknown operator 'nn.bach_matmul'\n");
  EXPECT_EQ(r.out, "");

  CliRun missing = Fusetune("check " + ::testing::TempDir() + "/no_such_file.relay");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read"), std::string::npos);
}

}  // namespace
