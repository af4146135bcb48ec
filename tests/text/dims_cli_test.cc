// `--dim` on the command line: check lists a dynamic graph's dims and binds them; tune tunes a set
// of sizes in one invocation; query and run take one size per dim; every bad binding exits 2 with
// a message naming the dimension.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::RunFusetune;
using testing::TempDb;

const std::string kExamples = std::string(FUSETUNE_SOURCE_DIR) + "/examples/";
const std::string kDyn = kExamples + "bmm_where_dyn.relay";
const std::string kFast = " --repeat 2 --min-repeat-ms 1 ";

std::string Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos ? "" : "'" + part + "' not in:\n" + text;
}

std::string SignatureLine(const std::string& out) {
  size_t at = out.find("signature: ");
  return at == std::string::npos ? "" : out.substr(at);
}

// A file in the temp directory, per process (ctest runs tests in parallel).
std::string TempGraph(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("fusetune_dims_" + std::to_string(::getpid()) + "_" + name + ".relay");
  std::ofstream(path) << text;
  return path.string();
}

TEST(DimsCli, CheckListsTheDimsOfADynamicGraph) {
  auto r = RunFusetune("check " + kDyn);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Contains(r.out, "has dynamic dimensions:"), "");
  EXPECT_EQ(Contains(r.out, "x.1          %x axis 1, %z axis 1  (from ?)"), "");
  EXPECT_EQ(Contains(r.out, "y.1          %y axis 1, %z axis 2  (from ?)"), "");
  EXPECT_EQ(Contains(r.out, "--dim x.1=128 --dim y.1=128"), "");
  auto j = RunFusetune("check --json " + kDyn);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto json = nlohmann::json::parse(j.out);
  ASSERT_EQ(json["dims"].size(), 2u);
  EXPECT_EQ(json["dims"][0]["name"], "x.1");
  EXPECT_EQ(json["dims"][0]["sites"][1]["param"], "%z");
  EXPECT_EQ(json["dims"][0]["sites"][1]["axis"], 1);
  // The BERT layer's `?`s are all one length.
  auto bert = RunFusetune("check " + kExamples + "bert_layer_dyn.relay");
  ASSERT_EQ(bert.exit_code, 0) << bert.err;
  EXPECT_EQ(Contains(bert.out, "x.0          %x axis 0, %mask axis 1, %mask axis 2"), "");
}

TEST(DimsCli, CheckWithABindingIsTheStaticGraph) {
  auto bound = RunFusetune("check " + kDyn + " --dim x.1,y.1=256");
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_EQ(Contains(bound.out, "dims: x.1=256, y.1=256\n"), "");
  auto fixed = RunFusetune("check " + kExamples + "bmm_where_s256.relay");
  EXPECT_EQ(SignatureLine(bound.out), SignatureLine(fixed.out));
  auto json =
      nlohmann::json::parse(RunFusetune("check --json " + kDyn + " --dim x.1=8 --dim y.1=16").out);
  EXPECT_EQ(json["binding"]["y.1"], 16);
  EXPECT_EQ(json["params"][2]["type"], "Tensor[(12, 8, 16), float32]");
}

TEST(DimsCli, KernelBindsDimsLikeTheOtherCommands) {
  auto bound = RunFusetune("kernel " + kDyn + " --group %0 --dim x.1,y.1=48 --print-llvm");
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_EQ(Contains(bound.out, "// template matmul"), "");
  // The bound sizes reach the kernel: 12 x 48 x 48 outputs.
  EXPECT_EQ(Contains(bound.out, "inputs [%x, %y]"), "");
  auto other = RunFusetune("kernel " + kDyn + " --group %0 --dim x.1,y.1=40 --print-llvm");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(bound.out, other.out) << "the sizes change the kernel";
  auto unbound = RunFusetune("kernel " + kDyn + " --group %0");
  EXPECT_EQ(unbound.exit_code, 2);
  EXPECT_EQ(Contains(unbound.err, "dimension 'x.1' (%x axis 1, %z axis 1) has no size"), "");
  auto several = RunFusetune("kernel " + kDyn + " --group %0 --dim x.1,y.1=16,32");
  EXPECT_EQ(several.exit_code, 2);
  EXPECT_EQ(Contains(several.err, "kernel takes one size per dimension"), "");
}

