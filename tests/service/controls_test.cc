// The per-request controls through gRPC, with a warm cache: a real `fusetune serve` and a
// synthetic worker. A restricted SubmitTune is answered by a search over the stored measurements
// that honours the control, never by a stored plan it forbids, and LookupBest afterwards still
// gives the unrestricted plan.
#include <functional>

#include "service_test_util.h"

namespace fusetune::testing {
namespace {

std::set<std::string> Names(const v1::PlanGroup& g) {
  return std::set<std::string>(g.nodes().begin(), g.nodes().end());
}

v1::TaskStatus TuneAndWait(v1::Tuner::Stub& stub, const v1::TuneOptions& options) {
  v1::SubmitTuneRequest request;
  request.mutable_graph()->set_relay_text(kSmallSeed);
  *request.mutable_options() = options;
  v1::SubmitTuneResponse response;
  grpc::Status s = stub.SubmitTune(Ctx().get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return WaitForTask(stub, response.task_id(), std::chrono::seconds(60));
}

v1::LookupBestResponse Lookup(v1::Tuner::Stub& stub, const v1::TuneOptions& options) {
  v1::LookupBestRequest request;
  request.mutable_graph()->set_relay_text(kSmallSeed);
  *request.mutable_options() = options;
  v1::LookupBestResponse response;
  grpc::Status s = stub.LookupBest(Ctx().get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response;
}

struct Control {
  std::string name;
  v1::TuneOptions options;
  std::function<bool(const std::set<std::string>&)> refused;  // a group the control refuses
};

std::vector<Control> Controls() {
  std::vector<Control> c(5);
  c[0].name = "never_fuse_ops where";
  c[0].options.add_never_fuse_ops("where");
  c[0].refused = [](auto& g) { return g.size() > 1 && g.count("%2"); };
  c[1].name = "never_fuse_nodes %1";
  c[1].options.add_never_fuse_nodes("%1");
  c[1].refused = [](auto& g) { return g.size() > 1 && g.count("%1"); };
  c[2].name = "forbidden_groups [%0 %1 %2]";
  v1::PlanGroup* forbidden = c[2].options.add_forbidden_groups();
  for (const char* n : {"%0", "%1", "%2"}) forbidden->add_nodes(n);
  c[2].refused = [](auto& g) { return g == std::set<std::string>{"%0", "%1", "%2"}; };
  c[3].name = "max_group_size 2";
  c[3].options.set_max_group_size(2);
  c[3].refused = [](auto& g) { return g.size() > 2; };
  c[4].name = "max_kernel_args 3";  // {%1, %2}: %0 and %z in, one out; any group with %0 has more
  c[4].options.set_max_kernel_args(3);
  c[4].refused = [](auto& g) { return g.size() > 1 && g.count("%0"); };
  return c;
}

TEST(Controls, EveryControlIsHonouredWithAWarmCacheAndLeavesTheStoredPlan) {
  TestDir dir;
  ServerProcess server(dir, dir.File("controls.db"));
  Process worker({"worker", "--server", server.address(), "--synthetic", "--id", "w1"},
                 dir.File("w1"));
  auto stub = v1::Tuner::NewStub(Channel(server.address()));

  v1::TaskStatus cold = TuneAndWait(*stub, {});
  ASSERT_EQ(cold.state(), v1::TASK_STATE_DONE) << cold.error() << "\n" << worker.Err();
  ASSERT_EQ(cold.result().regions_size(), 1);
  // Synthetic figures make fusing everything the best plan.
  ASSERT_EQ(cold.result().regions(0).plan_size(), 1);
  ASSERT_EQ(Names(cold.result().regions(0).plan(0)), (std::set<std::string>{"%0", "%1", "%2"}));
  const int cold_measured = cold.result().candidates_measured();
  ASSERT_GT(cold_measured, 0);

  for (const Control& c : Controls()) {
    v1::TaskStatus r = TuneAndWait(*stub, c.options);
    ASSERT_EQ(r.state(), v1::TASK_STATE_DONE) << c.name << ": " << r.error();
    for (const v1::RegionResult& region : r.result().regions()) {
      EXPECT_FALSE(region.cached()) << c.name << ": answered by a plan it may not use";
      for (const v1::PlanGroup& g : region.plan())
        EXPECT_FALSE(c.refused(Names(g))) << c.name << ": " << r.result().DebugString();
    }
    for (const v1::PlanGroup& g : r.result().plan().groups())
      EXPECT_FALSE(c.refused(Names(g))) << c.name << " (whole graph)";
    EXPECT_LT(r.result().candidates_measured(), cold_measured) << c.name;
    EXPECT_GT(r.result().measurements_reused(), 0) << c.name;

    v1::LookupBestResponse plain = Lookup(*stub, {});
    ASSERT_EQ(plain.regions_size(), 1) << c.name;
    EXPECT_TRUE(plain.missing().empty()) << c.name;
    ASSERT_EQ(plain.regions(0).plan_size(), 1) << c.name << ": the stored plan was overwritten";
    EXPECT_EQ(Names(plain.regions(0).plan(0)), (std::set<std::string>{"%0", "%1", "%2"})) << c.name;
    // Looked up under the control, the stored plan is no answer: the region is missing.
    v1::LookupBestResponse restricted = Lookup(*stub, c.options);
    EXPECT_FALSE(restricted.missing().empty()) << c.name;
    for (const v1::RegionResult& region : restricted.regions())
      for (const v1::PlanGroup& g : region.plan())
        EXPECT_FALSE(c.refused(Names(g))) << c.name << " (lookup)";
  }
}

}  // namespace
}  // namespace fusetune::testing
