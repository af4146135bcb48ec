// The observability pieces in-process, on a store filled by hand: the metrics read the store's
// counts, the status page escapes and summarises, addresses are checked. Also measures how long a
// scrape and a page take on a store with many plans and tasks (printed, never asserted).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "db/job_queue.h"
#include "ir/error.h"
#include "observability_util.h"
#include "server/service/http_status.h"
#include "server/service/metrics.h"
#include "server/service/status_page.h"
#include "server/service/status_snapshot.h"

namespace fusetune::testing {
namespace {

using service::ServiceMetrics;

db::BestPlanRecord Plan(int i, int64_t created_at) {
  db::BestPlanRecord p;
  p.key.region_signature = fmt::format("{:032x}", i);
  p.key.target_fingerprint = "x86_64-pc-linux-gnu/znver3/+avx2,+fma";
  p.key.threads = 1;
  p.groups = {{{0, 1}, "vec=8"}, {{2}, ""}};
  p.tuned_us = 10 + i % 7;
  p.greedy_us = 14;
  p.unfused_us = 20;
  p.chosen = "tuned";
  p.ops = {"nn.dense", "add", "add", "tanh"};
  p.region_text = "fn (%p0: Tensor[(4), float32]) { secret graph text }";
  p.created_at = created_at;
  return p;
}

db::TaskRecord Task(db::TaskState state, const std::string& client) {
  db::TaskRecord t;
  t.state = state;
  t.graph_text = "fn (%x: Tensor[(4), float32]) { exp(%x) }";
  t.options_json = R"({"graph_name":"g.relay"})";
  t.target = "any";
  t.client = client;
  t.progress_done = 3;
  t.progress_total = 4;
  return t;
}

db::WorkerRecord Worker(const std::string& id, const std::string& target) {
  db::WorkerRecord w;
  w.id = id;
  w.target_fingerprint = target;
  w.cores = 8;
  w.version = "0.1.0";
  return w;
}

TEST(ObservabilityUnit, HostPortParsing) {
  service::HostPort a = service::ParseHostPort("127.0.0.1:9464", "--metrics-listen");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9464);
  service::HostPort b = service::ParseHostPort("[::1]:0", "--metrics-listen");
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.port, 0);
  EXPECT_EQ(service::ParseHostPort("0.0.0.0:65535", "f").port, 65535);
  for (const char* bad :
       {"", "9464", "host", "host:", ":80", "h:-1", "h:65536", "h:8o", "::1:80", "[::1]80"}) {
    EXPECT_THROW(service::ParseHostPort(bad, "--metrics-listen"), UserError) << bad;
  }
}

TEST(ObservabilityUnit, MetricsReadTheStoreAtScrapeTime) {
  TestDir dir;
  db::Database database(dir.File("m.db"));
  db::Cache cache(database);
  db::JobQueue queue(database);
  ServiceMetrics metrics;
  queue.CreateTask(Task(db::TaskState::kDone, "a"));
  queue.CreateTask(Task(db::TaskState::kDone, "a"));
  queue.CreateTask(Task(db::TaskState::kRunning, "b"));
  queue.CreateTask(Task(db::TaskState::kCancelled, "b"));
  queue.RegisterWorker(Worker("w1", "cpu-a"));
  queue.RegisterWorker(Worker("w2", "cpu-a"));
  queue.RegisterWorker(Worker("w3", "cpu-b"));
  queue.RegisterWorker(Worker("w4", "odd \"cpu\" \\ name"));  // escaped in the label value
  cache.PutBestPlan(Plan(1, 0));

  Exposition e = ParseExposition(metrics.Scrape(cache, queue));
  EXPECT_EQ(e.Value("fusetune_tasks", {{"state", "done"}}), 2);
  EXPECT_EQ(e.Value("fusetune_tasks", {{"state", "running"}}), 1);
  EXPECT_EQ(e.Value("fusetune_tasks", {{"state", "cancelled"}}), 1);
  EXPECT_EQ(e.Value("fusetune_tasks", {{"state", "queued"}}), 0);
  EXPECT_EQ(e.Value("fusetune_workers", {{"target", "cpu-a"}, {"state", "online"}}), 2);
  EXPECT_EQ(e.Value("fusetune_workers", {{"target", "cpu-b"}, {"state", "online"}}), 1);
  EXPECT_EQ(e.Value("fusetune_workers", {{"target", "cpu-b"}, {"state", "offline"}}), 0);
  EXPECT_EQ(e.Value("fusetune_workers", {{"target", "odd \"cpu\" \\ name"}, {"state", "online"}}),
            1);
  EXPECT_EQ(e.Value("fusetune_best_plans"), 1);

  // Everyone goes silent: the same series now count offline workers.
  queue.MarkWorkersOffline(db::NowMs() + 1000);
  metrics.ObserveLookup(0.0002, 3, 1);
  metrics.ObserveLookup(2.0, 0, 2);
  metrics.CountMeasurements(5, 1);
  Exposition f = ParseExposition(metrics.Scrape(cache, queue));
  EXPECT_EQ(f.Value("fusetune_workers", {{"target", "cpu-a"}, {"state", "online"}}), 0);
  EXPECT_EQ(f.Value("fusetune_workers", {{"target", "cpu-a"}, {"state", "offline"}}), 2);
  EXPECT_EQ(f.Value("fusetune_cache_lookups_total", {{"result", "hit"}}), 3);
  EXPECT_EQ(f.Value("fusetune_cache_lookups_total", {{"result", "miss"}}), 3);
  EXPECT_EQ(f.Value("fusetune_lookup_duration_seconds_count"), 2);
  EXPECT_EQ(f.Value("fusetune_lookup_duration_seconds_bucket", {{"le", "0.00025"}}), 1);
  EXPECT_EQ(f.Value("fusetune_lookup_duration_seconds_bucket", {{"le", "1"}}), 1);
  EXPECT_EQ(f.Value("fusetune_lookup_duration_seconds_bucket", {{"le", "+Inf"}}), 2);
  EXPECT_EQ(f.Value("fusetune_measurements_total", {{"status", "ok"}}), 5);
  EXPECT_EQ(f.Value("fusetune_measurements_total", {{"status", "invalid"}}), 1);
}

