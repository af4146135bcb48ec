// End to end: `fusetune tune --server` through `fusetune serve` and two `fusetune worker`
// processes gives local mode's report, both as JSON and as the table; the second submission is
// answered from the cache; query, workers and tasks see the same state.
#include <nlohmann/json.hpp>

#include "service_test_util.h"

namespace fusetune::testing {
namespace {

using nlohmann::json;

const std::string kExamples = std::string(FUSETUNE_SOURCE_DIR) + "/examples/";
const std::vector<std::string> kFast = {"--repeat", "2", "--min-repeat-ms", "1"};

std::vector<std::string> Args(std::initializer_list<std::string> head,
                              const std::vector<std::string>& tail = {}) {
  std::vector<std::string> out(head);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

// The keys of a JSON object, recursively for objects and the first element of arrays: the shape.
std::set<std::string> Shape(const json& j, const std::string& prefix = "") {
  std::set<std::string> keys;
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      keys.insert(prefix + k);
      for (const std::string& s : Shape(v, prefix + k + ".")) keys.insert(s);
    }
  } else if (j.is_array() && !j.empty() && j[0].is_object()) {
    for (const std::string& s : Shape(j[0], prefix + "[].")) keys.insert(s);
  }
  return keys;
}

TEST(EndToEnd, SyntheticFarmTunesTheSeedAndAnswersTheRepeatFromTheCache) {
  TestDir dir;
  ServerProcess server(dir, dir.File("farm.db"));
  Process w1({"worker", "--server", server.address(), "--synthetic", "--id", "w1"}, dir.File("w1"));
  Process w2({"worker", "--server", server.address(), "--synthetic", "--id", "w2"}, dir.File("w2"));
  const std::string graph = kExamples + "bmm_where_s256.relay";

  CommandResult first =
      RunFusetune(dir, Args({"tune", "--json", "--server", server.address(), graph}, kFast));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json j = json::parse(first.out);
  EXPECT_EQ(j["graph"], graph);
  EXPECT_EQ(j["target"], "synthetic");
  ASSERT_EQ(j["regions"].size(), 1u);
  const json& region = j["regions"][0];
  EXPECT_EQ(region["nodes"], json::parse(R"(["%0", "%1", "%2"])"));
  EXPECT_EQ(region["ops"], json::parse(R"(["nn.batch_matmul", "ones_like", "where"])"));
  EXPECT_EQ(region["cached"], false);
  EXPECT_GT(j["candidates_measured"].get<int>(), 0);
  // Synthetic figures make fusing everything the best plan; it is what the search must find.
  EXPECT_EQ(region["plan"], json::parse(R"([["%0", "%1", "%2"]])"));
  EXPECT_LE(region["tuned_us"].get<double>(), region["greedy_us"].get<double>());
  EXPECT_LE(region["tuned_us"].get<double>(), region["unfused_us"].get<double>());
  EXPECT_TRUE(j["total"]["measured_together"].get<bool>());
  // Every job was measured by one of the two workers, each once.
  std::vector<int64_t> ran = JobsRun(w1.Err());
  for (int64_t id : JobsRun(w2.Err())) ran.push_back(id);
  EXPECT_EQ(std::set<int64_t>(ran.begin(), ran.end()).size(), ran.size());
  EXPECT_GE(ran.size(), 3u);

  CommandResult second =
      RunFusetune(dir, Args({"tune", "--json", "--server", server.address(), graph}, kFast));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  json k = json::parse(second.out);
  EXPECT_EQ(k["regions"][0]["cached"], true);
  EXPECT_EQ(k["candidates_measured"], 0);
  EXPECT_EQ(k["regions"][0]["plan"], region["plan"]);
  EXPECT_EQ(Shape(k), Shape(j)) << "a cached answer has the same JSON shape";

  CommandResult query = RunFusetune(dir, {"query", "--json", "--server", server.address(), graph});
  ASSERT_EQ(query.exit_code, 0) << query.err;
  json q = json::parse(query.out);
  EXPECT_EQ(q["regions"][0]["plan"], region["plan"]);
  EXPECT_EQ(q["regions"][0]["cached"], true);

  CommandResult table =
      RunFusetune(dir, Args({"tune", "--server", server.address(), graph}, kFast));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const char* word : {"tuned µs", "greedy µs", "unfused µs", "whole graph"})
    EXPECT_NE(table.out.find(word), std::string::npos) << word << "\n" << table.out;

  CommandResult workers = RunFusetune(dir, {"workers", "--json", "--server", server.address()});
  ASSERT_EQ(workers.exit_code, 0) << workers.err;
  json ws = json::parse(workers.out);
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0]["id"], "w1");
  EXPECT_EQ(ws[1]["id"], "w2");
  EXPECT_TRUE(ws[0]["online"].get<bool>());

  CommandResult tasks = RunFusetune(dir, {"tasks", "--json", "--server", server.address()});
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  json ts = json::parse(tasks.out);
  ASSERT_EQ(ts.size(), 3u);
  for (const json& t : ts) EXPECT_EQ(t["state"], "done");
}

TEST(EndToEnd, AQueryForAGraphNeverTunedExitsThreeAndNamesTheRegion) {
  TestDir dir;
  ServerProcess server(dir, dir.File("q.db"));
  Process w1({"worker", "--server", server.address(), "--synthetic"}, dir.File("w1"));
  ASSERT_TRUE(Eventually(
      [&] {
        return RunFusetune(dir, {"workers", "--server", server.address()}).out.find("online") !=
               std::string::npos;
      },
      std::chrono::seconds(20)));
  CommandResult r = RunFusetune(
      dir, {"query", "--server", server.address(), kExamples + "sub_exp_100x120x120.relay"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("[%0 %1]"), std::string::npos) << r.err;
  // Once tuned, the same query is answered (the server's lookup cache never serves the stale
  // "missing" answer).
  const std::string graph = kExamples + "sub_exp_100x120x120.relay";
  ASSERT_EQ(RunFusetune(dir, {"tune", "--server", server.address(), graph}).exit_code, 0);
  CommandResult again = RunFusetune(dir, {"query", "--json", "--server", server.address(), graph});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["regions"][0]["cached"], true);
}

