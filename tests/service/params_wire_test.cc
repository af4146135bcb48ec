// A graph's weights and a server: a remote tune of a Relay graph with `--params DIR`, or of an ONNX
// model with initialisers, tunes those weights as constants, as a local tune does: its denses are
// measured with weights packed once (wpack), the plan it stores runs with the weights, and it keys
// its regions as the local tune does. The weights themselves stay with the client (only the
// parameters' names and types travel). Bad weights fail before anything is stored.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "db/job_queue.h"
#include "ir/npy.h"
#include "service_test_util.h"
#include "tests/db/measured_schedules.h"
#include "tests/onnx/model_builder.h"

namespace fusetune::testing {
namespace {

const char* kDense = R"(fn (%x: Tensor[(32, 96), float32], %w: Tensor[(80, 96), float32]) {
  %0 = nn.dense(%x, %w);
  tanh(%0)
}
)";

const std::vector<std::string> kFast = {"--json", "--repeat", "2", "--min-repeat-ms", "1"};

std::vector<std::string> Args(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::vector<std::string> RegionSignatures(const std::string& tune_json) {
  std::vector<std::string> signatures;
  for (const auto& r : nlohmann::json::parse(tune_json)["regions"])
    signatures.push_back(r["signature"].get<std::string>());
  return signatures;
}

size_t TaskCount(const std::string& address) {
  auto stub = v1::Tuner::NewStub(Channel(address));
  v1::ListTasksRequest request;
  v1::ListTasksResponse response;
  EXPECT_TRUE(stub->ListTasks(Ctx().get(), request, &response).ok());
  return static_cast<size_t>(response.tasks_size());
}

TEST(ParamsAndAServer, ARemoteTuneMeasuresBoundWeightsPackedOnceAndKeysAsTheLocalTune) {
  TestDir dir;
  const std::string graph = dir.Write("dense.relay", kDense);
  const std::string params = dir.File("weights");
  std::filesystem::create_directories(params);
  WriteNpy(params + "/w.npy", Tensor::Random(TensorType{DType::kFloat32, {80, 96}}, 5));
  const std::string farm_db = dir.File("farm.db");
  ServerProcess server(dir, farm_db);
  Process worker({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));

  CommandResult remote = RunFusetune(
      dir, Args({"tune", "--server", server.address(), "--params", params, graph}, kFast), {},
      std::chrono::seconds(120));
  ASSERT_EQ(remote.exit_code, 0) << remote.err << worker.Err();
  EXPECT_TRUE(AnyPacksWeightsOnce(MeasuredSchedules(farm_db)))
      << "the farm offers wpack for a bound weight, as a local tune does";
  // The task keeps which parameters carried weights (a resumed task binds them again).
  {
    db::Database database(farm_db);
    db::JobQueue queue(database);
    std::vector<db::TaskRecord> tasks = queue.ListTasks();
    ASSERT_EQ(tasks.size(), 1u);
    EXPECT_EQ(tasks[0].bound_params_json, R"(["w"])");
    EXPECT_EQ(tasks[0].graph_text.find("w.npy"), std::string::npos);
  }

  // The plan the farm stored runs here with the weights, checked against the interpreter.
  CommandResult run = RunFusetune(
      dir, {"run", "--plan", "tuned", "--db", farm_db, "--params", params, "--json", graph});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_LT(nlohmann::json::parse(run.out)["max_abs_error"].get<double>(), 1e-4) << run.out;

  // A local tune of the same graph and weights measures wpack too and keys the same regions;
  // binding changes no key, locally or remotely, so a query with or without --params is one
  // answer.
  const std::string local_db = dir.File("local.db");
  CommandResult local = RunFusetune(
      dir, Args({"tune", "--local", "--db", local_db, "--params", params, graph}, kFast), {},
      std::chrono::seconds(120));
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_TRUE(AnyPacksWeightsOnce(MeasuredSchedules(local_db)));
  EXPECT_EQ(RegionSignatures(remote.out), RegionSignatures(local.out));
  CommandResult bound = RunFusetune(
      dir, {"query", "--server", server.address(), "--params", params, "--json", graph});
  CommandResult plain = RunFusetune(dir, {"query", "--server", server.address(), "--json", graph});
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_EQ(bound.out, plain.out);
  CommandResult local_query =
      RunFusetune(dir, {"query", "--db", local_db, "--params", params, "--json", graph});
  ASSERT_EQ(local_query.exit_code, 0) << local_query.err;
  EXPECT_EQ(RegionSignatures(bound.out), RegionSignatures(local_query.out));
}

// The service's task path refuses a stored plan that no wpack was offered to, as a local tune
// does: a region tuned remotely without weights is searched again by a remote tune with them,
// which says so on the wire, and the plan it stores answers the next one.
TEST(ParamsAndAServer, ARemoteTuneWithWeightsSearchesAgainARegionTunedWithoutThem) {
  TestDir dir;
  const std::string graph = dir.Write("dense.relay", kDense);
  const std::string params = dir.File("weights");
  std::filesystem::create_directories(params);
  WriteNpy(params + "/w.npy", Tensor::Random(TensorType{DType::kFloat32, {80, 96}}, 5));
  const std::string farm_db = dir.File("farm.db");
  ServerProcess server(dir, farm_db);
  Process worker({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));
  auto tune = [&](std::vector<std::string> head) {
    CommandResult r = RunFusetune(dir, Args(std::move(head), kFast), {}, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 0) << r.err << worker.Err();
    return nlohmann::json::parse(r.exit_code == 0 ? r.out : "{}")["regions"];
  };

  const auto plain = tune({"tune", "--server", server.address(), graph});
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_TRUE(plain[0]["searched_again"].is_null());
  EXPECT_FALSE(AnyPacksWeightsOnce(MeasuredSchedules(farm_db)));

  const auto bound = tune({"tune", "--server", server.address(), "--params", params, graph});
  ASSERT_EQ(bound.size(), 1u);
  EXPECT_FALSE(bound[0]["cached"].get<bool>());
  EXPECT_EQ(bound[0]["searched_again"],
            "stored plan was tuned without bound weights: searched again");
  EXPECT_TRUE(AnyPacksWeightsOnce(MeasuredSchedules(farm_db)));
  {
    db::Database database(farm_db);
    db::Cache cache(database);
    std::vector<db::BestPlanRecord> plans = cache.ListBestPlans();
    ASSERT_EQ(plans.size(), 1u);
    EXPECT_TRUE(plans[0].weights_bound);
    EXPECT_EQ(cache.ListReplacedPlans().size(), 1u);
  }

  const auto again = tune({"tune", "--server", server.address(), "--params", params, graph});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0]["cached"].get<bool>());
  EXPECT_TRUE(again[0]["searched_again"].is_null());
}