TEST(ObservabilityUnit, PageEscapesSummarisesAndHidesGraphText) {
  TestDir dir;
  db::Database database(dir.File("p.db"));
  db::Cache cache(database);
  db::JobQueue queue(database);
  queue.CreateTask(Task(db::TaskState::kFailed, "<b>x</b>"));
  queue.RegisterWorker(Worker("w\"1", "cpu<a>"));
  cache.PutBestPlan(Plan(7, 0));
  service::StatusSnapshot snapshot = service::TakeStatusSnapshot(cache, queue, nullptr, 200);
  std::string html = service::RenderStatusPage(snapshot);
  EXPECT_NE(html.find("&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<b>x</b>"), std::string::npos);
  EXPECT_NE(html.find("w&quot;1"), std::string::npos);
  EXPECT_NE(html.find("cpu&lt;a&gt;"), std::string::npos);
  EXPECT_NE(html.find("nn.dense, add \u00d72, tanh"), std::string::npos);
  EXPECT_NE(html.find("×1.40 vs greedy"), std::string::npos) << "14 / 10 us";
  EXPECT_EQ(html.find("secret graph text"), std::string::npos);
  EXPECT_EQ(html.find("Tensor["), std::string::npos);
  std::string api = service::StatusToJson(snapshot).dump();
  EXPECT_EQ(api.find("secret graph text"), std::string::npos);
  EXPECT_EQ(api.find("Tensor["), std::string::npos);
  EXPECT_EQ(service::HtmlEscape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(service::OpsSummary({"exp", "add", "exp", "exp"}), "exp \u00d73, add");
}

TEST(ObservabilityUnit, PageListsTheNewestRowsAndSaysHowManyThereAre) {
  TestDir dir;
  db::Database database(dir.File("many.db"));
  db::Cache cache(database);
  db::JobQueue queue(database);
  // FUSETUNE_TEST_PLANS / FUSETUNE_TEST_TASKS give bigger stores for figures by hand.
  auto from_env = [](const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v ? std::max(250, std::atoi(v)) : fallback;
  };
  const int kPlans = from_env("FUSETUNE_TEST_PLANS", 5000);
  const int kTasks = from_env("FUSETUNE_TEST_TASKS", 1000);
  int64_t t0 = db::NowMs() - 1000000;
  for (int i = 0; i < kPlans; ++i) cache.PutBestPlan(Plan(i, t0 + i));
  for (int i = 0; i < kTasks; ++i) queue.CreateTask(Task(db::TaskState::kDone, "c"));
  // Measurements are the biggest table of a farm's file; a scrape must not scan it.
  const int kMeasurements = from_env("FUSETUNE_TEST_MEASUREMENTS", 20000);
  std::vector<db::MeasurementRecord> measured(kMeasurements);
  for (int i = 0; i < kMeasurements; ++i) {
    measured[i].key = {fmt::format("{:032x}", i), "", "cpu", 1};
    measured[i].median_us = measured[i].min_us = 1;
    measured[i].number = measured[i].repeat = 1;
    measured[i].group_text = std::string(1000, 'g');
  }
  cache.PutMeasurements(measured);
  ServiceMetrics metrics;

  auto time = [](auto&& f) {
    auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  std::string text, html;
  double scrape_ms = time([&] { text = metrics.Scrape(cache, queue); });
  service::StatusSnapshot snapshot;
  double snapshot_ms =
      time([&] { snapshot = service::TakeStatusSnapshot(cache, queue, nullptr, 200); });
  double render_ms = time([&] { html = service::RenderStatusPage(snapshot); });
  double full_stats_ms = time([&] { cache.Stats(); });
  std::printf(
      "[figures] %d plans, %d tasks, %d measurements: /metrics %.2f ms (%zu bytes); page: "
      "snapshot %.1f ms, render %.1f ms (%zu bytes); Cache::Stats() with measurement counts "
      "%.1f ms\n",
      kPlans, kTasks, kMeasurements, scrape_ms, text.size(), snapshot_ms, render_ms, html.size(),
      full_stats_ms);

  EXPECT_EQ(ParseExposition(text).Value("fusetune_best_plans"), kPlans);
  ASSERT_EQ(snapshot.plans.size(), 200u);
  EXPECT_EQ(snapshot.plans.front().key.region_signature, fmt::format("{:032x}", kPlans - 1));
  ASSERT_EQ(snapshot.tasks.size(), 200u);
  EXPECT_EQ(snapshot.tasks.front().id, kTasks);
  EXPECT_NE(html.find(fmt::format("newest 200 of {}", kPlans)), std::string::npos);
  EXPECT_NE(html.find(fmt::format("newest 200 of {}", kTasks)), std::string::npos);
}

}  // namespace
}  // namespace fusetune::testing
