// deploy/compose.yaml: one server listening where the workers look for it, and workers on
// disjoint CPU sets that offer exactly as many cores as they are pinned to.
#include <gtest/gtest.h>

#include <algorithm>

#include "deploy_test_util.h"

namespace fusetune::deploy_test {
namespace {

class ComposeTest : public ::testing::Test {
 protected:
  void SetUp() override { compose_ = LoadComposeFile(DeployDir() / "compose.yaml"); }

  // The service's fusetune command line: entrypoint (when set) followed by command.
  Invocation Command(const std::string& service) const {
    YAML::Node s = compose_["services"][service];
    std::vector<std::string> tokens = Strings(s["entrypoint"]);
    for (const std::string& t : Strings(s["command"])) tokens.push_back(t);
    return MakeInvocation("compose " + service, tokens);
  }
  std::vector<std::string> Workers() const {
    std::vector<std::string> names;
    for (const auto& kv : compose_["services"])
      if (Command(kv.first.as<std::string>()).subcommand == "worker")
        names.push_back(kv.first.as<std::string>());
    return names;
  }
  // "HOST:CONTAINER" port mappings -> container ports.
  std::set<int> ContainerPorts(const std::string& service) const {
    std::set<int> ports;
    for (const std::string& p : Strings(compose_["services"][service]["ports"]))
      ports.insert(std::stoi(p.substr(p.rfind(':') + 1)));
    return ports;
  }

  YAML::Node compose_;
};

TEST_F(ComposeTest, ServerListensOnAllInterfacesAndPublishesBothPorts) {
  Invocation server = Command("server");
  EXPECT_EQ(server.subcommand, "serve");
  EXPECT_EQ(FlagValue(server, "--listen"), "0.0.0.0:7600");
  EXPECT_EQ(FlagValue(server, "--metrics-listen"), "0.0.0.0:7601");
  EXPECT_EQ(ContainerPorts("server"), (std::set<int>{7600, 7601}));
  EXPECT_EQ(compose_["services"]["server"]["image"].as<std::string>().substr(0, 9), "fusetune:");
}

TEST_F(ComposeTest, ServerKeepsItsStoreOnANamedVolume) {
  Invocation server = Command("server");
  std::optional<std::string> db = FlagValue(server, "--db");
  ASSERT_TRUE(db);
  bool mounted = false;
  for (const std::string& v : Strings(compose_["services"]["server"]["volumes"])) {
    std::string volume = v.substr(0, v.find(':'));
    std::string target = v.substr(v.find(':') + 1);
    if (db->starts_with(target + "/")) {
      mounted = true;
      EXPECT_TRUE(compose_["volumes"][volume]) << "volume " << volume << " is not declared";
    }
  }
  EXPECT_TRUE(mounted) << "--db " << *db << " is not on a volume";
}

TEST_F(ComposeTest, TokenComesFromASecretForServerAndWorkers) {
  std::vector<std::string> services = Workers();
  services.push_back("server");
  for (const std::string& name : services) {
    std::optional<std::string> token = FlagValue(Command(name), "--token-file");
    ASSERT_TRUE(token) << name;
    ASSERT_TRUE(token->starts_with("/run/secrets/")) << name << ": " << *token;
    std::string secret = token->substr(std::string("/run/secrets/").size());
    std::vector<std::string> mounted = Strings(compose_["services"][name]["secrets"]);
    EXPECT_NE(std::find(mounted.begin(), mounted.end(), secret), mounted.end()) << name;
    EXPECT_TRUE(compose_["secrets"][secret]["file"]) << "secret " << secret;
  }
}

TEST_F(ComposeTest, WorkersFindTheServer) {
  std::vector<std::string> workers = Workers();
  ASSERT_GE(workers.size(), 2u);
  auto [listen_host, listen_port] = SplitHostPort(*FlagValue(Command("server"), "--listen"));
  std::string server_image = compose_["services"]["server"]["image"].as<std::string>();
  for (const std::string& w : workers) {
    std::optional<std::string> address = FlagValue(Command(w), "--server");
    ASSERT_TRUE(address) << w;
    auto [host, port] = SplitHostPort(*address);
    EXPECT_EQ(host, "server") << w << " looks for " << *address;
    EXPECT_EQ(port, listen_port) << w;
    EXPECT_TRUE(compose_["services"][w]["depends_on"]["server"]) << w;
    EXPECT_EQ(compose_["services"][w]["image"].as<std::string>(), server_image) << w;
  }
}

TEST_F(ComposeTest, WorkersHaveDisjointCpuSetsAndMatchingThreads) {
  std::set<int> taken = ParseCpuList(compose_["services"]["server"]["cpuset"].as<std::string>());
  std::set<std::string> ids;
  for (const std::string& w : Workers()) {
    YAML::Node cpuset = compose_["services"][w]["cpuset"];
    ASSERT_TRUE(cpuset) << w << " is not pinned";
    std::set<int> cpus = ParseCpuList(cpuset.as<std::string>());
    ASSERT_FALSE(cpus.empty()) << w << ": cpuset '" << cpuset.as<std::string>() << "'";
    for (int c : cpus) EXPECT_TRUE(taken.insert(c).second) << w << " shares CPU " << c;
    std::optional<std::string> threads = FlagValue(Command(w), "--threads");
    ASSERT_TRUE(threads) << w;
    EXPECT_EQ(std::stoi(*threads), static_cast<int>(cpus.size())) << w;
    std::optional<std::string> id = FlagValue(Command(w), "--id");
    ASSERT_TRUE(id) << w;
    EXPECT_TRUE(ids.insert(*id).second) << "two workers named " << *id;
  }
}

}  // namespace
}  // namespace fusetune::deploy_test