TEST(ParamsAndAServer, ARemoteTuneOfAnOnnxModelKeepsItsInitialisers) {
  TestDir dir;
  ModelBuilder m;
  m.Input("x", {32, 96}).Output("y", {32, 80});
  m.Initializer("w", {96, 80}, std::vector<float>(96 * 80, 0.01f));
  m.Node("MatMul", {"x", "w"}, {"h"});
  m.Node("Tanh", {"h"}, {"y"});
  const std::string model = dir.Write("dense.onnx", m.Bytes());
  const std::string farm_db = dir.File("farm.db");
  ServerProcess server(dir, farm_db);
  Process worker({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));

  CommandResult remote =
      RunFusetune(dir, Args({"tune", "--server", server.address(), model}, kFast), {},
                  std::chrono::seconds(120));
  ASSERT_EQ(remote.exit_code, 0) << remote.err << worker.Err();
  EXPECT_TRUE(AnyPacksWeightsOnce(MeasuredSchedules(farm_db)))
      << "an initialiser is a constant of the graph on the server too";
  CommandResult run =
      RunFusetune(dir, {"run", "--plan", "tuned", "--db", farm_db, "--json", model});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_LT(nlohmann::json::parse(run.out)["max_abs_error"].get<double>(), 1e-4) << run.out;

  // A client that sends the model's bytes (the Python client): the server imports it and keeps
  // the initialisers' names as the CLI's request named them.
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  v1::SubmitTuneRequest request;
  request.mutable_graph()->set_onnx_model(m.Bytes());
  request.mutable_options()->set_retune(true);
  v1::SubmitTuneResponse submitted;
  ASSERT_TRUE(stub->SubmitTune(Ctx().get(), request, &submitted).ok());
  EXPECT_EQ(WaitForTask(*stub, submitted.task_id(), std::chrono::seconds(120)).state(),
            v1::TASK_STATE_DONE);
  db::Database database(farm_db);
  db::JobQueue queue(database);
  std::vector<db::TaskRecord> tasks = queue.ListTasks();
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_NE(tasks[0].bound_params_json, "[]");
  EXPECT_EQ(tasks[1].bound_params_json, tasks[0].bound_params_json);
}

