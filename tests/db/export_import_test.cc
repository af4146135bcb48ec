// JSON-lines export and import: round trip into a fresh file, the merge rule, and an import that
// fails on any line imports nothing.
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "db_test_util.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

using testing::Key;
using testing::TempDir;

std::string Export(const Cache& store) {
  std::ostringstream out;
  store.ExportJsonLines(out);
  return out.str();
}

ImportStats Import(Cache& store, const std::string& text) {
  std::istringstream in(text);
  return store.ImportJsonLines(in);
}

void Fill(Cache& store) {
  store.PutTarget(testing::SampleTarget());
  store.PutMeasurements({testing::OkMeasurement(Key("g1", "tile_m=8"), 12.345678901234567)});
  store.PutMeasurements({testing::InvalidMeasurement(Key("g2"), "crash: \"SIGSEGV\"\nat line 2")});
  store.PutBestPlan(testing::SamplePlan("r1", 0.1));
  BestPlanRecord greedy = testing::SamplePlan("r2", 55);
  greedy.chosen = "greedy";
  greedy.family_key = "fam-r";
  greedy.margin = 0.97;
  greedy.decision = "tuned 1.03x, within noise: greedy kept";
  greedy.rounds = 9;
  store.PutBestPlan(greedy);
}

TEST(ExportImport, RoundTripIntoAFreshFileIsExact) {
  TempDir dir;
  testing::OpenFile a(dir.File("a.db"));
  Fill(a.cache);
  std::string text = Export(a.cache);
  // Header + 1 target + 2 measurements + 2 plans, one object per line.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);
  EXPECT_EQ(text.rfind(R"({"kind":"header","format":"fusetune-cache","version":1,)", 0), 0u)
      << text.substr(0, 80);

  testing::OpenFile b(dir.File("b.db"));
  ImportStats stats = Import(b.cache, text);
  EXPECT_EQ(stats.added, 5);
  EXPECT_EQ(stats.replaced, 0);
  EXPECT_EQ(stats.kept, 0);
  // Exporting the copy gives the same lines (the header's time aside).
  std::string again = Export(b.cache);
  EXPECT_EQ(again.substr(again.find('\n')), text.substr(text.find('\n')));
  EXPECT_EQ(b.cache.FindMeasurement(Key("g1", "tile_m=8"))->median_us, 12.345678901234567);
  EXPECT_EQ(b.cache.FindMeasurement(Key("g2"))->reason, "crash: \"SIGSEGV\"\nat line 2");
  BestPlanRecord r2 = *b.cache.FindBestPlan({"r2", "x86_64-zen5-avx512", 1, 1});
  EXPECT_EQ(r2.chosen, "greedy");
  EXPECT_EQ(r2.family_key, "fam-r");
  EXPECT_EQ(r2.margin, 0.97);
  EXPECT_EQ(r2.decision, "tuned 1.03x, within noise: greedy kept");
  EXPECT_EQ(r2.rounds, 9);
  BestPlanRecord r1 = *b.cache.FindBestPlan({"r1", "x86_64-zen5-avx512", 1, 1});
  EXPECT_EQ(r1.family_key, "");
  EXPECT_FALSE(r1.margin.has_value());
  EXPECT_EQ(text.find("\"margin\"", text.find("\"r1\"")), text.find("\"margin\":0.97"))
      << "absent figures are not written";

  // Importing the same lines again changes nothing.
  stats = Import(b.cache, text);
  EXPECT_EQ(stats.added, 0);
  EXPECT_EQ(stats.replaced, 0);
  EXPECT_EQ(stats.kept, 5);
}

