// Every `fusetune` command line in deploy/ (compose, Kubernetes, systemd) uses only subcommands
// and flags the built binary knows: a renamed or removed flag fails here, not at 3 a.m. in a
// container that restarts forever.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "deploy_test_util.h"

namespace fusetune::deploy_test {
namespace {

std::vector<Invocation> AllInvocations() {
  std::vector<Invocation> all;
  YAML::Node compose = LoadComposeFile(DeployDir() / "compose.yaml");
  for (const auto& kv : compose["services"]) {
    std::string name = kv.first.as<std::string>();
    std::vector<std::string> tokens = Strings(kv.second["entrypoint"]);
    for (const std::string& t : Strings(kv.second["command"])) tokens.push_back(t);
    all.push_back(MakeInvocation("compose.yaml " + name, tokens));
    if (YAML::Node check = kv.second["healthcheck"])
      all.push_back(
          MakeInvocation("compose.yaml " + name + " healthcheck", Strings(check["test"])));
  }
  for (const K8sObject& o : LoadK8sObjects()) {
    if (o.kind() != "Deployment" && o.kind() != "DaemonSet") continue;
    YAML::Node pod = o.node["spec"]["template"]["spec"];
    for (const YAML::Node& c : pod["containers"])
      all.push_back(MakeInvocation(o.file, Strings(c["args"])));
  }
  for (const char* unit : {"fusetune-server.service", "fusetune-worker@.service"}) {
    auto parsed = ParseUnitFile(DeployDir() / "systemd" / unit);
    for (const std::string& exec : UnitValues(parsed, "Service.ExecStart"))
      all.push_back(MakeInvocation(unit, SplitCommandLine(exec)));
  }
  return all;
}

// `fusetune [SUB] --help`, once per subcommand.
const std::string& Help(const std::string& subcommand) {
  static std::map<std::string, std::string> cache;
  auto it = cache.find(subcommand);
  if (it != cache.end()) return it->second;
  Output out = RunShell(std::string(FUSETUNE_BINARY) + " " + subcommand + " --help");
  EXPECT_EQ(out.exit_code, 0) << "fusetune " << subcommand << " --help:\n" << out.text;
  return cache[subcommand] = out.text;
}

bool MentionsFlag(const std::string& help, const std::string& flag) {
  // The flag as a whole word: `--listen` must not match inside `--metrics-listen`.
  std::regex word("(^|[^a-z0-9-])" + flag + "($|[^a-z0-9-])");
  return std::regex_search(help, word);
}

TEST(FlagsTest, ManifestsUseTheExpectedSubcommands) {
  std::map<std::string, int> seen;
  for (const Invocation& inv : AllInvocations()) ++seen[inv.subcommand];
  // compose, Kubernetes and systemd each run a server and workers; compose's healthcheck lists
  // workers.
  EXPECT_EQ(seen["serve"], 3);
  EXPECT_GE(seen["worker"], 4);
  EXPECT_EQ(seen["workers"], 1);
  EXPECT_EQ(seen.size(), 3u);
}

TEST(FlagsTest, EveryFlagIsInTheBinarysHelp) {
  const std::string& global = Help("");
  for (const Invocation& inv : AllInvocations()) {
    ASSERT_FALSE(inv.subcommand.empty()) << inv.where;
    const std::string& help = Help(inv.subcommand);
    for (const std::string& flag : LongFlags(inv.args))
      EXPECT_TRUE(MentionsFlag(help, flag) || MentionsFlag(global, flag))
          << inv.where << ": `fusetune " << inv.subcommand << " " << flag
          << "` is in neither `fusetune " << inv.subcommand << " --help` nor `fusetune --help`";
  }
}

}  // namespace
}  // namespace fusetune::deploy_test
