// Opening files: fresh, reopened, and refused (newer schema, garbage, another application's
// SQLite file, corrupt pages) without a byte changed. Migrations: migration_test.cc.
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "db/schema.h"
#include "db_test_util.h"
#include "ir/error.h"
#include "raw_sql.h"

namespace fusetune::db {
namespace {

using testing::RawExec;
using testing::TempDir;

std::string OpenError(const std::string& path) {
  try {
    Database db(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// The file and the directory it lives in are exactly as before (no -wal/-shm/-journal left).
void ExpectUntouched(const TempDir& dir, const std::string& path, const std::string& bytes) {
  EXPECT_EQ(testing::ReadBytes(path), bytes);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
    EXPECT_EQ(e.path().string(), path);
  }
  EXPECT_EQ(entries, 1);
}

TEST(StoreOpen, CreatesFileWithParentsAtLatestVersionInWal) {
  TempDir dir;
  std::string path = dir.File("a/b/cache.db");
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), kLatestSchemaVersion);
    EXPECT_EQ(Cache(db).Stats().best_plans, 0);
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), kApplicationId);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(StoreOpen, ReopenFindsEverything) {
  TempDir dir;
  std::string path = dir.File("cache.db");
  int64_t task_id = 0;
  {
    testing::OpenFile file(path);
    file.cache.PutTarget(testing::SampleTarget());
    file.cache.PutMeasurements(
        {testing::OkMeasurement(testing::Key("g1", "tile_m=8"), 42.5),
         testing::InvalidMeasurement(testing::Key("g2"), "wrong result: 0.5")});
    file.cache.PutBestPlan(testing::SamplePlan("r1", 100));
    TaskRecord task;
    task.graph_text = "fn () { }";
    task.target = "any";
    task_id = file.queue.CreateTask(task);
    JobSpec spec;
    spec.job_key = "k3";
    spec.target = "any";
    spec.payload = {1, 2, 3};
    file.queue.EnqueueJobs(task_id, {spec});
    file.queue.RegisterWorker(WorkerRecord{"w1", "x86_64-zen5-avx512", 2, "0.1.0"});
  }
  testing::OpenFile file(path);
  EXPECT_EQ(file.cache.FindTarget("x86_64-zen5-avx512")->peak_gflops, 201.5);
  EXPECT_EQ(file.cache.FindMeasurement(testing::Key("g1", "tile_m=8"))->median_us, 42.5);
  EXPECT_EQ(file.cache.FindMeasurement(testing::Key("g2"))->reason, "wrong result: 0.5");
  EXPECT_EQ(file.cache.FindBestPlan({"r1", "x86_64-zen5-avx512", 1, 1})->tuned_us, 100);
  EXPECT_EQ(file.queue.FindTask(task_id)->graph_text, "fn () { }");
  std::vector<JobRecord> jobs = file.queue.ListJobs({.task_id = task_id});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].job_key, "k3");
  EXPECT_EQ(jobs[0].payload, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(file.queue.FindWorker("w1")->cores, 2);
  CacheStats stats = file.cache.Stats();
  EXPECT_EQ(stats.targets, 1);
  EXPECT_EQ(stats.measurements_ok, 1);
  EXPECT_EQ(stats.measurements_invalid, 1);
  EXPECT_EQ(stats.best_plans, 1);
  EXPECT_EQ(file.queue.CountTasks().total(), 1);
  EXPECT_EQ(file.queue.CountJobs().queued, 1);
  EXPECT_EQ(file.queue.ListWorkers().size(), 1u);
}