// A warm-only tune's plan has no unfused figure (not timed): exported as null, imported as such.
TEST(ExportImport, APlanWhoseUnfusedWasNotTimedRoundTrips) {
  TempDir dir;
  Database a_db(dir.File("a.db"));
  Cache a(a_db);
  BestPlanRecord warm = testing::SamplePlan("r3", 20);
  warm.chosen = "greedy";
  warm.unfused_us = std::numeric_limits<double>::quiet_NaN();
  a.PutBestPlan(warm);
  const std::string text = Export(a);
  EXPECT_NE(text.find("\"unfused_us\":null"), std::string::npos) << text;
  Database b_db(dir.File("b.db"));
  Cache b(b_db);
  EXPECT_EQ(Import(b, text).added, 1);
  std::optional<BestPlanRecord> back = b.FindBestPlan(warm.key);
  ASSERT_TRUE(back);
  EXPECT_TRUE(std::isnan(back->unfused_us));
  EXPECT_EQ(back->greedy_us, warm.greedy_us);
}

TEST(ExportImport, MergeKeepsTheBetterRecord) {
  TempDir dir;
  testing::OpenFile mine(dir.File("mine.db"));
  testing::OpenFile theirs(dir.File("theirs.db"));

  TargetRecord my_target = testing::SampleTarget();
  mine.cache.PutTarget(my_target);
  TargetRecord their_target = my_target;
  their_target.peak_gflops = 1;
  theirs.cache.PutTarget(their_target);

  // Measurements: ok stays ok; invalid gives way to ok; a new key is added.
  mine.cache.PutMeasurements({testing::OkMeasurement(Key("ok_vs_ok"), 10)});
  theirs.cache.PutMeasurements({testing::OkMeasurement(Key("ok_vs_ok"), 1)});
  mine.cache.PutMeasurements({testing::OkMeasurement(Key("ok_vs_invalid"), 10)});
  theirs.cache.PutMeasurements({testing::InvalidMeasurement(Key("ok_vs_invalid"), "crash")});
  mine.cache.PutMeasurements({testing::InvalidMeasurement(Key("invalid_vs_ok"), "timeout")});
  theirs.cache.PutMeasurements({testing::OkMeasurement(Key("invalid_vs_ok"), 7)});
  theirs.cache.PutMeasurements({testing::OkMeasurement(Key("only_theirs"), 8)});

  // Plans: strictly faster wins; equal and slower are kept.
  mine.cache.PutBestPlan(testing::SamplePlan("faster", 100));
  theirs.cache.PutBestPlan(testing::SamplePlan("faster", 80));
  mine.cache.PutBestPlan(testing::SamplePlan("equal", 100));
  BestPlanRecord equal = testing::SamplePlan("equal", 100);
  equal.groups = {StoredGroup{{0, 1, 2}, ""}};
  theirs.cache.PutBestPlan(equal);
  mine.cache.PutBestPlan(testing::SamplePlan("slower", 100));
  theirs.cache.PutBestPlan(testing::SamplePlan("slower", 120));
  // Chosen times compare, not tuned times: theirs chose greedy at 90 (< my 100).
  mine.cache.PutBestPlan(testing::SamplePlan("by_chosen", 100));
  BestPlanRecord by_chosen = testing::SamplePlan("by_chosen", 50);
  by_chosen.greedy_us = 90;
  by_chosen.chosen = "greedy";
  theirs.cache.PutBestPlan(by_chosen);

  ImportStats stats = Import(mine.cache, Export(theirs.cache));
  EXPECT_EQ(stats.added, 1);     // only_theirs
  EXPECT_EQ(stats.replaced, 3);  // invalid_vs_ok, faster, by_chosen
  EXPECT_EQ(stats.kept, 5);      // target, ok_vs_ok, ok_vs_invalid, equal, slower

  EXPECT_EQ(mine.cache.FindTarget(my_target.fingerprint)->peak_gflops, my_target.peak_gflops);
  EXPECT_EQ(mine.cache.FindMeasurement(Key("ok_vs_ok"))->median_us, 10);
  EXPECT_EQ(mine.cache.FindMeasurement(Key("ok_vs_invalid"))->status, MeasurementStatus::kOk);
  EXPECT_EQ(mine.cache.FindMeasurement(Key("invalid_vs_ok"))->median_us, 7);
  EXPECT_EQ(mine.cache.FindMeasurement(Key("only_theirs"))->median_us, 8);
  const std::string t = my_target.fingerprint;
  EXPECT_EQ(mine.cache.FindBestPlan({"faster", t, 1, 1})->tuned_us, 80);
  EXPECT_EQ(mine.cache.FindBestPlan({"equal", t, 1, 1})->groups.size(), 2u);
  EXPECT_EQ(mine.cache.FindBestPlan({"slower", t, 1, 1})->tuned_us, 100);
  EXPECT_EQ(mine.cache.FindBestPlan({"by_chosen", t, 1, 1})->chosen, "greedy");
  // The two plans an import replaced are kept for the record.
  std::vector<ReplacedPlanRecord> replaced = mine.cache.ListReplacedPlans();
  ASSERT_EQ(replaced.size(), 2u);
  std::set<std::string> signatures;
  for (const ReplacedPlanRecord& r : replaced) {
    signatures.insert(r.plan.key.region_signature);
    EXPECT_EQ(r.reason, kReplacedByImport);
    EXPECT_EQ(r.plan.tuned_us, 100);
  }
  EXPECT_EQ(signatures, (std::set<std::string>{"by_chosen", "faster"}));
}

