// `fusetune tune` and `fusetune query` end to end: real kernels measured in the sandbox child,
// a real SQLite file. Timing options are cut down so the suite stays quick; the decisions, the
// JSON contract and the cache behaviour are what is checked here.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::kFast;
using testing::RunFusetune;
using testing::TempDb;

const std::string kExamples = std::string(FUSETUNE_SOURCE_DIR) + "/examples/";

// A small version of the seed: the same three ops at sequence length 32.
std::string SmallSeed() {
  return testing::WriteTempFile(
      "small_seed.relay",
      R"(fn (%x: Tensor[(12, 32, 64), float32], %y: Tensor[(12, 32, 64), float32], %z: Tensor[(12, 32, 32), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
}
)");
}

TEST(TuneCli, JsonHasTheDesignShapeAndTheSecondRunIsCached) {
  TempDb db("tune_cli");
  const std::string graph = SmallSeed();
  auto first = RunFusetune("tune --local --json --db " + db.path() + kFast + graph);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto j = nlohmann::json::parse(first.out);
  for (const char* key : {"graph", "target", "regions", "total", "max_abs_error",
                          "max_output_magnitude", "candidates_measured", "seconds"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["graph"], graph);
  ASSERT_EQ(j["regions"].size(), 1u);
  const auto& region = j["regions"][0];
  EXPECT_EQ(region["nodes"], nlohmann::json::parse(R"(["%0", "%1", "%2"])"));
  EXPECT_EQ(region["ops"], nlohmann::json::parse(R"(["nn.batch_matmul", "ones_like", "where"])"));
  EXPECT_EQ(region["cached"], false);
  EXPECT_EQ(region["signature"].get<std::string>().size(), 32u);
  // The plan covers every node once.
  std::multiset<std::string> covered;
  for (const auto& group : region["plan"])
    for (const auto& n : group) covered.insert(n.get<std::string>());
  EXPECT_EQ(covered, (std::multiset<std::string>{"%0", "%1", "%2"}));
  // The stored plan is the simplest of the three unless one was faster beyond noise: never a plan
  // slower than greedy, and its time is the kept plan's.
  double tuned = region["tuned_us"], greedy = region["greedy_us"], unfused = region["unfused_us"];
  EXPECT_GT(tuned, 0.0);
  EXPECT_LE(tuned, greedy);
  EXPECT_TRUE(tuned == greedy || tuned == unfused || region["chosen"] == "tuned");
  const std::string decision = region["decision"];
  EXPECT_NE(decision.find(region["chosen"].get<std::string>()), std::string::npos) << decision;
  EXPECT_GE(region["rounds"].get<int>(), 2);  // server/validation.h: kMinRounds
  EXPECT_TRUE(region["margin"].is_number());
  // What won against the rules: nothing when greedy on default schedules was kept.
  const auto& changes = region["changes_from_greedy"];
  ASSERT_TRUE(changes.is_array());
  EXPECT_EQ(changes.empty(), region["chosen"] == "greedy") << changes.dump();
  EXPECT_GT(j["candidates_measured"].get<int>(), 0);
  EXPECT_LT(j["max_abs_error"].get<double>(), 1e-3);
  // The where() keeps ones or sums of 64 products of random inputs, each below 1 in magnitude.
  EXPECT_GE(j["max_output_magnitude"].get<double>(), 1.0);
  EXPECT_LT(j["max_output_magnitude"].get<double>(), 64.0);
  for (const char* key : {"tuned_us", "greedy_us", "unfused_us"})
    EXPECT_GT(j["total"][key].get<double>(), 0.0);
  // Where the seconds went: the stages that ran jobs, and the jobs' own phases.
  const auto& breakdown = j["breakdown"];
  EXPECT_GT(breakdown["stages_s"]["measuring"].get<double>(), 0.0) << breakdown.dump();
  EXPECT_GT(breakdown["stages_s"]["validating"].get<double>(), 0.0) << breakdown.dump();
  for (const char* phase : {"compile_ms", "reference_ms", "timing_ms", "total_ms"})
    EXPECT_GT(breakdown["jobs_ms"][phase].get<double>(), 0.0) << phase;
  EXPECT_LE(breakdown["stages_s"]["measuring"].get<double>(), j["seconds"].get<double>());
  const std::string ranking = breakdown["schedule_ranking"].get<std::string>();
  EXPECT_TRUE(ranking == "learned" || ranking == "roofline")
      << "a searched tune ranks: " << ranking;

  auto second = RunFusetune("tune --local --json --db " + db.path() + kFast + graph);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  auto k = nlohmann::json::parse(second.out);
  EXPECT_EQ(k["regions"][0]["cached"], true);
  EXPECT_EQ(k["candidates_measured"], 0);
  EXPECT_TRUE(k["max_abs_error"].is_null()) << "nothing ran, so no error is claimed";
  EXPECT_TRUE(k["max_output_magnitude"].is_null());
  EXPECT_TRUE(k["breakdown"]["stages_s"].empty()) << k["breakdown"].dump();
  EXPECT_TRUE(k["breakdown"]["schedule_ranking"].is_null()) << "nothing was planned";
  EXPECT_EQ(k["regions"][0]["plan"], region["plan"]);
  EXPECT_EQ(k["regions"][0]["changes_from_greedy"], changes);
  EXPECT_DOUBLE_EQ(k["regions"][0]["tuned_us"].get<double>(), tuned);

  auto query = RunFusetune("query --local --json --db " + db.path() + " " + graph);
  ASSERT_EQ(query.exit_code, 0) << query.err;
  EXPECT_EQ(nlohmann::json::parse(query.out)["regions"][0]["plan"], region["plan"]);
  // The CPU name alone, as `cache ls` shows the target, finds the same plans.
  const std::string fingerprint = j["target"];
  const size_t a = fingerprint.find(';'), b = fingerprint.find(';', a + 1);
  ASSERT_NE(b, std::string::npos) << fingerprint;
  auto by_cpu = RunFusetune("query --local --json --db " + db.path() + " --target " +
                            fingerprint.substr(a + 1, b - a - 1) + " " + graph);
  ASSERT_EQ(by_cpu.exit_code, 0) << by_cpu.err;
  auto found = nlohmann::json::parse(by_cpu.out);
  EXPECT_EQ(found["target"], fingerprint);
  EXPECT_EQ(found["regions"][0]["plan"], region["plan"]);

  // `run --plan tuned` runs the stored plan, and refuses a thread count that was never tuned.
  auto run = RunFusetune("run --plan tuned --json --repeat 2 --db " + db.path() + " " + graph);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto ran = nlohmann::json::parse(run.out);
  EXPECT_EQ(ran["groups"], region["plan"]);
  EXPECT_LT(ran["max_abs_error"].get<double>(), 1e-3);
  auto untuned = RunFusetune("run --plan tuned --threads 2 --db " + db.path() + " " + graph);
  EXPECT_EQ(untuned.exit_code, 2);
  EXPECT_NE(untuned.err.find("no stored plan"), std::string::npos) << untuned.err;
}

// A store written before CPUs LLVM calls "generic" were keyed by CPUID holds this machine's plans
// under "generic": a query misses them (they may come from another CPU), says so, and reads them
// with --target generic.
TEST(TuneCli, QueryPointsAtThePlansOfThisCpusEarlierKey) {
  TempDb tuned("earlier_key_tuned"), old("earlier_key_old");
  const std::string graph = SmallSeed();
  auto tune = RunFusetune("tune --local --json --db " + tuned.path() + kFast + graph);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const std::string fingerprint = nlohmann::json::parse(tune.out)["target"];
  const size_t a = fingerprint.find(';'), b = fingerprint.find(';', a + 1);
  ASSERT_NE(b, std::string::npos) << fingerprint;
  if (fingerprint.compare(a + 1, 8, "generic-") != 0)
    GTEST_SKIP() << "LLVM knows this CPU, so its key never was \"generic\": " << fingerprint;
  const std::string earlier = fingerprint.substr(0, a + 1) + "generic" + fingerprint.substr(b);

  // The store as an earlier version wrote it: the same records under the earlier key.
  const std::string exported = tuned.path() + ".jsonl";
  ASSERT_EQ(RunFusetune("cache export --db " + tuned.path() + " " + exported).exit_code, 0);
  std::string lines;
  {
    std::ifstream in(exported);
    lines.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t at = lines.find(fingerprint); at != std::string::npos;
       at = lines.find(fingerprint, at + earlier.size()))
    lines.replace(at, fingerprint.size(), earlier);
  std::ofstream(exported) << lines;
  auto imported = RunFusetune("cache import --db " + old.path() + " " + exported);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;

  auto missed = RunFusetune("query --db " + old.path() + " " + graph);
  EXPECT_EQ(missed.exit_code, 3) << missed.out;
  EXPECT_NE(missed.err.find("1 of them has a plan under this CPU's key of earlier"),
            std::string::npos)
      << missed.err;
  EXPECT_NE(missed.err.find("`--target generic` reads them"), std::string::npos) << missed.err;
  auto read = RunFusetune("query --json --target generic --db " + old.path() + " " + graph);
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(nlohmann::json::parse(read.out)["target"], earlier);
  // A store of this version's keys only gives no such hint.
  TempDb empty("earlier_key_empty");
  auto none = RunFusetune("query --db " + empty.path() + " " + graph);
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_EQ(none.err.find("--target generic"), std::string::npos) << none.err;
  std::filesystem::remove(exported);
}

TEST(TuneCli, QueryNamesTheRegionsWithoutAPlanAndExitsThree) {
  TempDb db("query_missing");
  auto r = RunFusetune("query --db " + db.path() + " " + kExamples + "sub_exp_100x120x120.relay");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("has no stored plan"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[%0 %1]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fusetune tune"), std::string::npos) << r.err;
}

TEST(TuneCli, TableOnATerminalFreeRunNamesEveryFigure) {
  TempDb db("tune_table");
  auto r = RunFusetune("tune --db " + db.path() + kFast + SmallSeed());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word : {"tuned µs", "greedy µs", "unfused µs", "vs greedy", "whole graph",
                           "chosen kernels", "max |error| vs reference", "on outputs up to"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no progress bar when stderr is not a terminal";
}

TEST(TuneCli, TableOfSeveralRegionsSaysWhatTheWholeGraphDecided) {
  TempDb db("tune_table_whole");
  const std::string graph = kExamples + "qkv_attention.relay";  // two regions
  auto r = RunFusetune("tune --db " + db.path() + kFast + graph);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("\nwhole graph: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" kept", at), std::string::npos) << r.out;
  auto single = RunFusetune("tune --db " + db.path() + kFast + SmallSeed());
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(single.out.find("\nwhole graph: "), std::string::npos)
      << "one region: its own line says it\n"
      << single.out;
}

// Six alike blocks of a dense and a tanh, cut every two blocks: three regions of one signature.
std::string AlikeBlocks() {
  std::string text = "fn (%x: Tensor[(16, 32), float32]";
  for (int b = 0; b < 6; ++b) text += ", %w" + std::to_string(b) + ": Tensor[(32, 32), float32]";
  text += ") {\n";
  for (int b = 0; b < 6; ++b) {
    const std::string in = b ? "%" + std::to_string(2 * b - 1) : "%x";
    text += "  %" + std::to_string(2 * b) + " = nn.dense(" + in + ", %w" + std::to_string(b) +
            ");\n  %" + std::to_string(2 * b + 1) + " = tanh(%" + std::to_string(2 * b) + ");\n";
  }
  return testing::WriteTempFile("alike_blocks.relay", text + "  %11\n}\n");
}

TEST(TuneCli, RegionsWithOneAnswerAreListedOnce) {
  TempDb db("tune_alike");
  const std::string graph = AlikeBlocks();
  auto json = RunFusetune("tune --json --max-region 4 --db " + db.path() + kFast + graph);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto regions = nlohmann::json::parse(json.out)["regions"];
  ASSERT_EQ(regions.size(), 3u) << json.out;  // the JSON lists every region
  for (const auto& region : regions) EXPECT_EQ(region["signature"], regions[0]["signature"]);
  auto text = RunFusetune("tune --max-region 4 --db " + db.path() + kFast + graph);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\n  1  nn.dense, tanh, nn.dense, tanh ×3 "), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("\n  2  "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("\n  3  "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("×3: regions 1, 2, 3, one signature and one answer, listed once"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the same groups in regions 2, 3, on their own nodes"), std::string::npos)
      << text.out;
  std::filesystem::remove(graph);
}

TEST(TuneCli, NeverFuseKeepsWhereAlone) {
  TempDb db("never_fuse");
  auto r = RunFusetune("tune --json --never-fuse where --db " + db.path() + kFast + SmallSeed());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  bool where_alone = false;
  for (const auto& region : j["regions"])
    for (const auto& group : region["plan"])
      if (group == nlohmann::json::parse(R"(["%2"])")) where_alone = true;
  EXPECT_TRUE(where_alone) << r.out;
}

TEST(TuneCli, AnInjectedCrashingOrWrongKernelIsInvalidAndTuningCompletes) {
  for (const char* fault : {"crash", "wrong"}) {
    TempDb db(std::string("inject_") + fault);
    auto r = RunFusetune("tune --json --db " + db.path() + kFast + SmallSeed(),
                         std::string("FUSETUNE_TEST_INJECT=") + fault + ":where");
    ASSERT_EQ(r.exit_code, 0) << fault << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    for (const auto& group : j["regions"][0]["plan"]) {
      if (group.size() < 2) continue;
      for (const auto& n : group)
        EXPECT_NE(n, "%2") << fault << ": a faulty fused kernel was chosen";
    }
    // The faulty kernels are in the store as invalid, with the reason.
    auto dump = RunFusetune("cache export --db " + db.path());
    ASSERT_EQ(dump.exit_code, 0) << dump.err;
    const std::string expected_reason =
        std::string(fault) == "crash" ? "signal 11" : "wrong result";
    EXPECT_NE(dump.out.find("\"invalid\""), std::string::npos) << dump.out.substr(0, 2000);
    EXPECT_NE(dump.out.find(expected_reason), std::string::npos) << fault;
  }
}

TEST(TuneCli, BadInputIsExitTwoWithAPositionAndLeavesNoStore) {
  TempDb db("bad_input");
  auto bad = std::filesystem::temp_directory_path() /
             ("fusetune_bad_" + std::to_string(::getpid()) + ".relay");
  std::ofstream(bad) << "fn (%x: Tensor[(4,), float32]) {\n  nn.bach_matmul(%x, %x)\n}\n";
  auto r = RunFusetune("tune --db " + db.path() + " " + bad.string());
  EXPECT_EQ(r.exit_code, 2);
  // The diagnostic begins the line: not "error: FILE:2:3: error: ...".
  EXPECT_EQ(r.err.rfind(bad.string() + ":2:3: error: unknown operator 'nn.bach_matmul'", 0), 0)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(db.path())) << "a rejected graph must not create the store";
}

TEST(TuneCli, ACorruptStoreIsRefusedAndLeftUntouched) {
  TempDb db("corrupt");
  { std::ofstream(db.path()) << "this is not a database, and must stay exactly like this\n"; }
  auto before = testing::Slurp(db.path());
  auto r = RunFusetune("tune --db " + db.path() + kFast + SmallSeed());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(db.path()), std::string::npos) << r.err;
  EXPECT_EQ(testing::Slurp(db.path()), before);
}

