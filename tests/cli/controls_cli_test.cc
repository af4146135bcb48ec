// The per-request controls of `fusetune tune` with a warm cache, end to end with real kernels: a
// restricted request is answered by a search over the stored measurements, never by a stored
// plan it forbids, and leaves the unrestricted plan as it was. (`tune --forbid %0,%1,%2` used to
// answer the cached [%0 %1 %2].)
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using nlohmann::json;
using testing::RunFusetune;
using testing::TempDb;

const std::string kFast = " --repeat 2 --min-repeat-ms 1 ";

std::string SmallSeed() {
  auto path = std::filesystem::temp_directory_path() /
              ("fusetune_controls_seed_" + std::to_string(::getpid()) + ".relay");
  std::ofstream(path)
      << R"(fn (%x: Tensor[(12, 32, 64), float32], %y: Tensor[(12, 32, 64), float32], %z: Tensor[(12, 32, 32), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
}
)";
  return path.string();
}

// The groups of every region's plan, as sets of node names.
std::vector<std::set<std::string>> Groups(const json& report) {
  std::vector<std::set<std::string>> out;
  for (const json& region : report["regions"])
    for (const json& group : region["plan"]) {
      std::set<std::string> names;
      for (const json& n : group) names.insert(n.get<std::string>());
      out.push_back(names);
    }
  return out;
}

struct Control {
  std::string flags;
  // Whether a group of the answer is one this control refuses.
  std::function<bool(const std::set<std::string>&)> refused;
};

TEST(ControlsCli, EveryControlIsHonouredWithAWarmCacheAndLeavesTheStoredPlan) {
  TempDb db("controls");
  const std::string graph = SmallSeed();
  const std::string base = "tune --json --db " + db.path() + kFast;
  auto cold = RunFusetune(base + graph);
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  const json stored = json::parse(cold.out);
  const int cold_measured = stored["candidates_measured"];
  ASSERT_GT(cold_measured, 0);

  auto multi = [](const std::set<std::string>& g) { return g.size() > 1; };
  const std::vector<Control> controls = {
      {"--never-fuse where", [&](auto& g) { return multi(g) && g.count("%2"); }},
      {"--never-fuse-node %1", [&](auto& g) { return multi(g) && g.count("%1"); }},
      {"--forbid %0,%1,%2",
       [](auto& g) {
         return g == std::set<std::string>{"%0", "%1", "%2"};
       }},
      {"--max-group 2", [](auto& g) { return g.size() > 2; }},
      // {%1, %2} reads %0 and %z and writes one output: 3 arguments; any group with %0 has more.
      {"--max-args 3", [&](auto& g) { return multi(g) && g.count("%0"); }},
  };
  for (const Control& c : controls) {
    auto r = RunFusetune(base + c.flags + " " + graph);
    ASSERT_EQ(r.exit_code, 0) << c.flags << ": " << r.err;
    const json j = json::parse(r.out);
    for (const auto& group : Groups(j)) EXPECT_FALSE(c.refused(group)) << c.flags << "\n" << r.out;
    for (const json& region : j["regions"]) EXPECT_EQ(region["cached"], false) << c.flags;
    EXPECT_LT(j["candidates_measured"].get<int>(), cold_measured) << c.flags;
    EXPECT_GT(j["measurements_reused"].get<int>(), 0) << c.flags;

    auto query = RunFusetune("query --json --db " + db.path() + " " + graph);
    ASSERT_EQ(query.exit_code, 0) << c.flags << ": " << query.err;
    const json q = json::parse(query.out);
    EXPECT_EQ(q["regions"][0]["plan"], stored["regions"][0]["plan"]) << c.flags;
    EXPECT_EQ(q["regions"][0]["cached"], true) << c.flags;
  }
}

TEST(ControlsCli, NamesThatMeanNothingForTheGraphAreExitTwo) {
  TempDb db("control_names");
  const std::string graph = SmallSeed();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--never-fuse expp", "--never-fuse: unknown operator 'expp'"},
      {"--never-fuse-node %9", "--never-fuse-node: '%9' is not a node of the graph"},
      {"--forbid %0,%9", "--forbid: '%9' is not a node of the graph"},
      {"--forbid %1", "--forbid %1: a forbidden group names at least 2 nodes"},
      {"--max-group 0", "--max-group"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = RunFusetune("tune --db " + db.path() + " " + flags + " " + graph);
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags << ": " << r.err;
    auto q = RunFusetune("query --db " + db.path() + " " + flags + " " + graph);
    EXPECT_EQ(q.exit_code, 2) << flags;
  }
  EXPECT_FALSE(std::filesystem::exists(db.path())) << "a refused request must not create the store";
}

TEST(ControlsCli, DebugLogSaysWhatEachStageDecided) {
  TempDb db("debug_log");
  const std::string graph = SmallSeed();
  auto r =
      RunFusetune("tune --log-level debug --db " + db.path() + kFast + "--forbid %0,%1 " + graph);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"refused [%0 %1] (nn.batch_matmul, ones_like): the request forbids this group",
        "candidate groups", "region ", "no stored plan", "measured [%", "best cover", "runner-up",
        "validated in ", "not stored"})
    EXPECT_NE(r.err.find(line), std::string::npos) << line << "\n" << r.err;
}

}  // namespace
}  // namespace fusetune
