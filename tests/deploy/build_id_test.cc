// `fusetune` and the `fusetune-codegen` it execs carry one build id (cmake/build_id.cmake,
// worker/codegen_binary.h): a `fusetune-codegen` of another build beside `fusetune` (a stale
// sibling) refuses to serve it, with an error that names both executables and what to do, exit 1;
// run by hand, or by a `fusetune` of its own build, it works as ever.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "deploy_test_util.h"

namespace fusetune::deploy_test {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTag = "fusetune-build-id:";

std::string ReadBinary(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The build id an executable carries, or "" (and a test failure) without exactly one.
std::string BuildIdOf(const fs::path& path) {
  const std::string bytes = ReadBinary(path);
  const size_t at = bytes.find(kTag);
  EXPECT_NE(at, std::string::npos) << path;
  if (at == std::string::npos) return "";
  EXPECT_EQ(bytes.find(kTag, at + 1), std::string::npos) << path << " has two build ids";
  return bytes.substr(at + kTag.size(), 32);
}

TEST(BuildId, BothExecutablesCarryTheSameOne) {
  const std::string id = BuildIdOf(FUSETUNE_BINARY);
  ASSERT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(BuildIdOf(FUSETUNE_CODEGEN_BINARY), id);
}

TEST(BuildId, AStaleFusetuneCodegenIsAClearError) {
  const fs::path dir = fs::path(FUSETUNE_BINARY).parent_path() / "tests" / "deploy" / "stale";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path fusetune = dir / "fusetune", codegen = dir / "fusetune-codegen";
  std::error_code linked;
  fs::create_hard_link(FUSETUNE_BINARY, fusetune, linked);
  if (linked) fs::copy_file(FUSETUNE_BINARY, fusetune);
  // The sibling of another build: this build's code generator with another id.
  std::string bytes = ReadBinary(FUSETUNE_CODEGEN_BINARY);
  const size_t at = bytes.find(kTag);
  ASSERT_NE(at, std::string::npos);
  const std::string ours = bytes.substr(at + kTag.size(), 32);
  char& digit = bytes[at + kTag.size()];
  digit = digit == '0' ? '1' : '0';
  const std::string theirs = bytes.substr(at + kTag.size(), 32);
  std::ofstream(codegen, std::ios::binary) << bytes;
  fs::permissions(codegen, fs::perms::owner_all);

  const std::string graph = (SourceDir() / "examples" / "bmm_where_s128.relay").string();
  const std::string kernel = " kernel " + graph + " --group %1,%2 2>&1";
  for (const std::string& command :
       std::vector<std::string>{" run " + graph + " --repeat 1 2>&1", kernel}) {
    Output stale = RunShell(fusetune.string() + command);
    EXPECT_EQ(stale.exit_code, 1) << stale.text;
    for (const std::string& part : std::vector<std::string>{
             fusetune.string() + " and " + codegen.string() + " are from different builds",
             "(build ids " + ours + " and " + theirs + ")", "Rebuild both"})
      EXPECT_NE(stale.text.find(part), std::string::npos) << part << "\n" << stale.text;
  }
  // Commands that need no code generator are not affected.
  Output check = RunShell(fusetune.string() + " check " + graph + " 2>&1");
  EXPECT_EQ(check.exit_code, 0) << check.text;
  // By hand, the stale code generator works: only a `fusetune` of another build is refused.
  Output direct = RunShell(codegen.string() + kernel);
  EXPECT_EQ(direct.exit_code, 0) << direct.text;
  EXPECT_NE(direct.text.find("// template"), std::string::npos) << direct.text;
  // And this build's pair works (the variables are passed and match).
  Output same = RunShell(std::string(FUSETUNE_BINARY) + kernel);
  EXPECT_EQ(same.exit_code, 0) << same.text;
  fs::remove_all(dir);
}

TEST(BuildId, FusetuneCodegenChecksTheCallerItIsTold) {
  const std::string graph = (SourceDir() / "examples" / "bmm_where_s128.relay").string();
  const std::string id = BuildIdOf(FUSETUNE_CODEGEN_BINARY);
  Output other = RunShell(
      "FUSETUNE_CALLER_BUILD_ID=0123456789abcdef0123456789abcdef FUSETUNE_CALLER=/opt/x/fusetune " +
      std::string(FUSETUNE_CODEGEN_BINARY) + " kernel " + graph + " --group %1,%2 2>&1");
  EXPECT_EQ(other.exit_code, 1) << other.text;
  EXPECT_NE(other.text.find("/opt/x/fusetune and " + std::string(FUSETUNE_CODEGEN_BINARY) +
                            " are from different builds (build ids "
                            "0123456789abcdef0123456789abcdef and " +
                            id + ")"),
            std::string::npos)
      << other.text;
  Output same =
      RunShell("FUSETUNE_CALLER_BUILD_ID=" + BuildIdOf(FUSETUNE_CODEGEN_BINARY) +
               " FUSETUNE_CALLER=/opt/x/fusetune " + std::string(FUSETUNE_CODEGEN_BINARY) +
               " kernel " + graph + " --group %1,%2 2>&1");
  EXPECT_EQ(same.exit_code, 0) << same.text;
}

}  // namespace
}  // namespace fusetune::deploy_test