TEST(TuneCli, AGraphThatAmplifiesRoundingIsCheckedAgainstItsOwnSpread) {
  // Logits 1000 times a product: a rounding in the product moves a softmax weight by 1e-4 of
  // itself, so every honest plan, greedy's on its default schedules too, differs from the
  // reference by more than 1e-4 of the output's magnitude (at most 1). Judged against the
  // reference's own rounding spread, the plans pass and the whole graph is timed.
  const std::string graph = testing::WriteTempFile("amplifies_rounding.relay", R"(
fn (%x: Tensor[(64, 256), float32], %w: Tensor[(256, 256), float32], %v: Tensor[(64, 256), float32]) {
  %0 = nn.dense(%x, %w, units=256);
  %1 = multiply(%0, 1000f);
  %2 = nn.softmax(%1, axis=-1);
  nn.dense(%2, %v, units=64)
})");
  auto greedy = RunFusetune("run --json --repeat 1 --plan greedy " + graph);
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  const nlohmann::json ran = nlohmann::json::parse(greedy.out);
  EXPECT_GT(ran["max_abs_error"].get<double>(), 1.5e-4);
  EXPECT_TRUE(ran["within_rounding_spread"].get<bool>());
  auto text = RunFusetune("run --repeat 1 --plan greedy " + graph);
  EXPECT_NE(text.out.find("within 10x the graph's own rounding spread"), std::string::npos)
      << text.out;
  TempDb db("amplifies_rounding");
  auto tune = RunFusetune("tune --json --db " + db.path() + kFast + graph);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const nlohmann::json report = nlohmann::json::parse(tune.out);
  EXPECT_TRUE(report["total"]["measured_together"].get<bool>()) << report["total"].dump();
  EXPECT_GT(report["max_abs_error"].get<double>(), 1.1e-4);
  EXPECT_LT(report["max_abs_error"].get<double>(), 1e-2);
}

}  // namespace
}  // namespace fusetune
