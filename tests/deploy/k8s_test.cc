// deploy/k8s: the Service fronts the server's real ports, probes use gRPC health, workers get
// whole CPUs on benchmark nodes, and the token comes from the Secret.
#include <gtest/gtest.h>

#include "deploy_test_util.h"

namespace fusetune::deploy_test {
namespace {

class K8sTest : public ::testing::Test {
 protected:
  void SetUp() override {
    objects_ = LoadK8sObjects();
    server_ = FindK8s(objects_, "Deployment", "fusetune-server");
    workers_ = FindK8s(objects_, "DaemonSet", "fusetune-worker");
    service_ = FindK8s(objects_, "Service", "fusetune-server");
    ASSERT_TRUE(server_ && workers_ && service_);
  }
  static YAML::Node PodSpec(const YAML::Node& workload) {
    return workload["spec"]["template"]["spec"];
  }
  static YAML::Node Container(const YAML::Node& workload) {
    YAML::Node containers = PodSpec(workload)["containers"];
    EXPECT_EQ(containers.size(), 1u);
    return containers[0];
  }
  static Invocation Args(const YAML::Node& workload) {
    return MakeInvocation(workload["metadata"]["name"].as<std::string>(),
                          Strings(Container(workload)["args"]));
  }
  static int ContainerPort(const YAML::Node& workload, const std::string& name) {
    for (const YAML::Node& p : Container(workload)["ports"])
      if (p["name"].as<std::string>() == name) return p["containerPort"].as<int>();
    return -1;
  }
  static YAML::Node Volume(const YAML::Node& workload, const std::string& name) {
    for (const YAML::Node& v : PodSpec(workload)["volumes"])
      if (v["name"].as<std::string>() == name) return v;
    return YAML::Node();
  }
  // The volume mounted at the directory holding `path`, and the path inside it.
  static std::pair<YAML::Node, std::string> VolumeHolding(const YAML::Node& workload,
                                                          const std::string& path) {
    for (const YAML::Node& m : Container(workload)["volumeMounts"]) {
      std::string dir = m["mountPath"].as<std::string>();
      if (path.starts_with(dir + "/"))
        return {Volume(workload, m["name"].as<std::string>()), path.substr(dir.size() + 1)};
    }
    return {YAML::Node(), ""};
  }
  static void ExpectNonRoot(const YAML::Node& workload) {
    std::string name = workload["metadata"]["name"].as<std::string>();
    EXPECT_TRUE(PodSpec(workload)["securityContext"]["runAsNonRoot"].as<bool>()) << name;
    EXPECT_NE(PodSpec(workload)["securityContext"]["runAsUser"].as<int>(), 0) << name;
    YAML::Node sc = Container(workload)["securityContext"];
    EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>()) << name;
    EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>()) << name;
    // A read-only root needs a writable /tmp for whatever a library puts there.
    auto [tmp, rest] = VolumeHolding(workload, "/tmp/x");
    EXPECT_TRUE(tmp && tmp["emptyDir"]) << name << " has no /tmp emptyDir";
  }
  static void ExpectImageIsFusetune(const YAML::Node& workload) {
    std::string image = Container(workload)["image"].as<std::string>();
    std::string repo = image.substr(0, image.rfind(':'));
    EXPECT_EQ(repo.substr(repo.rfind('/') + 1), "fusetune") << image;
  }
  void ExpectTokenFromSecret(const YAML::Node& workload) {
    std::string name = workload["metadata"]["name"].as<std::string>();
    std::optional<std::string> token = FlagValue(Args(workload), "--token-file");
    ASSERT_TRUE(token) << name;
    auto [volume, file] = VolumeHolding(workload, *token);
    ASSERT_TRUE(volume && volume["secret"]) << name << ": " << *token << " is not from a Secret";
    YAML::Node secret =
        FindK8s(objects_, "Secret", volume["secret"]["secretName"].as<std::string>());
    ASSERT_TRUE(secret) << name;
    bool found = false;
    for (const YAML::Node& item : volume["secret"]["items"])
      if (item["path"].as<std::string>() == file) {
        found = true;
        EXPECT_TRUE(secret["stringData"][item["key"].as<std::string>()]) << name;
      }
    EXPECT_TRUE(found) << name << ": no item of the secret volume is " << file;
  }

