// The built `fusetune` starts cheaply (issue 14: `query` answers in <= 50 ms): LLVM, gRPC and
// abseil are linked statically, libxgboost is loaded only when a model is trained, and a
// position-independent executable packs its relative relocations (DT_RELR). Each of these, undone,
// costs every command tens of milliseconds of dynamic loading (BENCHMARKS.md, "`query` start-up").
#include <gtest/gtest.h>

#include <sstream>

#include "deploy_test_util.h"

namespace fusetune::deploy_test {
namespace {

// Every shared object the dynamic loader maps for the binary (ldd's resolved paths' file names).
std::vector<std::string> LoadedLibraries() {
  Output ldd = RunShell(std::string("ldd ") + FUSETUNE_BINARY);
  EXPECT_EQ(ldd.exit_code, 0) << ldd.text;
  std::vector<std::string> out;
  std::stringstream lines(ldd.text);
  std::string line;
  while (std::getline(lines, line)) {
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    std::string name = line.substr(start, line.find_first_of(" \t", start) - start);
    if (name.find("linux-vdso") == std::string::npos) out.push_back(name);
  }
  return out;
}

TEST(StartupTest, LoadsNeitherLlvmNorGrpcNorXgboostAsSharedLibraries) {
  if (RunShell("command -v ldd").exit_code != 0) GTEST_SKIP() << "needs ldd";
  std::vector<std::string> libraries = LoadedLibraries();
  ASSERT_GE(libraries.size(), 5u);
  for (const std::string& lib : libraries) {
    for (const char* banned : {"libLLVM", "libgrpc", "libgpr", "libabsl", "libupb", "libxgboost"})
      EXPECT_EQ(lib.find(banned), std::string::npos) << lib << " is loaded at every start";
  }
  // Linked dynamically, gRPC alone brought ~55 libraries and the whole set was 82.
  EXPECT_LE(libraries.size(), 30u) << ::testing::PrintToString(libraries);
}

TEST(StartupTest, PositionIndependentAsConfiguredWithPackedRelocations) {
  if (RunShell("command -v readelf").exit_code != 0) GTEST_SKIP() << "needs readelf";
  Output header = RunShell(std::string("readelf -h ") + FUSETUNE_BINARY + " | grep 'Type:'");
  ASSERT_EQ(header.exit_code, 0) << header.text;
  EXPECT_NE(header.text.find(FUSETUNE_PIE ? "DYN" : "EXEC"), std::string::npos) << header.text;
  if (!FUSETUNE_PIE) return;
  // A PIE applies ~120k relative relocations at each start: packed (RELR), not one RELA entry each.
  Output dynamic = RunShell(std::string("readelf -d ") + FUSETUNE_BINARY + " | grep -c RELR");
  EXPECT_NE(dynamic.text.find_first_not_of("0\n"), std::string::npos)
      << "no DT_RELR entry: " << dynamic.text;
}

TEST(StartupTest, VersionRunsWithoutLlvmOrXgboostInTheProcess) {
  // LD_DEBUG=files lists every object the loader opens, including any a static initialiser
  // dlopens; the version path must open neither LLVM nor libxgboost.
  Output run = RunShell(std::string("LD_DEBUG=files ") + FUSETUNE_BINARY + " --version 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.text;
  EXPECT_NE(run.text.find("fusetune "), std::string::npos) << run.text;
  EXPECT_NE(run.text.find("file=libc.so.6"), std::string::npos) << "LD_DEBUG gave nothing";
  EXPECT_EQ(run.text.find("libLLVM"), std::string::npos);
  EXPECT_EQ(run.text.find("libxgboost"), std::string::npos);
}

}  // namespace
}  // namespace fusetune::deploy_test
