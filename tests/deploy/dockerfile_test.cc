// deploy/Dockerfile: two Debian 12 stages, the builder has every package scripts/setup.sh
// installs, the runtime stage has a package for every library the built binary links, and the
// binary runs as a non-root user.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "deploy_test_util.h"

namespace fusetune::deploy_test {
namespace {

struct Instruction {
  std::string keyword;  // upper case: FROM, RUN, ...
  std::string rest;
};
struct Stage {
  std::string from;  // "debian:bookworm AS builder"
  std::vector<Instruction> body;
};

// Instructions with continuation lines joined and comments dropped, grouped by FROM.
std::vector<Stage> ParseDockerfile(const std::string& text) {
  std::vector<Stage> stages;
  std::stringstream in(text);
  std::string line, logical;
  auto flush = [&] {
    size_t start = logical.find_first_not_of(" \t");
    if (start == std::string::npos) return logical.clear();
    std::string s = logical.substr(start);
    logical.clear();
    size_t space = s.find_first_of(" \t");
    Instruction ins{s.substr(0, space), space == std::string::npos ? "" : s.substr(space + 1)};
    for (char& c : ins.keyword) c = static_cast<char>(std::toupper(c));
    if (ins.keyword == "FROM")
      stages.push_back({ins.rest, {}});
    else if (!stages.empty())
      stages.back().body.push_back(ins);
  };
  while (std::getline(in, line)) {
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '#') continue;
    if (!line.empty() && line.back() == '\\') {
      logical += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    logical += line;
    flush();
  }
  flush();
  return stages;
}

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// The package names after `apt-get install ... ` in a stage's RUN lines.
std::set<std::string> AptPackages(const Stage& stage) {
  std::set<std::string> packages;
  for (const Instruction& ins : stage.body) {
    if (ins.keyword != "RUN") continue;
    size_t at = ins.rest.find("apt-get install");
    if (at == std::string::npos) continue;
    std::string tail = ins.rest.substr(at + std::string("apt-get install").size());
    tail = tail.substr(0, tail.find("&&"));
    for (const std::string& w : Words(tail))
      if (!w.starts_with("-")) packages.insert(w);
  }
  return packages;
}

class DockerfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stages_ = ParseDockerfile(ReadFile(DeployDir() / "Dockerfile"));
    ASSERT_EQ(stages_.size(), 2u);
  }
  std::vector<std::string> Values(const Stage& stage, const std::string& keyword) const {
    std::vector<std::string> out;
    for (const Instruction& ins : stage.body)
      if (ins.keyword == keyword) out.push_back(ins.rest);
    return out;
  }
  std::vector<Stage> stages_;
};

TEST_F(DockerfileTest, TwoDebianBookwormStages) {
  EXPECT_EQ(Words(stages_[0].from), (std::vector<std::string>{"debian:bookworm", "AS", "builder"}));
  EXPECT_EQ(Words(stages_[1].from), std::vector<std::string>{"debian:bookworm"});
}

TEST_F(DockerfileTest, BuilderInstallsWhatSetupShInstallsAndBuildsOnlyFusetune) {
  std::string setup = ReadFile(SourceDir() / "scripts" / "setup.sh");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(setup, m, std::regex(R"(PACKAGES=\(([^)]*)\))")));
  std::set<std::string> builder = AptPackages(stages_[0]);
  for (const std::string& p : Words(m[1].str()))
    EXPECT_TRUE(builder.count(p)) << p << " is in scripts/setup.sh but not in the builder stage";
  bool builds_fusetune = false;
  for (const std::string& run : Values(stages_[0], "RUN"))
    builds_fusetune |= run.find("--target fusetune") != std::string::npos;
  EXPECT_TRUE(builds_fusetune);
}

