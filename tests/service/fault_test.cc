// What farms do to a service: a worker killed in the middle of a job, a server killed and started
// again in the middle of a task. Both tasks must finish, and nothing finished may be measured
// again (checked on the workers' logs and on the store).
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "db/job_queue.h"
#include "service_test_util.h"

namespace fusetune::testing {
namespace {

int64_t Submit(v1::Tuner::Stub& stub, const std::string& relay_text) {
  v1::SubmitTuneRequest request;
  request.mutable_graph()->set_relay_text(relay_text);
  request.mutable_graph()->set_name("chain");
  v1::SubmitTuneResponse response;
  grpc::Status status = stub.SubmitTune(Ctx().get(), request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.task_id();
}

// The job a worker holds, per the server (0 = none).
int64_t CurrentJob(v1::Tuner::Stub& stub, const std::string& worker_id) {
  v1::ListWorkersResponse workers;
  if (!stub.ListWorkers(Ctx().get(), v1::ListWorkersRequest(), &workers).ok()) return 0;
  for (const v1::Worker& w : workers.workers())
    if (w.worker_id() == worker_id) return w.current_job_id();
  return 0;
}

TEST(Faults, AWorkerKilledMidJobCostsOnlyThatJob) {
  TestDir dir;
  const std::string db = dir.File("farm.db");
  ServerProcess server(dir, db, {"--lease-ms", "1500", "--heartbeat-ms", "200"});
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  // The doomed worker sits on its first job long enough to be killed holding it.
  auto doomed = std::make_unique<Process>(
      std::vector<std::string>{"worker", "--server", server.address(), "--synthetic", "--id",
                               "doomed"},
      dir.File("doomed"), std::vector<std::string>{"FUSETUNE_TEST_JOB_DELAY_MS=60000"});
  int64_t task = Submit(*stub, kChain);
  int64_t held = 0;
  ASSERT_TRUE(Eventually([&] { return (held = CurrentJob(*stub, "doomed")) != 0; },
                         std::chrono::seconds(20)))
      << doomed->Err();
  doomed->Kill(SIGKILL);

  Process survivor({"worker", "--server", server.address(), "--synthetic", "--id", "survivor"},
                   dir.File("survivor"));
  v1::TaskStatus status = WaitForTask(*stub, task, std::chrono::seconds(40));
  ASSERT_EQ(status.state(), v1::TASK_STATE_DONE) << status.error() << "\n" << survivor.Err();
  EXPECT_GT(status.result().candidates_measured(), 0);

  // The held job went back to the queue when its lease expired and the survivor measured it;
  // every other job was leased once.
  db::Database database(db);
  db::JobQueue store(database);
  db::JobRecord job = *store.FindJob(held);
  EXPECT_EQ(job.state, db::JobState::kDone);
  EXPECT_EQ(job.attempts, 2);
  EXPECT_NE(job.errors.find("lease expired"), std::string::npos) << job.errors;
  EXPECT_NE(job.errors.find("doomed"), std::string::npos) << job.errors;
  std::vector<int64_t> ran = JobsRun(survivor.Err());
  EXPECT_EQ(std::set<int64_t>(ran.begin(), ran.end()).size(), ran.size()) << survivor.Err();
  EXPECT_TRUE(std::count(ran.begin(), ran.end(), held) == 1);
  for (const db::JobRecord& j : store.ListJobs()) {
    if (j.id != held) {
      EXPECT_EQ(j.attempts, 1) << "job " << j.id;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(ran.size()), store.CountJobs().done);
}

TEST(Faults, AServerKilledMidTaskResumesAndRepeatsNoMeasurement) {
  TestDir dir;
  const std::string db = dir.File("farm.db");
  auto server = std::make_unique<ServerProcess>(
      dir, db, std::vector<std::string>{"--lease-ms", "2000", "--heartbeat-ms", "200"});
  const int port = server->port();
  const std::string address = server->address();
  std::vector<std::string> slow = {"FUSETUNE_TEST_JOB_DELAY_MS=150"};
  Process w1({"worker", "--server", address, "--synthetic", "--id", "w1"}, dir.File("w1"), slow);
  Process w2({"worker", "--server", address, "--synthetic", "--id", "w2"}, dir.File("w2"), slow);
  // The client is `fusetune tune --server`: its watch must survive the restart too.
  const std::string graph = dir.Write("chain.relay", kChain);
  Process client({"tune", "--json", "--server", address, graph}, dir.File("client"));
  const int64_t task = 1;  // the first task of a fresh store
  {
    auto stub = v1::Tuner::NewStub(Channel(address));
    // Kill once a few candidate jobs are done and more are left.
    v1::TaskStatus status;
    ASSERT_TRUE(Eventually(
        [&] {
          v1::GetTaskRequest request;
          request.set_task_id(task);
          return stub->GetTask(Ctx().get(), request, &status).ok() &&
                 status.phase() == "measuring" && status.done() >= 3;
        },
        std::chrono::seconds(30)))
        << status.phase() << " " << status.done() << "/" << status.total();
    ASSERT_LT(status.done(), status.total()) << "the task must still have work when killed";
  }
  server->process().Kill(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // workers finish and retry
  server = std::make_unique<ServerProcess>(
      dir, db, std::vector<std::string>{"--lease-ms", "2000", "--heartbeat-ms", "200"}, port,
      "serve2");
  ASSERT_EQ(server->port(), port);
  auto stub = v1::Tuner::NewStub(Channel(address));
  v1::TaskStatus status = WaitForTask(*stub, task, std::chrono::seconds(45));
  ASSERT_EQ(status.state(), v1::TASK_STATE_DONE) << status.error() << "\n"
                                                 << server->process().Err() << "\n"
                                                 << w1.Err();
  EXPECT_NE(server->process().Err().find("resuming task"), std::string::npos);
  ASSERT_EQ(client.ExitCode(std::chrono::seconds(20)), 0) << client.Err();
  nlohmann::json report = nlohmann::json::parse(client.Out());
  EXPECT_EQ(report["regions"].size(), 1u);
  EXPECT_EQ(report["target"], "synthetic");

  // No job was measured twice, and every queue job was measured exactly once.
  std::vector<int64_t> ran = JobsRun(w1.Err());
  for (int64_t id : JobsRun(w2.Err())) ran.push_back(id);
  std::set<int64_t> distinct(ran.begin(), ran.end());
  EXPECT_EQ(distinct.size(), ran.size()) << w1.Err() << "\n" << w2.Err();
  db::Database database(db);
  db::JobQueue store(database);
  db::JobCounts counts = store.CountJobs();
  EXPECT_EQ(counts.done, counts.total());
  EXPECT_EQ(static_cast<int64_t>(distinct.size()), counts.done);
  // Every candidate the search needed has one stored measurement.
  db::CacheStats stats = db::Cache(database).Stats();
  EXPECT_GT(stats.measurements_ok, 0);
  EXPECT_EQ(stats.best_plans, 1);
}

}  // namespace
}  // namespace fusetune::testing
