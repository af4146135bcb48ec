// The status page of a real farm, rendered by headless Chromium: the DOM lists the worker and
// the task with its state, and a screenshot is taken (kept in the test's build directory as
// status_page.png). Whatever comes from the store is HTML-escaped.
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "observability_util.h"

namespace fusetune::testing {
namespace {

const char* kChromium = "/usr/bin/chromium";
const std::string kGraph = std::string(FUSETUNE_SOURCE_DIR) + "/examples/sub_exp_100x120x120.relay";

// chromium --headless with a fresh profile; returns its exit code (-1 on timeout).
int Chromium(const TestDir& dir, const std::vector<std::string>& args, const std::string& log) {
  static int n = 0;
  std::vector<std::string> argv = {kChromium,
                                   "--headless",
                                   "--no-sandbox",  // needed as root, harmless otherwise
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--disable-dev-shm-usage",
                                   "--hide-scrollbars",
                                   "--user-data-dir=" + dir.File("profile" + std::to_string(n++))};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv, log, std::chrono::seconds(25));
}

TEST(StatusPage, ChromiumRendersTheWorkerTheTaskAndThePlan) {
  if (::access(kChromium, X_OK) != 0)
    GTEST_SKIP() << kChromium << " is not installed (Debian package chromium; CI installs it)";
  TestDir dir;
  MetricsServer server(dir, dir.File("page.db"));
  ASSERT_GT(server.metrics_port(), 0);
  Process worker({"worker", "--server", server.address(), "--id", "page-worker-1"}, dir.File("w1"));
  CommandResult tune = RunFusetune(
      dir, {"tune", "--server", server.address(), "--repeat", "2", "--min-repeat-ms", "1", kGraph},
      {}, std::chrono::seconds(90));
  ASSERT_EQ(tune.exit_code, 0) << tune.err << "\n" << worker.Err();

  const std::string dom_file = dir.File("dom.html");
  {
    // --dump-dom writes the DOM to stdout, which RunProgram sends to the log file.
    int rc = Chromium(dir, {"--dump-dom", server.url("/")}, dom_file);
    ASSERT_EQ(rc, 0) << Slurp(dom_file);
  }
  std::string dom = Slurp(dom_file);
  EXPECT_NE(dom.find("<title>fusetune — farm status</title>"), std::string::npos) << dom;
  EXPECT_NE(dom.find(">page-worker-1</td>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<tr class=\"task\" id=\"task-1\">"), std::string::npos) << dom;
  // The task row shows its state badge and a full progress bar.
  size_t row = dom.find("id=\"task-1\"");
  ASSERT_NE(row, std::string::npos);
  std::string task_row = dom.substr(row, dom.find("</tr>", row) - row);
  EXPECT_NE(task_row.find("<span class=\"badge s-done\">done</span>"), std::string::npos)
      << task_row;
  EXPECT_NE(task_row.find("class=\"bar full\""), std::string::npos) << task_row;
  EXPECT_NE(dom.find("<span class=\"badge s-online\">online</span>"), std::string::npos);
  // One cached plan, with its chart of three bars.
  EXPECT_NE(dom.find("subtract, exp"), std::string::npos);
  EXPECT_NE(dom.find("<svg class=\"chart\""), std::string::npos);

  // The screenshot: a PNG of the requested size, kept beside the test binary for people to see.
  const std::string png = (std::filesystem::current_path() / "status_page.png").string();
  std::filesystem::remove(png);
  int rc = Chromium(dir, {"--screenshot=" + png, "--window-size=1280,1600", server.url("/")},
                    dir.File("shot.log"));
  ASSERT_EQ(rc, 0) << Slurp(dir.File("shot.log"));
  std::optional<std::pair<uint32_t, uint32_t>> size = PngSize(png);
  ASSERT_TRUE(size.has_value()) << png << " is not a PNG";
  EXPECT_EQ(size->first, 1280u);
  EXPECT_EQ(size->second, 1600u);
  // A blank page compresses to a few kilobytes; this one has tables, text and charts.
  EXPECT_GT(std::filesystem::file_size(png), 20000u);
}

TEST(StatusPage, LabelsFromTheStoreAreEscaped) {
  TestDir dir;
  MetricsServer server(dir, dir.File("escape.db"));
  ASSERT_GT(server.metrics_port(), 0);
  auto stub = v1::Tuner::NewStub(Channel(server.address()));
  v1::SubmitTuneRequest request;
  request.mutable_graph()->set_relay_text(Slurp(kGraph));
  request.mutable_graph()->set_name("a&b\"'.relay");
  request.set_client("<script>alert(1)</script>");
  v1::SubmitTuneResponse response;
  grpc::Status s = stub->SubmitTune(Ctx().get(), request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // The task runs and waits for a worker (there is none).
  ASSERT_TRUE(Eventually(
      [&] {
        nlohmann::json st =
            nlohmann::json::parse(HttpGet(server.metrics_port(), "/api/status").body);
        return st["tasks"].size() == 1 && st["tasks"][0]["phase"] == "waiting for a worker";
      },
      std::chrono::seconds(10)));
  HttpReply page = HttpGet(server.metrics_port(), "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.body.find("<script"), std::string::npos) << "the page has no script at all";
  EXPECT_NE(page.body.find("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"), std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("a&amp;b&quot;&#39;.relay"), std::string::npos);
  EXPECT_NE(page.body.find("<span class=\"badge s-running\">running</span>"), std::string::npos);
  EXPECT_NE(page.body.find("waiting for a worker"), std::string::npos);
  EXPECT_NE(page.body.find("No worker has registered yet"), std::string::npos);
  // The JSON carries the label as data, unescaped.
  nlohmann::json status = nlohmann::json::parse(HttpGet(server.metrics_port(), "/api/status").body);
  EXPECT_EQ(status["tasks"][0]["client"], "<script>alert(1)</script>");
}

}  // namespace
}  // namespace fusetune::testing