// A plan whose tune offered wpack (schema v8) carries the flag through an export; a line
// without it (an older exporter's, or a plan that never offered wpack) imports as false, and a
// flag of the wrong type names the line.
TEST(ExportImport, TheWeightsBoundFlagRoundTripsAndOldLinesReadFalse) {
  TempDir dir;
  testing::OpenFile a(dir.File("a.db"));
  BestPlanRecord bound = testing::SamplePlan("bound", 20);
  bound.weights_bound = true;
  a.cache.PutBestPlan(bound);
  a.cache.PutBestPlan(testing::SamplePlan("plain", 30));
  const std::string text = Export(a.cache);
  EXPECT_EQ(text.find("\"weights_bound\":true"), text.rfind("\"weights_bound\"")) << text;
  EXPECT_NE(text.find("\"weights_bound\":true"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"weights_bound\":false"), std::string::npos) << "false is not written";

  testing::OpenFile b(dir.File("b.db"));
  EXPECT_EQ(Import(b.cache, text).added, 2);
  const std::string t = "x86_64-zen5-avx512";
  EXPECT_TRUE(b.cache.FindBestPlan({"bound", t, 1, 1})->weights_bound);
  EXPECT_FALSE(b.cache.FindBestPlan({"plain", t, 1, 1})->weights_bound);
  std::string again = Export(b.cache);
  EXPECT_EQ(again.substr(again.find('\n')), text.substr(text.find('\n')));

  std::string bad = text.substr(text.find("{\"kind\":\"best_plan\""));
  bad = bad.substr(0, bad.find('\n'));
  const size_t flag = bad.find("true");
  ASSERT_NE(flag, std::string::npos) << bad;
  bad.replace(flag, 4, "1");
  testing::OpenFile c(dir.File("c.db"));
  try {
    Import(c.cache, bad + "\n");
    ADD_FAILURE() << "accepted a number for the flag";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("line 1: \"weights_bound\" must be true or false"),
              std::string::npos)
        << e.what();
  }
}