// A request names its target, whole or by its CPU name (what `workers` and `cache ls` show): only
// that target's workers measure for it, the result names the whole fingerprint, and a lookup by
// the CPU name finds the plans. The task is submitted before its target's worker registers, and
// starts when it does.
TEST(EndToEnd, ATaskForOneTargetIsMeasuredOnlyByThatTargetsWorkers) {
  TestDir dir;
  ServerProcess server(dir, dir.File("targets.db"));
  const std::string cpu_a = "x86_64-test;cpu-a;+f1", cpu_b = "x86_64-test;cpu-b;+f1";
  Process a({"worker", "--server", server.address(), "--synthetic", "--target", cpu_a, "--id", "a"},
            dir.File("a"));
  const std::string graph = dir.Write("chain.relay", kChain);
  Process tune({"tune", "--json", "--server", server.address(), "--target", "cpu-b", graph},
               dir.File("tune"));
  for (int i = 0; i < 1000 && tune.Err().find("submitted") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_NE(tune.Err().find("task 1 submitted"), std::string::npos) << tune.Err();
  Process b({"worker", "--server", server.address(), "--synthetic", "--target", cpu_b, "--id", "b"},
            dir.File("b"));
  ASSERT_EQ(tune.ExitCode(std::chrono::seconds(60)), 0) << tune.Err();
  EXPECT_EQ(json::parse(tune.Out())["target"], cpu_b);
  EXPECT_TRUE(JobsRun(a.Err()).empty()) << a.Err();
  EXPECT_FALSE(JobsRun(b.Err()).empty()) << b.Err();

  CommandResult found = RunFusetune(
      dir, {"query", "--json", "--server", server.address(), "--target", "cpu-b", graph});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(json::parse(found.out)["target"], cpu_b);
  EXPECT_EQ(json::parse(found.out)["regions"][0]["cached"], true);
  CommandResult other = RunFusetune(
      dir, {"query", "--json", "--server", server.address(), "--target", "cpu-a", graph});
  EXPECT_EQ(other.exit_code, 3) << "cpu-a tuned nothing: " << other.out;
  CommandResult workers =
      RunFusetune(dir, {"workers", "--json", "--server", server.address(), "--target", "cpu-b"});
  ASSERT_EQ(workers.exit_code, 0) << workers.err;
  json listed = json::parse(workers.out);
  ASSERT_EQ(listed.size(), 1u) << workers.out;
  EXPECT_EQ(listed[0]["id"], "b");
}

// Real kernels: the tuned plan through the farm is local mode's plan, and the JSON has the same
// shape. Skipped while this build's workers cannot run kernels.
TEST(EndToEnd, RealKernelsThroughTwoWorkersMatchLocalMode) {
  TestDir dir;
  const std::string graph = dir.Write("small_seed.relay", kSmallSeed);
  CommandResult local = RunFusetune(
      dir, Args({"tune", "--local", "--json", "--db", dir.File("local.db"), graph}, kFast), {},
      std::chrono::seconds(120));
  // The farm is compared with local mode; local mode itself is tested in tests/cli.
  if (local.exit_code != 0) GTEST_SKIP() << "local mode cannot tune here yet: " << local.err;

  ServerProcess server(dir, dir.File("farm.db"));
  Process w1({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));
  Process w2({"worker", "--server", server.address(), "--id", "w2"}, dir.File("w2"));
  CommandResult remote =
      RunFusetune(dir, Args({"tune", "--json", "--server", server.address(), graph}, kFast), {},
                  std::chrono::seconds(120));
  ASSERT_EQ(remote.exit_code, 0) << remote.err << "\n" << w1.Err() << "\n" << w2.Err();
  json l = json::parse(local.out), r = json::parse(remote.out);
  // The breakdown of where a tune's seconds went is local only (a server does not send it yet).
  auto without_breakdown = [](std::set<std::string> keys) {
    std::erase_if(keys, [](const std::string& k) { return k.rfind("breakdown.", 0) == 0; });
    return keys;
  };
  EXPECT_EQ(without_breakdown(Shape(r)), without_breakdown(Shape(l)));
  EXPECT_EQ(r["target"], l["target"]) << "the same machine has one fingerprint";
  EXPECT_EQ(r["regions"][0]["signature"], l["regions"][0]["signature"]);
  EXPECT_EQ(r["regions"][0]["nodes"], l["regions"][0]["nodes"]);
  // The schedule search's later rounds follow measured times, so the counts may differ.
  EXPECT_GT(r["candidates_measured"].get<int>(), 0);
  EXPECT_GT(l["candidates_measured"].get<int>(), 0);
  EXPECT_LT(r["max_abs_error"].get<double>(), 1e-3);
  double tuned = r["regions"][0]["tuned_us"].get<double>();
  EXPECT_GT(tuned, 0.0);
  const double greedy = r["regions"][0]["greedy_us"].get<double>();
  const double unfused = r["regions"][0]["unfused_us"].get<double>();
  EXPECT_LE(tuned, greedy);
  // Greedy is kept unless another plan wins beyond noise, so unfused may read a little faster.
  EXPECT_TRUE(tuned == greedy || tuned == unfused || r["regions"][0]["chosen"] == "tuned")
      << r["regions"][0].dump();
}

}  // namespace
}  // namespace fusetune::testing