TEST(DimsCli, EachKindOfBadBindingExitsTwoNamingTheDimension) {
  struct Bad {
    std::string args, message;
  };
  const std::string reshape =
      TempGraph("reshape",
                "fn (%x: Tensor[(seq, 768), float32]) { reshape(%x, newshape=[-1, 128, "
                "768]) }\n");
  const std::vector<Bad> bad = {
      {"check " + kDyn + " --dim x.1=128",
       "dimension 'y.1' (%y axis 1, %z axis 2) has no size: bind it with --dim y.1=SIZE"},
      {"query " + kDyn, "dimension 'x.1' (%x axis 1, %z axis 1) has no size"},
      {"check " + kDyn + " --dim x.1,y.1=128 --dim seq=128",
       "--dim seq: the graph has no dimension named 'seq' (its dimensions: x.1, y.1)"},
      {"check " + kExamples + "bmm_where_s256.relay --dim seq=128",
       "the graph has no dimension named 'seq' (it has no dynamic dimensions)"},
      {"check " + kDyn + " --dim x.1,y.1=0",
       "--dim x.1,y.1=0: size '0' of these dimensions is "
       "not a positive integer"},
      {"run " + kDyn + " --dim x.1=-4 --dim y.1=4", "size '-4' of dimension 'x.1'"},
      {"check " + kDyn + " --dim x.1", "--dim x.1: expected NAME=SIZE"},
      {"check " + kDyn + " --dim x.1=4 --dim x.1=8", "dimension 'x.1' is given more than once"},
      {"query " + kDyn + " --dim x.1,y.1=64,128",
       "query takes one size per dimension, got 2 for x.1,y.1 (`fusetune tune` takes several)"},
      {"check " + reshape + " --dim seq=100",
       "seq=100 does not fit the graph: " + reshape + ":1:40: error: reshape: cannot infer -1"},
      {"tune " + reshape + " --dim seq=128,100", "seq=100 does not fit the graph"},
  };
  for (const Bad& b : bad) {
    auto r = RunFusetune(b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.err;
    EXPECT_EQ(Contains(r.err, b.message), "") << b.args;
    EXPECT_EQ(r.out, "") << b.args;
  }
  std::filesystem::remove(reshape);
}

TEST(DimsCli, TuneASetOfSizesThenQueryAndRunOne) {
  TempDb db("dims_cli");
  auto tuned = RunFusetune("tune --json --db " + db.path() + kFast + kDyn + " --dim x.1,y.1=16,24");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  auto reports = nlohmann::json::parse(tuned.out);
  ASSERT_TRUE(reports.is_array());
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0]["dims"], (nlohmann::json{{"x.1", 16}, {"y.1", 16}}));
  EXPECT_EQ(reports[1]["dims"], (nlohmann::json{{"x.1", 24}, {"y.1", 24}}));
  EXPECT_NE(reports[0]["regions"][0]["signature"], reports[1]["regions"][0]["signature"]);
  // The table: one per binding, each under its sizes.
  auto table = RunFusetune("tune --db " + db.path() + kFast + kDyn + " --dim x.1,y.1=16,24");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(Contains(table.out, "dims: x.1=16, y.1=16\n"), "");
  EXPECT_EQ(Contains(table.out, "\ndims: x.1=24, y.1=24\n"), "");

  auto hit =
      RunFusetune("query --json --db " + db.path() + " " + kDyn + " --dim x.1=24 --dim y.1=24");
  ASSERT_EQ(hit.exit_code, 0) << hit.err;
  auto j = nlohmann::json::parse(hit.out);
  EXPECT_EQ(j["dims"]["x.1"], 24);
  EXPECT_EQ(j["regions"][0]["cached"], true);
  // Exact answers only: without --exact, 20 would be answered by a plan transferred from 16 or 24.
  auto miss = RunFusetune("query --exact --db " + db.path() + " " + kDyn + " --dim x.1,y.1=20");
  EXPECT_EQ(miss.exit_code, 3) << miss.err;
  EXPECT_EQ(Contains(miss.err, "--dim x.1=20 --dim y.1=20"), "");

  auto run = RunFusetune("run --json --plan tuned --repeat 1 --db " + db.path() + " " + kDyn +
                         " --dim x.1,y.1=16");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto r = nlohmann::json::parse(run.out);
  EXPECT_EQ(r["dims"]["y.1"], 16);
  EXPECT_LT(r["max_abs_error"].get<double>(), 1e-4);
}

}  // namespace
}  // namespace fusetune