// A line as an exporter before schema v4 wrote it (no family, margin, decision or rounds) imports
// as a plan without them; a margin of the wrong type names the line.
TEST(ExportImport, PlansWithoutTheValidationFiguresImport) {
  TempDir dir;
  testing::OpenFile file(dir.File("old.db"));
  std::string old_line =
      R"({"kind":"best_plan","region_signature":"r9","target_fingerprint":"t","threads":1,)"
      R"("search_version":1,"groups":[{"nodes":[0,1],"schedule":""}],"tuned_us":3,)"
      R"("greedy_us":4,"unfused_us":5,"chosen":"tuned","region_text":"x","ops":["exp"],)"
      R"("created_at":1700000000000})";
  std::string header = R"({"kind":"header","format":"fusetune-cache","version":1,"schema":3})";
  EXPECT_EQ(Import(file.cache, header + "\n" + old_line + "\n").added, 1);
  BestPlanRecord plan = *file.cache.FindBestPlan({"r9", "t", 1, 1});
  EXPECT_EQ(plan.tuned_us, 3);
  EXPECT_EQ(plan.family_key, "");
  EXPECT_FALSE(plan.margin.has_value());
  EXPECT_EQ(plan.decision, "");
  EXPECT_FALSE(plan.rounds.has_value());
  EXPECT_FALSE(plan.weights_bound) << "a plan exported before v8: tuned without bound weights";

  std::string bad = old_line;
  bad.insert(bad.size() - 1, R"(,"margin":"close")");
  try {
    Import(file.cache, bad + "\n");
    ADD_FAILURE() << "accepted a string margin";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("line 1: \"margin\" must be a number"), std::string::npos)
        << e.what();
  }
}

// Any bad line aborts the whole import: nothing before it stays.
TEST(ExportImport, ABadLineImportsNothingAndNamesTheLine) {
  TempDir dir;
  testing::OpenFile source(dir.File("s.db"));
  Fill(source.cache);
  std::string good = Export(source.cache);

  struct Case {
    std::string bad_line;
    std::string message;
  };
  std::vector<Case> cases = {
      {"not json", "line 7: not a JSON object"},
      {R"({"kind":"planet"})", "line 7: unknown record kind \"planet\""},
      {R"({"kind":"measurement","group_signature":"g9"})",
       "line 7: the measurement record lacks \"schedule\""},
      {R"({"kind":"measurement","group_signature":"g9","schedule":"","target_fingerprint":"t",)"
       R"("threads":"one","status":"ok","median_us":1})",
       "line 7: \"threads\" must be an integer"},
      {R"({"kind":"measurement","group_signature":"g9","schedule":"","target_fingerprint":"t",)"
       R"("threads":1,"status":"fine","median_us":1})",
       "line 7: \"status\" must be \"ok\" or \"invalid\""},
      {R"({"kind":"measurement","group_signature":"g9","schedule":"","target_fingerprint":"t",)"
       R"("threads":1,"status":"ok","median_us":0})",
       "line 7: the measurement record is not valid"},
      {R"({"kind":"best_plan","region_signature":"r9","target_fingerprint":"t","threads":1,)"
       R"("search_version":1,"groups":[{"nodes":["a"]}],"tuned_us":1,"greedy_us":1,)"
       R"("unfused_us":1,"chosen":"tuned","ops":[]})",
       "line 7: plan JSON groups[0].nodes holds \"a\""},
      {R"({"kind":"header","format":"fusetune-cache","version":9})",
       "line 7: written in export format v9"},
  };
  for (const Case& c : cases) {
    testing::OpenFile target(dir.File("t.db"));
    try {
      Import(target.cache, good + c.bad_line + "\n");
      ADD_FAILURE() << "accepted: " << c.bad_line;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << "got: " << e.what() << "\nwant: " << c.message;
    }
    CacheStats stats = target.cache.Stats();
    EXPECT_EQ(stats.targets + stats.measurements_ok + stats.measurements_invalid + stats.best_plans,
              0)
        << c.bad_line;
  }
}

TEST(ExportImport, BlankLinesAndNoHeaderAreFine) {
  TempDir dir;
  testing::OpenFile store(dir.File("s.db"));
  std::string line =
      R"({"kind":"measurement","group_signature":"g9","schedule":"","target_fingerprint":"t",)"
      R"("threads":1,"status":"invalid","reason":"crash","median_us":0})";
  ImportStats stats = Import(store.cache, "\n" + line + "\n\n");
  EXPECT_EQ(stats.added, 1);
  EXPECT_EQ(store.cache.FindMeasurement(Key("g9", "", "t"))->reason, "crash");
}

}  // namespace
}  // namespace fusetune::db
