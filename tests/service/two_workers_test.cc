// One task's jobs spread across every worker registered for its target: two real workers (real
// kernels) both measure for one tune.
#include <nlohmann/json.hpp>

#include "db/database.h"
#include "db/job_queue.h"
#include "service_test_util.h"

namespace fusetune::testing {
namespace {

TEST(TwoWorkers, BothRunJobsOfOneTask) {
  TestDir dir;
  const std::string db = dir.File("farm.db");
  ServerProcess server(dir, db);
  Process w1({"worker", "--server", server.address(), "--id", "w1", "--threads", "1"},
             dir.File("w1"));
  Process w2({"worker", "--server", server.address(), "--id", "w2", "--threads", "1"},
             dir.File("w2"));
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  ASSERT_TRUE(Eventually(
      [&] {
        v1::ListWorkersResponse workers;
        return stub->ListWorkers(Ctx().get(), {}, &workers).ok() && workers.workers_size() == 2;
      },
      std::chrono::seconds(30)))
      << w1.Err() << w2.Err();

  const std::string graph = dir.Write("chain.relay", kChain);
  CommandResult tune = RunFusetune(dir,
                                   {"tune", "--json", "--server", server.address(), "--repeat", "2",
                                    "--min-repeat-ms", "1", graph},
                                   {}, std::chrono::seconds(180));
  ASSERT_EQ(tune.exit_code, 0) << tune.err << w1.Err() << w2.Err();
  ASSERT_GT(nlohmann::json::parse(tune.out)["candidates_measured"].get<int>(), 4);

  db::Database database(db);
  db::JobQueue queue(database);
  const std::vector<db::TaskRecord> tasks = queue.ListTasks();
  ASSERT_EQ(tasks.size(), 1u);
  std::set<int64_t> of_task;
  for (const db::JobStatus& s : queue.ListJobStates(tasks[0].id)) of_task.insert(s.id);
  const std::vector<int64_t> ran1 = JobsRun(w1.Err()), ran2 = JobsRun(w2.Err());
  EXPECT_FALSE(ran1.empty()) << "w1 ran no job:\n" << w1.Err();
  EXPECT_FALSE(ran2.empty()) << "w2 ran no job:\n" << w2.Err();
  for (const std::vector<int64_t>* ran : {&ran1, &ran2})
    for (int64_t id : *ran) EXPECT_TRUE(of_task.count(id)) << "job " << id << " is the task's";
  // Each job measured once, by one of them.
  std::set<int64_t> all(ran1.begin(), ran1.end());
  for (int64_t id : ran2) EXPECT_TRUE(all.insert(id).second) << "job " << id << " ran twice";
  EXPECT_EQ(all.size(), of_task.size());
}

}  // namespace
}  // namespace fusetune::testing