  std::vector<K8sObject> objects_;
  YAML::Node server_, workers_, service_;
};

TEST_F(K8sTest, EveryDocumentIsAKubernetesObjectInTheNamespace) {
  ASSERT_GE(objects_.size(), 7u);
  for (const K8sObject& o : objects_) {
    ASSERT_TRUE(o.node["apiVersion"] && o.node["kind"]) << o.file;
    if (o.kind() == "Kustomization") continue;
    ASSERT_TRUE(o.node["metadata"]["name"]) << o.file;
    if (o.kind() == "Namespace") continue;
    EXPECT_EQ(o.node["metadata"]["namespace"].as<std::string>(), "fusetune") << o.file;
  }
}

TEST_F(K8sTest, KustomizationListsEveryManifestButTheExampleSecret) {
  YAML::Node k = FindK8s(objects_, "Kustomization");
  std::set<std::string> listed;
  for (const std::string& r : Strings(k["resources"])) listed.insert(r);
  std::set<std::string> files;
  for (const K8sObject& o : objects_)
    if (o.kind() != "Kustomization" && o.kind() != "Secret") files.insert(o.file);
  EXPECT_EQ(listed, files);
}

TEST_F(K8sTest, ServerIsOneReplicaRecreatedOnAReadWriteOncePvc) {
  EXPECT_EQ(server_["spec"]["replicas"].as<int>(), 1);
  EXPECT_EQ(server_["spec"]["strategy"]["type"].as<std::string>(), "Recreate");
  std::optional<std::string> db = FlagValue(Args(server_), "--db");
  ASSERT_TRUE(db);
  auto [volume, file] = VolumeHolding(server_, *db);
  ASSERT_TRUE(volume && volume["persistentVolumeClaim"]) << *db << " is not on a PVC";
  YAML::Node pvc = FindK8s(objects_, "PersistentVolumeClaim",
                           volume["persistentVolumeClaim"]["claimName"].as<std::string>());
  ASSERT_TRUE(pvc);
  EXPECT_EQ(Strings(pvc["spec"]["accessModes"]), std::vector<std::string>{"ReadWriteOnce"});
}

TEST_F(K8sTest, ServerListensOnAllInterfacesWithBothContainerPorts) {
  Invocation args = Args(server_);
  EXPECT_EQ(args.subcommand, "serve");
  EXPECT_EQ(FlagValue(args, "--listen"), "0.0.0.0:7600");
  EXPECT_EQ(FlagValue(args, "--metrics-listen"), "0.0.0.0:7601");
  EXPECT_EQ(ContainerPort(server_, "grpc"), 7600);
  EXPECT_EQ(ContainerPort(server_, "metrics"), 7601);
  ExpectImageIsFusetune(server_);
  ExpectNonRoot(server_);
  ExpectTokenFromSecret(server_);
}

TEST_F(K8sTest, ServerProbesAreGrpcHealthOnPort7600) {
  for (const char* probe : {"startupProbe", "readinessProbe", "livenessProbe"}) {
    YAML::Node p = Container(server_)[probe];
    ASSERT_TRUE(p) << probe;
    ASSERT_TRUE(p["grpc"]) << probe << " is not a gRPC probe";
    EXPECT_EQ(p["grpc"]["port"].as<int>(), 7600) << probe;
  }
}

TEST_F(K8sTest, PrometheusScrapesTheMetricsPort) {
  YAML::Node a = server_["spec"]["template"]["metadata"]["annotations"];
  EXPECT_EQ(a["prometheus.io/scrape"].as<std::string>(), "true");
  EXPECT_EQ(std::stoi(a["prometheus.io/port"].as<std::string>()),
            ContainerPort(server_, "metrics"));
  EXPECT_EQ(a["prometheus.io/path"].as<std::string>(), "/metrics");
}