// The cache and the job queue need the latest schema; an older file opened on purpose (tests
// build them) is refused with the versions named, not with an SQL error.
TEST(StoreOpen, ViewsRefuseAFileAtAnOlderVersion) {
  TempDir dir;
  Database v1(dir.File("cache.db"), DatabaseOptions{.schema_version = 1});
  EXPECT_EQ(v1.schema_version(), 1);
  auto expect_refused = [&](const std::function<void()>& open, const char* view) {
    try {
      open();
      ADD_FAILURE() << view << " opened a v1 file";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(view) + " needs schema v" +
                                           std::to_string(kLatestSchemaVersion) +
                                           ", the file is opened at v1"),
                std::string::npos)
          << e.what();
    }
  };
  expect_refused([&] { Cache cache(v1); }, "the cache");
  expect_refused([&] { JobQueue queue(v1); }, "the job queue");
}

TEST(StoreOpen, TwoStoresOpeningOneFreshFileMigrateOnce) {
  TempDir dir;
  std::string path = dir.File("cache.db");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      Database db(path);
      if (db.schema_version() == kLatestSchemaVersion) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
}

TEST(StoreOpen, NewerSchemaIsRefusedAndLeftByteIdentical) {
  TempDir dir;
  std::string path = dir.File("future.db");
  RawExec(path, "PRAGMA application_id = " + std::to_string(kApplicationId) +
                    "; PRAGMA user_version = 99; CREATE TABLE future (x INTEGER);");
  std::string before = testing::ReadBytes(path);
  std::string error = OpenError(path);
  EXPECT_NE(error.find("this database was written by fusetune schema v99, this binary knows up "
                       "to v" +
                       std::to_string(kLatestSchemaVersion) + "; upgrade fusetune"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
  ExpectUntouched(dir, path, before);
}

TEST(StoreOpen, GarbageFileIsRefusedAndLeftByteIdentical) {
  TempDir dir;
  std::string path = dir.File("garbage.db");
  std::string garbage;
  for (int i = 0; i < 10000; ++i) garbage.push_back(static_cast<char>((i * 7919) % 251));
  testing::WriteBytes(path, garbage);
  std::string error = OpenError(path);
  EXPECT_NE(error.find("is not a SQLite database"), std::string::npos) << error;
  ExpectUntouched(dir, path, garbage);
}

TEST(StoreOpen, TextFileIsRefused) {
  TempDir dir;
  std::string path = dir.File("notes.txt");
  testing::WriteBytes(path, "these are my notes\n");
  EXPECT_NE(OpenError(path).find("is not a SQLite database"), std::string::npos);
  ExpectUntouched(dir, path, "these are my notes\n");
}

TEST(StoreOpen, CorruptPagesBehindAValidHeaderAreRefused) {
  TempDir dir;
  std::string path = dir.File("corrupt.db");
  {
    Database db(path);
    Cache(db).PutBestPlan(testing::SamplePlan("r1", 1.0));
  }
  // Fold the WAL back in and leave a rollback-journal file, then smash everything after the
  // 100-byte header.
  RawExec(path, "PRAGMA journal_mode = DELETE;");
  std::string bytes = testing::ReadBytes(path);
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t i = 100; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5);
  testing::WriteBytes(path, bytes);
  std::string error = OpenError(path);
  EXPECT_NE(error.find("corrupt or not a SQLite database"), std::string::npos) << error;
  ExpectUntouched(dir, path, bytes);
}

TEST(StoreOpen, AnotherApplicationsDatabaseIsRefused) {
  TempDir dir;
  std::string path = dir.File("other.db");
  RawExec(path, "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada');");
  std::string before = testing::ReadBytes(path);
  std::string error = OpenError(path);
  EXPECT_NE(error.find("another application"), std::string::npos) << error;
  ExpectUntouched(dir, path, before);
}

TEST(StoreOpen, EmptyFileIsInitialised) {
  TempDir dir;
  std::string path = dir.File("empty.db");
  testing::WriteBytes(path, "");
  Database db(path);
  EXPECT_EQ(db.schema_version(), kLatestSchemaVersion);
}

TEST(StoreOpen, DirectoryPathIsRefused) {
  TempDir dir;
  EXPECT_NE(OpenError(dir.path().string()).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace fusetune::db