TEST(ParamsAndAServer, BadWeightsAreRefusedBeforeAnythingIsStored) {
  TestDir dir;
  const std::string graph = dir.Write("dense.relay", kDense);
  ServerProcess server(dir, dir.File("farm.db"));
  auto tune = [&](const std::string& params) {
    return RunFusetune(dir, {"tune", "--server", server.address(), "--params", params, graph});
  };

  CommandResult missing = tune(dir.File("no_such_dir"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no_such_dir: not a directory"), std::string::npos) << missing.err;

  const std::string unreadable = dir.File("unreadable");
  std::filesystem::create_directories(unreadable);
  dir.Write("unreadable/w.npy", "not an npy file");
  CommandResult garbled = tune(unreadable);
  EXPECT_EQ(garbled.exit_code, 2);
  EXPECT_NE(garbled.err.find("w.npy"), std::string::npos) << garbled.err;

  const std::string misshapen = dir.File("misshapen");
  std::filesystem::create_directories(misshapen);
  WriteNpy(misshapen + "/w.npy", Tensor::Random(TensorType{DType::kFloat32, {80, 95}}, 5));
  CommandResult shape = tune(misshapen);
  EXPECT_EQ(shape.exit_code, 2);
  EXPECT_NE(shape.err.find("the value for parameter %w is Tensor[(80, 95), float32]"),
            std::string::npos)
      << shape.err;

  // The same mistakes from another client reach the server: INVALID_ARGUMENT, saying which.
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  auto submit = [&](const std::string& name, std::vector<int64_t> shape) {
    v1::SubmitTuneRequest request;
    request.mutable_graph()->set_relay_text(kDense);
    v1::BoundParam* p = request.mutable_graph()->add_bound_params();
    p->set_name(name);
    p->mutable_type()->set_dtype(v1::DTYPE_FLOAT32);
    for (int64_t d : shape) p->mutable_type()->add_shape(d);
    v1::SubmitTuneResponse response;
    return stub->SubmitTune(Ctx().get(), request, &response);
  };
  grpc::Status wrong_type = submit("w", {80, 95});
  EXPECT_EQ(wrong_type.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(wrong_type.error_message().find("graph.bound_params: the value for parameter %w is "
                                            "Tensor[(80, 95), float32], the parameter is "
                                            "Tensor[(80, 96), float32]"),
            std::string::npos)
      << wrong_type.error_message();
  grpc::Status no_such = submit("v", {80, 96});
  EXPECT_EQ(no_such.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(no_such.error_message().find("there is no parameter %v to bind"), std::string::npos)
      << no_such.error_message();
  EXPECT_EQ(TaskCount(server.address()), 0u) << "no task was stored";
}

}  // namespace
}  // namespace fusetune::testing
