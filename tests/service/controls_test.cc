// The per-request controls through gRPC, with a warm cache: a real `fusetune serve` and a
// synthetic worker. A restricted SubmitTune is answered by a search over the stored measurements
// that honours the control, never by a stored plan it forbids, and LookupBest afterwards still
// gives the unrestricted plan. The norms' row kernels are taken out by their wire options.
#include <functional>

#include "service_test_util.h"

namespace fusetune::testing {
namespace {

std::set<std::string> Names(const v1::PlanGroup& g) {
  return std::set<std::string>(g.nodes().begin(), g.nodes().end());
}

v1::TaskStatus TuneAndWait(v1::Tuner::Stub& stub, const v1::TuneOptions& options,
                           const char* relay = kSmallSeed) {
  v1::SubmitTuneRequest request;
  request.mutable_graph()->set_relay_text(relay);
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

// A softmax and a layer norm written op by op, each a row kernel unless the request says not.
const char* kNorms = R"(fn (%x: Tensor[(8, 40), float32], %g: Tensor[(40), float32]) {
  %0 = max(%x, axis=[1], keepdims=True);
  %1 = subtract(%x, %0);
  %2 = exp(%1);
  %3 = sum(%2, axis=[1], keepdims=True);
  %4 = divide(%2, %3);
  %5 = mean(%4, axis=[1], keepdims=True);
  %6 = subtract(%4, %5);
  %7 = power(%6, 2f);
  %8 = mean(%7, axis=[1], keepdims=True);
  %9 = add(%8, 1e-05f);
  %10 = sqrt(%9);
  %11 = divide(%6, %10);
  multiply(%11, %g)
})";

// Whether a kernel of the task's plan holds both `a` and `b`.
bool OneGroupHolds(const v1::TaskStatus& task, const std::string& a, const std::string& b) {
  for (const v1::RegionResult& region : task.result().regions())
    for (const v1::PlanGroup& g : region.plan())
      if (Names(g).count(a) && Names(g).count(b)) return true;
  return false;
}

TEST(Controls, NormRowKernelsAreTakenOutOverTheWire) {
  TestDir dir;
  ServerProcess server(dir, dir.File("norms.db"));
  Process worker({"worker", "--server", server.address(), "--synthetic", "--id", "w1"},
                 dir.File("w1"));
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  // Synthetic figures favour fewer kernels: each norm's two reductions share one.
  v1::TaskStatus plain = TuneAndWait(*stub, {}, kNorms);
  ASSERT_EQ(plain.state(), v1::TASK_STATE_DONE) << plain.error() << "\n" << worker.Err();
  EXPECT_TRUE(OneGroupHolds(plain, "%0", "%3")) << plain.result().DebugString();
  EXPECT_TRUE(OneGroupHolds(plain, "%5", "%8")) << plain.result().DebugString();

  v1::TuneOptions no_softmax;
  no_softmax.set_no_softmax_rows(true);
  v1::TaskStatus a = TuneAndWait(*stub, no_softmax, kNorms);
  ASSERT_EQ(a.state(), v1::TASK_STATE_DONE) << a.error();
  EXPECT_FALSE(OneGroupHolds(a, "%0", "%3")) << a.result().DebugString();
  EXPECT_TRUE(OneGroupHolds(a, "%5", "%8")) << a.result().DebugString();

  v1::TuneOptions no_layer_norm;
  no_layer_norm.set_no_layer_norm_rows(true);
  v1::TaskStatus b = TuneAndWait(*stub, no_layer_norm, kNorms);
  ASSERT_EQ(b.state(), v1::TASK_STATE_DONE) << b.error();
  EXPECT_TRUE(OneGroupHolds(b, "%0", "%3")) << b.result().DebugString();
  EXPECT_FALSE(OneGroupHolds(b, "%5", "%8")) << b.result().DebugString();
}

}  // namespace
}  // namespace fusetune::testing
