// The per-request controls of `fusetune tune` with a warm cache, end to end with real kernels: a
// restricted request is answered by a search over the stored measurements, never by a stored
// plan it forbids, and leaves the unrestricted plan as it was. (`tune --forbid %0,%1,%2` used to
// answer the cached [%0 %1 %2].)
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using nlohmann::json;
using testing::kFast;
using testing::RunFusetune;
using testing::TempDb;

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

// Kernel arguments (inputs + outputs) of the small seed's fusable groups: {%0 %1} reads x and y
// and writes %0 (read by %2) and %1; {%1 %2} reads %0 and z; {%0 %1 %2} reads x, y, z.
int Args(const std::set<std::string>& g) {
  if (g.size() == 1) return 0;  // a single op is never refused
  return g == std::set<std::string>{"%1", "%2"} ? 3 : 4;
}

std::string Join(const std::set<std::string>& g) {
  std::string out;
  for (const std::string& n : g) out += (out.empty() ? "" : ",") + n;
  return out;
}

struct Control {
  std::string flags;
  std::function<bool(const std::set<std::string>&)> refused;  // a group the control refuses
};

// Each control, set so that the stored plan's fused group `fused` breaks it.
std::vector<Control> ControlsAgainst(const std::set<std::string>& fused,
                                     const std::map<std::string, std::string>& op_of) {
  const std::string node = *fused.begin();
  const std::string op = op_of.at(node);
  const int size = static_cast<int>(fused.size()), args = Args(fused);
  auto multi = [](const std::set<std::string>& g) { return g.size() > 1; };
  return {
      {"--never-fuse " + op,
       [=](const std::set<std::string>& g) {
         for (const std::string& n : g)
           if (multi(g) && op_of.at(n) == op) return true;
         return false;
       }},
      {"--never-fuse-node " + node,
       [=](const std::set<std::string>& g) { return multi(g) && g.count(node); }},
      {"--forbid " + Join(fused), [=](const std::set<std::string>& g) { return g == fused; }},
      {"--max-group " + std::to_string(size - 1),
       [=](const std::set<std::string>& g) { return static_cast<int>(g.size()) > size - 1; }},
      {"--max-args " + std::to_string(args - 1),
       [=](const std::set<std::string>& g) { return Args(g) > args - 1; }},
  };
}

TEST(ControlsCli, EveryControlIsHonouredWithAWarmCacheAndLeavesTheStoredPlan) {
  TempDb db("controls");
  const std::string graph = SmallSeed();
  const std::string base = "tune --json --db " + db.path() + kFast;
  auto cold = RunFusetune(base + graph);
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  const json stored = json::parse(cold.out);
  const int cold_measured = stored["candidates_measured"];
  ASSERT_GT(cold_measured, 0);
  // Real kernels decide which plan is stored; each control is set against its fused group.
  std::set<std::string> fused;
  for (const auto& group : Groups(stored))
    if (group.size() > fused.size()) fused = group;
  if (fused.size() < 2) GTEST_SKIP() << "the unfused plan won here: every control honours it";
  std::map<std::string, std::string> op_of;
  for (size_t i = 0; i < stored["regions"][0]["nodes"].size(); ++i)
    op_of[stored["regions"][0]["nodes"][i]] = stored["regions"][0]["ops"][i];

  for (const Control& c : ControlsAgainst(fused, op_of)) {
    auto r = RunFusetune(base + c.flags + " " + graph);
    ASSERT_EQ(r.exit_code, 0) << c.flags << ": " << r.err;
    const json j = json::parse(r.out);
    for (const auto& group : Groups(j)) EXPECT_FALSE(c.refused(group)) << c.flags << "\n" << r.out;
    for (const json& region : j["regions"])
      EXPECT_EQ(region["cached"], false) << c.flags << ": the stored plan breaks the control";
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
      {"--forbid %1", "--forbid %1: a forbidden group names at least two nodes"},
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