TEST_F(K8sTest, ServicePortsMatchTheServerContainerPorts) {
  YAML::Node selector = service_["spec"]["selector"];
  YAML::Node labels = server_["spec"]["template"]["metadata"]["labels"];
  for (const auto& kv : selector)
    EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  std::map<std::string, int> ports;
  for (const YAML::Node& p : service_["spec"]["ports"]) {
    std::string target = p["targetPort"].as<std::string>();
    int container = ContainerPort(server_, target);
    if (container < 0) container = std::stoi(target);  // a number rather than a port name
    EXPECT_EQ(p["port"].as<int>(), container) << p["name"].as<std::string>();
    ports[p["name"].as<std::string>()] = container;
  }
  EXPECT_EQ(ports, (std::map<std::string, int>{{"grpc", 7600}, {"metrics", 7601}}));
}

TEST_F(K8sTest, WorkersRunOnBenchmarkNodesAndFindTheService) {
  EXPECT_EQ(PodSpec(workers_)["nodeSelector"]["fusetune.io/benchmark"].as<std::string>(), "true");
  Invocation args = Args(workers_);
  EXPECT_EQ(args.subcommand, "worker");
  std::optional<std::string> address = FlagValue(args, "--server");
  ASSERT_TRUE(address);
  auto [host, port] = SplitHostPort(*address);
  std::string service = service_["metadata"]["name"].as<std::string>();
  EXPECT_TRUE(host == service || host.starts_with(service + ".")) << *address;
  EXPECT_EQ(port, 7600);
  ExpectImageIsFusetune(workers_);
  ExpectNonRoot(workers_);
  ExpectTokenFromSecret(workers_);
}

TEST_F(K8sTest, WorkersAreGuaranteedWithWholeCpusAndMatchingThreads) {
  YAML::Node resources = Container(workers_)["resources"];
  for (const char* r : {"cpu", "memory"}) {
    ASSERT_TRUE(resources["requests"][r] && resources["limits"][r]) << r;
    EXPECT_EQ(resources["requests"][r].as<std::string>(), resources["limits"][r].as<std::string>())
        << r;
  }
  std::string cpu = resources["limits"]["cpu"].as<std::string>();
  ASSERT_FALSE(cpu.empty());
  ASSERT_EQ(cpu.find_first_not_of("0123456789"), std::string::npos)
      << "cpu '" << cpu
      << "' is not a whole number: the static CPU manager gives no exclusive cores";
  std::optional<std::string> threads = FlagValue(Args(workers_), "--threads");
  ASSERT_TRUE(threads);
  EXPECT_EQ(*threads, cpu);
}

}  // namespace
}  // namespace fusetune::deploy_test

namespace fusetune::deploy_test {
namespace {

// `kubectl kustomize` (offline) renders the kustomization: every resource, in the namespace,
// with the octal file modes read as numbers.
TEST(KustomizeTest, KubectlRendersTheFarm) {
  if (RunShell("command -v kubectl").exit_code != 0) GTEST_SKIP() << "kubectl is not installed";
  Output out = RunShell("kubectl kustomize " + (DeployDir() / "k8s").string());
  ASSERT_EQ(out.exit_code, 0) << out.text;
  std::vector<YAML::Node> docs = YAML::LoadAll(out.text);
  std::multiset<std::string> kinds;
  for (const YAML::Node& d : docs) {
    kinds.insert(d["kind"].as<std::string>());
    if (d["kind"].as<std::string>() != "Namespace") {
      EXPECT_EQ(d["metadata"]["namespace"].as<std::string>(), "fusetune");
    }
    if (d["spec"] && d["spec"]["template"])
      for (const YAML::Node& v : d["spec"]["template"]["spec"]["volumes"])
        if (v["secret"]) {
          EXPECT_EQ(v["secret"]["defaultMode"].as<int>(), 0440);
        }
  }
  EXPECT_EQ(kinds, (std::multiset<std::string>{"Namespace", "PersistentVolumeClaim", "Service",
                                               "Deployment", "DaemonSet"}));
}

}  // namespace
}  // namespace fusetune::deploy_test
