// Metrics and the status API of a real farm: `fusetune serve --metrics-listen` with one real
// worker tunes a small graph through `fusetune tune --server`; /metrics then shows what happened
// (parsed as the Prometheus text format, not grepped), a query moves the cache and lookup
// figures, and /api/status has the documented shape. Bad --metrics-listen values and a port in
// use are refused with a clear message.
#include <nlohmann/json.hpp>

#include "observability_util.h"

namespace fusetune::testing {
namespace {

using nlohmann::json;

const std::string kExamples = std::string(FUSETUNE_SOURCE_DIR) + "/examples/";
// Two ops (subtract, exp): the smallest graph the end-to-end tests tune.
const std::string kSmallGraph = kExamples + "sub_exp_100x120x120.relay";
const std::vector<std::string> kFast = {"--repeat", "2", "--min-repeat-ms", "1"};

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST(Metrics, ParserReadsLabelsEscapesAndSpecialValues) {
  Exposition e = ParseExposition(
      "# HELP a_total A counter\n# TYPE a_total counter\n"
      "a_total{k=\"x \\\"y\\\"\",z=\"1\"} 3\n"
      "h_bucket{le=\"+Inf\"} 7\nplain 2.5e-3\n");
  EXPECT_EQ(e.types.at("a_total"), "counter");
  EXPECT_EQ(e.Value("a_total", {{"k", "x \"y\""}, {"z", "1"}}), 3);
  EXPECT_EQ(e.Value("h_bucket", {{"le", "+Inf"}}), 7);
  EXPECT_DOUBLE_EQ(e.Value("plain"), 2.5e-3);
  EXPECT_THROW(ParseExposition("bad{k=\"v} 1\n"), std::runtime_error);
  EXPECT_THROW(ParseExposition("x 1z\n"), std::runtime_error);
}

TEST(Metrics, AFarmRunShowsItsTasksJobsMeasurementsWorkersAndLookups) {
  TestDir dir;
  MetricsServer server(dir, dir.File("farm.db"));
  ASSERT_GT(server.metrics_port(), 0);
  Process worker({"worker", "--server", server.address(), "--id", "obs-w1"}, dir.File("w1"));

  // Before any work: every family is there, at zero.
  Exposition before = Scrape(server.metrics_port());
  EXPECT_EQ(before.types.at("fusetune_tasks"), "gauge");
  EXPECT_EQ(before.types.at("fusetune_jobs"), "gauge");
  EXPECT_EQ(before.types.at("fusetune_measurements_total"), "counter");
  EXPECT_EQ(before.types.at("fusetune_cache_lookups_total"), "counter");
  EXPECT_EQ(before.types.at("fusetune_lookup_duration_seconds"), "histogram");
  for (const char* s : {"queued", "running", "done", "failed", "cancelled"})
    EXPECT_EQ(before.Value("fusetune_tasks", {{"state", s}}), 0) << s;
  EXPECT_EQ(before.Value("fusetune_measurements_total", {{"status", "ok"}}), 0);
  EXPECT_EQ(before.Value("fusetune_build_info", {{"version", "0.1.0"}}), 1);

  CommandResult tune =
      RunFusetune(dir, With({"tune", "--json", "--server", server.address(), kSmallGraph}, kFast),
                  {}, std::chrono::seconds(90));
  ASSERT_EQ(tune.exit_code, 0) << tune.err << "\n" << worker.Err();
  json report = json::parse(tune.out);
  const std::string target = report["target"];

  Exposition after = Scrape(server.metrics_port());
  double jobs_done = after.Value("fusetune_jobs", {{"state", "done"}});
  EXPECT_GT(jobs_done, 0);
  EXPECT_EQ(after.Value("fusetune_jobs", {{"state", "queued"}}), 0);
  EXPECT_EQ(after.Value("fusetune_jobs", {{"state", "leased"}}), 0);
  EXPECT_EQ(after.Value("fusetune_jobs", {{"state", "failed"}}), 0);
  // Each job times one or more plans: at least one measurement per job done.
  EXPECT_GE(after.Value("fusetune_measurements_total", {{"status", "ok"}}), jobs_done);
  EXPECT_EQ(after.Value("fusetune_tasks", {{"state", "done"}}), 1);
  EXPECT_EQ(after.Value("fusetune_tasks", {{"state", "running"}}), 0);
  EXPECT_EQ(after.Value("fusetune_tasks_submitted_total"), 1);
  EXPECT_EQ(after.Value("fusetune_workers", {{"target", target}, {"state", "online"}}), 1);
  EXPECT_EQ(after.Value("fusetune_workers", {{"target", target}, {"state", "offline"}}), 0);
  EXPECT_EQ(after.Find("fusetune_workers").size(), 2u) << "one target, two states";
  EXPECT_EQ(after.Value("fusetune_best_plans"), 1);

  double hits = after.Value("fusetune_cache_lookups_total", {{"result", "hit"}});
  double lookups = after.Value("fusetune_lookup_duration_seconds_count");
  CommandResult query =
      RunFusetune(dir, {"query", "--json", "--server", server.address(), kSmallGraph});
  ASSERT_EQ(query.exit_code, 0) << query.err;
  ASSERT_EQ(json::parse(query.out)["regions"].size(), 1u);

  Exposition queried = Scrape(server.metrics_port());
  EXPECT_EQ(queried.Value("fusetune_cache_lookups_total", {{"result", "hit"}}), hits + 1);
  EXPECT_EQ(queried.Value("fusetune_cache_lookups_total", {{"result", "miss"}}),
            after.Value("fusetune_cache_lookups_total", {{"result", "miss"}}));
  double count = queried.Value("fusetune_lookup_duration_seconds_count");
  EXPECT_EQ(count, lookups + 1);
  EXPECT_GT(queried.Value("fusetune_lookup_duration_seconds_sum"), 0);
  // Buckets are cumulative, from 50 us to 1 s, and +Inf holds every observation.
  std::vector<Sample> buckets = queried.Find("fusetune_lookup_duration_seconds_bucket");
  ASSERT_EQ(buckets.size(), 15u);
  EXPECT_EQ(std::stod(buckets.front().labels.at("le")), 50e-6);
  EXPECT_EQ(std::stod(buckets[13].labels.at("le")), 1.0);
  EXPECT_EQ(buckets.back().labels.at("le"), "+Inf");
  EXPECT_EQ(buckets.back().value, count);
  for (size_t i = 1; i < buckets.size(); ++i) EXPECT_GE(buckets[i].value, buckets[i - 1].value);

  // A region never tuned is a miss.
  const std::string other = dir.Write("chain.relay", kChain);
  CommandResult miss = RunFusetune(dir, {"query", "--server", server.address(), other});
  EXPECT_EQ(miss.exit_code, 3) << miss.err;
  Exposition missed = Scrape(server.metrics_port());
  EXPECT_GT(missed.Value("fusetune_cache_lookups_total", {{"result", "miss"}}),
            queried.Value("fusetune_cache_lookups_total", {{"result", "miss"}}));
  EXPECT_EQ(missed.Value("fusetune_lookup_duration_seconds_count"), count + 1);

  // /api/status: the page's data, with the documented shape and no graph text.
  HttpReply api = HttpGet(server.metrics_port(), "/api/status");
  ASSERT_EQ(api.status, 200);
  EXPECT_EQ(api.content_type, "application/json");
  json status = json::parse(api.body);
  EXPECT_EQ(status["counts"]["tasks"]["done"], 1);
  EXPECT_EQ(status["counts"]["jobs"]["done"].get<double>(), jobs_done);
  EXPECT_EQ(status["counts"]["workers_online"], 1);
  EXPECT_EQ(status["row_limit"], 200);
  ASSERT_EQ(status["workers"].size(), 1u);
  EXPECT_EQ(status["workers"][0]["id"], "obs-w1");
  EXPECT_EQ(status["workers"][0]["target"], target);
  EXPECT_EQ(status["workers"][0]["state"], "online");
  EXPECT_GT(status["workers"][0]["cores"].get<int>(), 0);
  EXPECT_GT(status["workers"][0]["last_heartbeat_ms"].get<int64_t>(), 0);
  ASSERT_EQ(status["tasks"].size(), 1u);
  const json& task = status["tasks"][0];
  EXPECT_EQ(task["id"], 1);
  EXPECT_EQ(task["state"], "done");
  EXPECT_EQ(task["graph"], kSmallGraph);
  EXPECT_EQ(task["done"], task["total"]);
  EXPECT_GT(task["total"].get<int>(), 0);
  ASSERT_EQ(status["plans"].size(), 1u);
  const json& plan = status["plans"][0];
  EXPECT_EQ(plan["region_signature"], report["regions"][0]["signature"]);
  EXPECT_EQ(plan["ops"], json::parse(R"(["subtract", "exp"])"));
  EXPECT_GT(plan["tuned_us"].get<double>(), 0);
  EXPECT_GT(plan["greedy_us"].get<double>(), 0);
  EXPECT_GT(plan["unfused_us"].get<double>(), 0);
  EXPECT_TRUE(plan["chosen"] == "tuned" || plan["chosen"] == "greedy" ||
              plan["chosen"] == "unfused");
  EXPECT_EQ(api.body.find("fn ("), std::string::npos) << "no graph text in the status";
  EXPECT_EQ(api.body.find("Tensor["), std::string::npos) << "no graph text in the status";

  HttpReply health = HttpGet(server.metrics_port(), "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  HttpReply metrics = HttpGet(server.metrics_port(), "/metrics");
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(HttpGet(server.metrics_port(), "/nothing").status, 404);
}

TEST(Metrics, AMalformedMetricsAddressExitsTwoNamingTheFlag) {
  TestDir dir;
  for (const char* bad :
       {"9464", "localhost:", "127.0.0.1:99999", "127.0.0.1:http", ":9464", "::1:9464"}) {
    CommandResult r = RunFusetune(dir, {"serve", "--listen", "127.0.0.1:0", "--db",
                                        dir.File("bad.db"), "--metrics-listen", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--metrics-listen: '" + std::string(bad) + "' is not HOST:PORT"),
              std::string::npos)
        << r.err;
  }
}

TEST(Metrics, AMetricsPortInUseIsAClearError) {
  TestDir dir;
  MetricsServer first(dir, dir.File("a.db"));
  ASSERT_GT(first.metrics_port(), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(first.metrics_port());
  CommandResult r = RunFusetune(dir, {"serve", "--listen", "127.0.0.1:0", "--db", dir.File("b.db"),
                                      "--metrics-listen", taken});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--metrics-listen: cannot listen on " + taken + " (the port is in use"),
            std::string::npos)
      << r.err;
  // The first server is unharmed.
  EXPECT_EQ(HttpGet(first.metrics_port(), "/healthz").status, 200);
}

TEST(Metrics, WithoutTheFlagNoMetricsServerStarts) {
  TestDir dir;
  ServerProcess server(dir, dir.File("plain.db"));
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.process().Out().find("metrics"), std::string::npos);
}

}  // namespace
}  // namespace fusetune::testing
