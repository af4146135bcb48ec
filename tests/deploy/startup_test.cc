// The built `fusetune` starts cheaply (issue 14: `query` answers in <= 50 ms): it links no code
// generator (LLVM is in `fusetune-codegen`, which it execs for `run` and `kernel`), gRPC and
// abseil are linked statically, libxgboost is loaded only when a model is trained, and a
// position-independent executable packs its relative relocations (DT_RELR). Each of these, undone,
// costs every command tens of milliseconds of start-up (BENCHMARKS.md, "`query` start-up").
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
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

// How many defined symbols of `binary` match the grep -E pattern (demangled names). nm reads each
// binary once (tens of MB of symbols): the list is kept beside the binary for the next pattern.
int CountSymbols(const std::string& binary, const std::string& pattern) {
  const std::string list = binary + ".symbols";
  static std::set<std::string> listed;
  if (listed.insert(binary).second) {
    Output nm = RunShell("nm -C --defined-only " + binary + " >" + list);
    EXPECT_EQ(nm.exit_code, 0) << nm.text;
  }
  Output count = RunShell("grep -cE '" + pattern + "' " + list);
  return std::atoi(count.text.c_str());
}

// LLVM's command-line options and pass registrations are built by its translation units' static
// constructors (`_GLOBAL__sub_I_<file>.cpp`; fusetune's own files are .cc) at every start: ~23 ms.
// `fusetune` has none of them and no JIT or target machine, only LLVM's host detection
// (worker/codegen/target.h); `fusetune-codegen` has them all (which shows the patterns find what
// they look for).
TEST(StartupTest, FusetuneLinksNoCodeGeneratorAndFusetuneCodegenDoes) {
  if (RunShell("command -v nm").exit_code != 0) GTEST_SKIP() << "needs nm";
  const std::string llvm_constructors = "_GLOBAL__sub_I_.*\\.cpp$";
  const std::string code_generator = "llvm::orc::|llvm::TargetMachine::";
  EXPECT_EQ(CountSymbols(FUSETUNE_BINARY, llvm_constructors), 0);
  EXPECT_EQ(CountSymbols(FUSETUNE_BINARY, code_generator), 0);
  EXPECT_GT(CountSymbols(FUSETUNE_BINARY, "llvm::sys::getHostCPUName"), 0);
  EXPECT_GT(CountSymbols(FUSETUNE_CODEGEN_BINARY, llvm_constructors), 100);
  EXPECT_GT(CountSymbols(FUSETUNE_CODEGEN_BINARY, code_generator), 100);
  for (const std::string binary : {FUSETUNE_BINARY, FUSETUNE_CODEGEN_BINARY})
    std::filesystem::remove(binary + ".symbols");
}

// `fusetune` alone in a directory, without `fusetune-codegen` beside it: the commands that compile
// nothing answer as usual (so they never start the code generator), and one that compiles fails
// naming the file it needs, with exit code 1.
TEST(StartupTest, OnlyCodeGenerationCommandsNeedFusetuneCodegen) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(FUSETUNE_BINARY).parent_path() / "tests" / "deploy" / "alone";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path alone = dir / "fusetune";
  std::error_code linked;
  fs::create_hard_link(FUSETUNE_BINARY, alone, linked);
  if (linked) fs::copy_file(FUSETUNE_BINARY, alone);
  ASSERT_FALSE(fs::exists(dir / "fusetune-codegen"));
  const std::string graph = (SourceDir() / "examples" / "bmm_where_dyn.relay").string();
  const std::string db = (dir / "store.db").string();

  Output version = RunShell(alone.string() + " --version 2>&1");
  EXPECT_EQ(version.exit_code, 0) << version.text;
  Output check = RunShell(alone.string() + " check " + graph + " 2>&1");
  EXPECT_EQ(check.exit_code, 0) << check.text;
  // Nothing is stored: an incomplete answer (3), not a failure to start something (1).
  Output query =
      RunShell(alone.string() + " query --db " + db + " " + graph + " --dim x.1,y.1=192 2>&1");
  EXPECT_EQ(query.exit_code, 3) << query.text;
  Output cache = RunShell(alone.string() + " cache ls --db " + db + " 2>&1");
  EXPECT_EQ(cache.exit_code, 0) << cache.text;
  for (const std::string& text : {version.text, check.text, query.text, cache.text})
    EXPECT_EQ(text.find("fusetune-codegen"), std::string::npos) << text;

  Output run = RunShell(alone.string() + " run " + graph + " --dim x.1,y.1=128 2>&1");
  EXPECT_EQ(run.exit_code, 1) << run.text;
  EXPECT_NE(run.text.find("cannot start " + (dir / "fusetune-codegen").string() +
                          ": No such file or directory"),
            std::string::npos)
      << run.text;
  // Bad usage is still caught by `fusetune` itself, before it needs the code generator.
  Output usage = RunShell(alone.string() + " run " + graph + " --repeat many 2>&1");
  EXPECT_EQ(usage.exit_code, 2) << usage.text;
  fs::remove_all(dir);
}

// Through `fusetune`, a code generation command is `fusetune-codegen`'s: same output, same exit
// code, and the error of bad input is its.
TEST(StartupTest, FusetuneExecsFusetuneCodegenForKernel) {
  const std::string graph = (SourceDir() / "examples" / "bmm_where_s128.relay").string();
  const std::string args = " kernel " + graph + " --group %1,%2 2>&1";
  Output via_fusetune = RunShell(std::string(FUSETUNE_BINARY) + args);
  Output direct = RunShell(std::string(FUSETUNE_CODEGEN_BINARY) + args);
  EXPECT_EQ(via_fusetune.exit_code, 0) << via_fusetune.text;
  EXPECT_NE(via_fusetune.text.find("// template"), std::string::npos) << via_fusetune.text;
  EXPECT_EQ(via_fusetune.text, direct.text);
  Output bad = RunShell(std::string(FUSETUNE_BINARY) + " kernel " + graph + " --group %99 2>&1");
  EXPECT_EQ(bad.exit_code, 2) << bad.text;
  EXPECT_NE(bad.text.find("--group: %99 is not a node of the graph"), std::string::npos)
      << bad.text;
}

}  // namespace
}  // namespace fusetune::deploy_test
