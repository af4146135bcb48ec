// Opening files: fresh, reopened, migrated from an older schema, and refused (newer schema,
// garbage, another application's SQLite file, corrupt pages) without a byte changed.
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "db/schema.h"
#include "db/store.h"
#include "db_test_util.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

using testing::TempDir;

// Runs raw SQL on a file outside the Store, as another program would.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

std::string OpenError(const std::string& path) {
  try {
    Store store(path);
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
    Store store(path);
    EXPECT_EQ(store.schema_version(), kLatestSchemaVersion);
    EXPECT_EQ(store.Stats().best_plans, 0);
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
    Store store(path);
    store.PutTarget(testing::SampleTarget());
    store.PutMeasurement(testing::OkMeasurement(testing::Key("g1", "tile_m=8"), 42.5));
    store.PutMeasurement(testing::InvalidMeasurement(testing::Key("g2"), "wrong result: 0.5"));
    store.PutBestPlan(testing::SamplePlan("r1", 100));
    TaskRecord task;
    task.graph_text = "fn () { }";
    task.target = "any";
    task_id = store.CreateTask(task);
    JobSpec spec;
    spec.key = testing::Key("g3");
    spec.payload = {1, 2, 3};
    store.EnqueueJobs(task_id, {spec});
    store.RegisterWorker(WorkerRecord{"w1", "x86_64-zen5-avx512", 2, "0.1.0"});
  }
  Store store(path);
  EXPECT_EQ(store.FindTarget("x86_64-zen5-avx512")->peak_gflops, 201.5);
  EXPECT_EQ(store.FindMeasurement(testing::Key("g1", "tile_m=8"))->median_us, 42.5);
  EXPECT_EQ(store.FindMeasurement(testing::Key("g2"))->reason, "wrong result: 0.5");
  EXPECT_EQ(store.FindBestPlan({"r1", "x86_64-zen5-avx512", 1, 1})->tuned_us, 100);
  EXPECT_EQ(store.FindTask(task_id)->graph_text, "fn () { }");
  std::vector<JobRecord> jobs = store.ListJobs({.task_id = task_id});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].payload, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(store.FindWorker("w1")->cores, 2);
  StoreStats stats = store.Stats();
  EXPECT_EQ(stats.targets, 1);
  EXPECT_EQ(stats.measurements_ok, 1);
  EXPECT_EQ(stats.measurements_invalid, 1);
  EXPECT_EQ(stats.best_plans, 1);
  EXPECT_EQ(stats.tasks, 1);
  EXPECT_EQ(stats.jobs_queued, 1);
  EXPECT_EQ(stats.workers_online, 1);
}

TEST(StoreOpen, MigratesFromVersionOneKeepingData) {
  TempDir dir;
  std::string path = dir.File("cache.db");
  {
    Store v1(path, StoreOptions{.schema_version = 1});
    EXPECT_EQ(v1.schema_version(), 1);
    v1.PutMeasurement(testing::OkMeasurement(testing::Key("g1"), 7.0));
    v1.PutBestPlan(testing::SamplePlan("r1", 9.0));
    // The queue tables do not exist yet: a clear error, not an SQL one.
    try {
      v1.CreateTask(TaskRecord{});
      FAIL() << "tasks at schema v1";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("needs schema v2"), std::string::npos) << e.what();
    }
  }
  Store store(path);
  EXPECT_EQ(store.schema_version(), kLatestSchemaVersion);
  EXPECT_EQ(store.FindMeasurement(testing::Key("g1"))->median_us, 7.0);
  EXPECT_EQ(store.FindBestPlan({"r1", "x86_64-zen5-avx512", 1, 1})->tuned_us, 9.0);
  TaskRecord task;
  task.graph_text = "g";
  task.target = "any";
  EXPECT_GT(store.CreateTask(task), 0);
}

TEST(StoreOpen, TwoStoresOpeningOneFreshFileMigrateOnce) {
  TempDir dir;
  std::string path = dir.File("cache.db");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      Store store(path);
      if (store.schema_version() == kLatestSchemaVersion) ++ok;
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
    Store store(path);
    store.PutBestPlan(testing::SamplePlan("r1", 1.0));
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
  Store store(path);
  EXPECT_EQ(store.schema_version(), kLatestSchemaVersion);
}

TEST(StoreOpen, DirectoryPathIsRefused) {
  TempDir dir;
  EXPECT_NE(OpenError(dir.path().string()).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace fusetune::db