TEST_F(DockerfileTest, RuntimeRunsTheCopiedBinaryAsNonRoot) {
  const Stage& runtime = stages_[1];
  std::vector<std::string> users = Values(runtime, "USER");
  ASSERT_EQ(users.size(), 1u);
  std::string user = users[0].substr(0, users[0].find(':'));
  EXPECT_NE(user, "root");
  EXPECT_NE(user, "0");
  // The same uid as Kubernetes' runAsUser, so the volume's fsGroup and the user agree.
  EXPECT_EQ(user, "10001");

  // `fusetune` execs `fusetune-codegen` from its own directory (worker/codegen_binary.h).
  for (const std::string name : {"fusetune", "fusetune-codegen"}) {
    bool copied = false;
    for (const std::string& copy : Values(runtime, "COPY")) {
      std::vector<std::string> w = Words(copy);
      if (w.size() == 3 && w[0] == "--from=builder" && w[1].ends_with("/" + name) &&
          w[2] == "/usr/local/bin/" + name)
        copied = true;
    }
    EXPECT_TRUE(copied) << "no COPY --from=builder .../" << name << " /usr/local/bin/" << name;
  }
  EXPECT_EQ(Values(runtime, "ENTRYPOINT"),
            std::vector<std::string>{R"(["/usr/local/bin/fusetune"])"});
  std::vector<std::string> exposed = Values(runtime, "EXPOSE");
  ASSERT_EQ(exposed.size(), 1u);
  EXPECT_EQ(Words(exposed[0]), (std::vector<std::string>{"7600", "7601"}));
  EXPECT_EQ(Values(runtime, "VOLUME"), std::vector<std::string>{R"(["/var/lib/fusetune"])"});
}

// Every library the built binaries need directly belongs to a Debian package the runtime stage
// installs (or one debian:bookworm already has), so the image does not fail at start.
TEST_F(DockerfileTest, RuntimeInstallsAPackageForEveryLinkedLibrary) {
  if (RunShell("command -v dpkg-query && command -v readelf").exit_code != 0)
    GTEST_SKIP() << "needs dpkg and readelf";
  Output needed =
      RunShell(std::string("readelf -d ") + FUSETUNE_BINARY + " " + FUSETUNE_CODEGEN_BINARY +
               " | sed -n 's/.*(NEEDED).*\\[\\(.*\\)\\]/\\1/p' | sort -u");
  ASSERT_EQ(needed.exit_code, 0) << needed.text;
  std::vector<std::string> libraries = Words(needed.text);
  ASSERT_GE(libraries.size(), 5u) << needed.text;
  std::string paths;
  for (const std::string& lib : libraries) paths += " '*/" + lib + "'";
  Output owners = RunShell("dpkg-query -S" + paths);
  ASSERT_EQ(owners.exit_code, 0) << owners.text;

  std::set<std::string> installed = AptPackages(stages_[1]);
  for (const char* base : {"libc6", "libstdc++6", "libgcc-s1"}) installed.insert(base);
  std::map<std::string, std::set<std::string>> packages_of;  // library -> owning packages
  std::stringstream lines(owners.text);
  std::string line;
  while (std::getline(lines, line)) {
    size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string package = line.substr(0, line.find(':'));
    std::string library = line.substr(line.rfind('/') + 1);
    packages_of[library].insert(package);
  }
  for (const std::string& lib : libraries) {
    bool covered = false;
    for (const std::string& p : packages_of[lib]) covered |= installed.count(p) > 0;
    EXPECT_TRUE(covered) << lib << " (from " << ::testing::PrintToString(packages_of[lib])
                         << ") has no package in the runtime stage";
  }
}

TEST(DockerIgnoreTest, KeepsBuildTreesAndTheTokenOutOfTheContext) {
  std::vector<std::string> lines = Words(ReadFile(SourceDir() / ".dockerignore"));
  std::set<std::string> entries(lines.begin(), lines.end());
  EXPECT_TRUE(entries.count("build*/"));
  EXPECT_TRUE(entries.count("deploy/token"));
}

}  // namespace
}  // namespace fusetune::deploy_test
