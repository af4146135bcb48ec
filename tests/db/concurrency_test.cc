// Readers in other threads and in another process keep reading consistent data while a writer
// writes (WAL).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "db_test_util.h"

namespace fusetune::db {
namespace {

using testing::Key;
using testing::TempDir;

// Each write puts a measurement and a plan in one transaction... they are separate calls here, so
// readers check what every single call guarantees: a record is either absent or whole.
void WriteMany(Cache& store, int n) {
  for (int i = 0; i < n; ++i) {
    store.PutMeasurements({testing::OkMeasurement(Key("g" + std::to_string(i)), 1.0 + i)});
    store.PutBestPlan(testing::SamplePlan("r" + std::to_string(i), 1.0 + i));
  }
}

// Returns the number of inconsistencies seen.
int ReadUntil(Cache& store, int n, const std::atomic<bool>& writer_done) {
  int bad = 0;
  int last_count = 0;
  while (true) {
    bool finished = writer_done.load();
    std::vector<MeasurementRecord> all = store.ListMeasurements();
    int count = static_cast<int>(all.size());
    if (count < last_count) ++bad;  // never goes backwards
    last_count = count;
    for (const MeasurementRecord& m : all) {
      int i = std::stoi(m.key.group_signature.substr(1));
      if (m.median_us != 1.0 + i || m.number != 100) ++bad;
    }
    std::optional<BestPlanRecord> p =
        store.FindBestPlan({"r" + std::to_string(count / 2), "x86_64-zen5-avx512", 1, 1});
    if (p && (p->groups.size() != 2 || p->ops.size() != 3)) ++bad;
    if (finished) break;
  }
  if (last_count != n) ++bad;
  return bad;
}

TEST(Concurrency, ReaderThreadsWithTheirOwnDatabasesWhileAWriterWrites) {
  TempDir dir;
  std::string path = dir.File("c.db");
  Database writer_db(path);
  Cache writer(writer_db);
  constexpr int kN = 300;
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  std::vector<int> bad(3, 0);
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      Database reader_db(path);
      Cache reader(reader_db);
      bad[r] = ReadUntil(reader, kN, done);
    });
  }
  WriteMany(writer, kN);
  done = true;
  for (auto& t : readers) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(bad[r], 0) << "reader " << r;
}

TEST(Concurrency, ThreadsSharingOneDatabase) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache store(db);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string g = "t" + std::to_string(t) + "_" + std::to_string(i);
        store.PutMeasurements({testing::OkMeasurement(Key(g), 2.0)});
        ASSERT_TRUE(store.FindMeasurement(Key(g)));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store.ListMeasurements().size(), 200u);
}

TEST(Concurrency, ReaderInAnotherProcessWhileAWriterWrites) {
  TempDir dir;
  std::string path = dir.File("c.db");
  { Database init(path); }  // the schema exists before the child opens the file
  std::string flag = dir.File("writer_done");
  constexpr int kN = 200;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child reads until the parent says it is done; exit code = inconsistencies (capped).
    int bad = 0;
    try {
      Database reader_db(path);
      Cache reader(reader_db);
      std::atomic<bool> done{false};
      std::thread watcher([&] {
        while (!std::filesystem::exists(flag)) usleep(1000);
        done = true;
      });
      bad = ReadUntil(reader, kN, done);
      watcher.join();
    } catch (...) {
      bad = 100;
    }
    _exit(bad > 100 ? 100 : bad);
  }
  {
    Database writer_db(path);
    Cache writer(writer_db);
    WriteMany(writer, kN);
  }
  testing::WriteBytes(flag, "");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace fusetune::db
