// Sixteen clients submit the same graph at the same moment: every task finishes with the same
// plan, and each job is measured once (one queue row per job, one run per row).
#include <barrier>

#include "db/database.h"
#include "db/job_queue.h"
#include "service_test_util.h"

namespace fusetune::testing {
namespace {

TEST(Concurrency, SixteenIdenticalSubmissionsAreMeasuredOnce) {
  TestDir dir;
  const std::string db = dir.File("c.db");
  ServerProcess server(dir, db);
  // Jobs take a little while, so the sixteen tasks really overlap.
  std::vector<std::string> slow = {"FUSETUNE_TEST_JOB_DELAY_MS=20"};
  Process w1({"worker", "--server", server.address(), "--synthetic", "--id", "w1"}, dir.File("w1"),
             slow);
  Process w2({"worker", "--server", server.address(), "--synthetic", "--id", "w2"}, dir.File("w2"),
             slow);
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  ASSERT_TRUE(Eventually(
      [&] {
        v1::ListWorkersResponse r;
        return stub->ListWorkers(Ctx().get(), {}, &r).ok() && r.workers_size() == 2;
      },
      std::chrono::seconds(20)));

  constexpr int kClients = 16;
  std::vector<int64_t> ids(kClients, 0);
  std::barrier start(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto own = v1::Tuner::NewStub(Channel(server.address()));
      v1::SubmitTuneRequest request;
      request.mutable_graph()->set_relay_text(kChain);
      request.set_client("client" + std::to_string(i));
      start.arrive_and_wait();
      v1::SubmitTuneResponse response;
      if (own->SubmitTune(Ctx().get(), request, &response).ok()) ids[i] = response.task_id();
    });
  }
  for (auto& t : clients) t.join();
  std::string plan;
  int measured_total = 0;
  for (int64_t id : ids) {
    ASSERT_GT(id, 0);
    v1::TaskStatus status = WaitForTask(*stub, id, std::chrono::seconds(40));
    ASSERT_EQ(status.state(), v1::TASK_STATE_DONE) << "task " << id << ": " << status.error();
    std::string this_plan = status.result().plan().SerializeAsString();
    if (plan.empty()) plan = this_plan;
    EXPECT_EQ(this_plan, plan) << "task " << id << " chose another plan";
    measured_total += status.result().candidates_measured();
  }
  EXPECT_GT(measured_total, 0);

  std::vector<int64_t> ran = JobsRun(w1.Err());
  for (int64_t id : JobsRun(w2.Err())) ran.push_back(id);
  std::set<int64_t> distinct(ran.begin(), ran.end());
  EXPECT_EQ(distinct.size(), ran.size()) << "a job was measured twice";
  db::Database database(db);
  db::JobQueue store(database);
  db::JobCounts counts = store.CountJobs();
  EXPECT_EQ(counts.done, counts.total());
  EXPECT_EQ(static_cast<int64_t>(ran.size()), counts.done);
  for (const db::JobRecord& j : store.ListJobs()) EXPECT_EQ(j.attempts, 1) << "job " << j.id;
  // Some task needed every job on the queue: no task created work another did not share.
  size_t most = 0;
  for (int64_t id : ids) most = std::max(most, store.ListJobStates(id).size());
  EXPECT_EQ(static_cast<int64_t>(most), counts.total());
}

}  // namespace
}  // namespace fusetune::testing
