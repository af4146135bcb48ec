// deploy/systemd: the units pass `systemd-analyze verify`, are sandboxed, never forbid W+X memory
// (the JIT needs it), read the token through LoadCredential and pin workers to their CPUs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "deploy_test_util.h"

namespace fusetune::deploy_test {
namespace {
namespace fs = std::filesystem;

const char* const kUnits[] = {"fusetune-server.service", "fusetune-worker@.service"};

fs::path UnitPath(const std::string& name) { return DeployDir() / "systemd" / name; }

std::string Only(const std::multimap<std::string, std::string>& unit, const std::string& key) {
  std::vector<std::string> v = UnitValues(unit, key);
  EXPECT_EQ(v.size(), 1u) << key;
  return v.empty() ? "" : v[0];
}

TEST(SystemdTest, UnitsAreSandboxedAndLeaveTheJitItsMemory) {
  for (const char* name : kUnits) {
    auto unit = ParseUnitFile(UnitPath(name));
    EXPECT_TRUE(Only(unit, "Service.DynamicUser") == "yes" ||
                !UnitValues(unit, "Service.User").empty())
        << name;
    EXPECT_EQ(Only(unit, "Service.ProtectSystem"), "strict") << name;
    EXPECT_EQ(Only(unit, "Service.ProtectHome"), "yes") << name;
    EXPECT_EQ(Only(unit, "Service.PrivateTmp"), "yes") << name;
    EXPECT_EQ(Only(unit, "Service.NoNewPrivileges"), "yes") << name;
    EXPECT_EQ(Only(unit, "Service.Restart"), "on-failure") << name;
    EXPECT_FALSE(Only(unit, "Service.RestrictAddressFamilies").empty()) << name;
    // The LLVM ORC JIT maps code writable, then executable: MemoryDenyWriteExecute breaks it.
    for (const std::string& v : UnitValues(unit, "Service.MemoryDenyWriteExecute"))
      EXPECT_NE(v, "yes") << name;
  }
}

TEST(SystemdTest, TokenComesFromACredential) {
  for (const char* name : kUnits) {
    auto unit = ParseUnitFile(UnitPath(name));
    std::string credential = Only(unit, "Service.LoadCredential");
    std::string id = credential.substr(0, credential.find(':'));
    Invocation exec = MakeInvocation(name, SplitCommandLine(Only(unit, "Service.ExecStart")));
    // %d is $CREDENTIALS_DIRECTORY.
    EXPECT_EQ(FlagValue(exec, "--token-file"), "%d/" + id) << name;
  }
}

TEST(SystemdTest, ServerListensOnAllInterfacesAndKeepsItsStoreInTheStateDirectory) {
  auto unit = ParseUnitFile(UnitPath("fusetune-server.service"));
  Invocation exec = MakeInvocation("server", SplitCommandLine(Only(unit, "Service.ExecStart")));
  EXPECT_EQ(exec.subcommand, "serve");
  EXPECT_EQ(FlagValue(exec, "--listen"), "0.0.0.0:7600");
  EXPECT_EQ(FlagValue(exec, "--metrics-listen"), "0.0.0.0:7601");
  std::string state = Only(unit, "Service.StateDirectory");
  EXPECT_EQ(FlagValue(exec, "--db"), "%S/" + state + "/fusetune.db");
}

// The instance name is the CPU set: CPUAffinity=%i, and --threads counts the affinity mask.
TEST(SystemdTest, WorkerIsPinnedToItsInstanceCpusWithMatchingThreads) {
  auto unit = ParseUnitFile(UnitPath("fusetune-worker@.service"));
  EXPECT_EQ(Only(unit, "Service.CPUAffinity"), "%i");
  Invocation exec = MakeInvocation("worker", SplitCommandLine(Only(unit, "Service.ExecStart")));
  EXPECT_EQ(exec.subcommand, "worker");
  EXPECT_EQ(FlagValue(exec, "--threads"), "$$(nproc)");  // systemd turns $$ into $
  // The server comes from FUSETUNE_SERVER, which `fusetune worker` reads for --server.
  std::vector<std::string> env = UnitValues(unit, "Service.Environment");
  ASSERT_EQ(env.size(), 1u);
  EXPECT_TRUE(env[0].starts_with("FUSETUNE_SERVER=")) << env[0];
  EXPECT_EQ(SplitHostPort(env[0]).second, 7600);
}

// nproc, as the worker's ExecStart uses it, counts the CPUs of the affinity mask.
TEST(SystemdTest, NprocFollowsTheAffinityMask) {
  if (RunShell("command -v taskset && command -v nproc").exit_code != 0)
    GTEST_SKIP() << "needs taskset and nproc";
  Output out = RunShell("env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT taskset -c 0 nproc");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_EQ(out.text, "1\n");
}

// `systemd-analyze verify` on copies whose ExecStart runs the binary just built (verify checks
// that the command exists). Instance fusetune-worker@0-1 exercises CPUAffinity=%i.
TEST(SystemdTest, UnitsPassSystemdAnalyzeVerify) {
  if (RunShell("command -v systemd-analyze").exit_code != 0)
    GTEST_SKIP() << "systemd-analyze is not installed";
  fs::path dir = fs::temp_directory_path() / ("fusetune_units_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : kUnits) {
    std::string text = ReadFile(UnitPath(name));
    text = std::regex_replace(text, std::regex("/usr/local/bin/fusetune"), FUSETUNE_BINARY);
    std::ofstream(dir / name) << text;
  }
  for (const std::string target : {"fusetune-server.service", "fusetune-worker@0-1.service"}) {
    Output out = RunShell("cd " + dir.string() + " && systemd-analyze verify --man=no ./" + target);
    EXPECT_EQ(out.exit_code, 0) << target << ":\n" << out.text;
    // verify exits 0 on warnings such as unknown keys; any line naming our units is a finding.
    EXPECT_EQ(out.text.find("fusetune-"), std::string::npos) << target << ":\n" << out.text;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusetune::deploy_test
