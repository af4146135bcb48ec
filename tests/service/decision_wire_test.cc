// The validation's decision, its margin and its rounds travel the wire: `tune --server` prints
// what local mode prints, with the values the server's store holds.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "service_test_util.h"

namespace fusetune::testing {
namespace {

using nlohmann::json;

const std::vector<std::string> kFast = {"--repeat", "2", "--min-repeat-ms", "1"};

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& tail) {
  args.insert(args.end(), tail.begin(), tail.end());
  return args;
}

TEST(DecisionOnTheWire, RemoteTuneReportsTheDecisionMarginAndRoundsTheStoreHolds) {
  TestDir dir;
  const std::string graph = dir.Write("chain.relay", kChain);
  ServerProcess server(dir, dir.File("farm.db"));
  Process worker({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));
  CommandResult first =
      RunFusetune(dir, With({"tune", "--json", "--server", server.address(), graph}, kFast), {},
                  std::chrono::seconds(180));
  ASSERT_EQ(first.exit_code, 0) << first.err << worker.Err();
  const json measured = json::parse(first.out);
  ASSERT_EQ(measured["regions"].size(), 1u);
  const json& region = measured["regions"][0];
  EXPECT_FALSE(region["cached"].get<bool>());

  std::vector<db::BestPlanRecord> stored;
  {
    db::Database database(dir.File("farm.db"));
    db::Cache cache(database);
    stored = cache.ListBestPlans();
  }
  ASSERT_EQ(stored.size(), 1u);
  const db::BestPlanRecord& plan = stored[0];
  ASSERT_FALSE(plan.decision.empty());
  ASSERT_TRUE(plan.margin.has_value());
  ASSERT_TRUE(plan.rounds.has_value());
  EXPECT_GE(*plan.rounds, 2) << "validation runs at least two paired rounds";

  EXPECT_EQ(region["decision"], plan.decision);
  EXPECT_DOUBLE_EQ(region["margin"].get<double>(), *plan.margin);
  EXPECT_EQ(region["rounds"], *plan.rounds);
  EXPECT_EQ(region["chosen"], plan.chosen);
  // One region: the whole graph is timed by the region's validation, and says so.
  EXPECT_EQ(measured["total"]["decision"], plan.decision);
  EXPECT_EQ(measured["total"]["chosen"], plan.chosen);

  // Answered from the store: the stored decision, through `tune --server` and `query --server`,
  // and the table prints it with its rounds.
  CommandResult again =
      RunFusetune(dir, With({"tune", "--json", "--server", server.address(), graph}, kFast));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  CommandResult query = RunFusetune(dir, {"query", "--json", "--server", server.address(), graph});
  ASSERT_EQ(query.exit_code, 0) << query.err;
  for (const json& answer : {json::parse(again.out), json::parse(query.out)}) {
    const json& r = answer["regions"][0];
    EXPECT_TRUE(r["cached"].get<bool>());
    EXPECT_EQ(r["decision"], plan.decision);
    EXPECT_DOUBLE_EQ(r["margin"].get<double>(), *plan.margin);
    EXPECT_EQ(r["rounds"], *plan.rounds);
  }
  CommandResult table = RunFusetune(dir, {"tune", "--server", server.address(), graph});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(fmt::format("{} ({} rounds)", plan.decision, *plan.rounds)),
            std::string::npos)
      << table.out;

  // The same fields as local mode's answer for the same graph, from the same store.
  CommandResult local = RunFusetune(dir, {"query", "--json", "--db", dir.File("farm.db"), graph});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const json l = json::parse(local.out)["regions"][0], q = json::parse(query.out)["regions"][0];
  for (const char* key :
       {"decision", "margin", "rounds", "chosen", "plan", "schedules", "changes_from_greedy"})
    EXPECT_EQ(q[key], l[key]) << key;
}

}  // namespace
}  // namespace fusetune::testing
