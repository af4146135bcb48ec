#pragma once
// Shared helpers of the store tests: a fresh directory per test, a file opened as the service
// opens it, and sample records.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "db/cache.h"
#include "db/database.h"
#include "db/job_queue.h"
#include "db/records.h"

namespace fusetune::db::testing {

// A fresh, empty directory under the system temp dir, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("fusetune_db_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A file opened as `fusetune serve` opens it: the database and both of its views.
struct OpenFile {
  explicit OpenFile(const std::string& path, DatabaseOptions options = {})
      : db(path, options), cache(db), queue(db) {}
  Database db;
  Cache cache;
  JobQueue queue;
};

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline TargetRecord SampleTarget(const std::string& fingerprint = "x86_64-zen5-avx512") {
  TargetRecord t;
  t.fingerprint = fingerprint;
  t.cpu = "generic";
  t.triple = "x86_64-pc-linux-gnu";
  t.features = "+avx2,+avx512f,+fma";
  t.cores = 2;
  t.peak_gflops = 201.5;
  t.bandwidth_gbs = 91.25;
  t.measured_at = 1700000000123;
  return t;
}

inline MeasurementKey Key(const std::string& group, const std::string& schedule = "",
                          const std::string& target = "x86_64-zen5-avx512", int threads = 1) {
  return MeasurementKey{group, schedule, target, threads};
}

inline MeasurementRecord OkMeasurement(const MeasurementKey& key, double median_us) {
  MeasurementRecord m;
  m.key = key;
  m.status = MeasurementStatus::kOk;
  m.median_us = median_us;
  m.min_us = median_us * 0.9;
  m.stddev_us = median_us * 0.01;
  m.number = 100;
  m.repeat = 5;
  m.max_abs_error = 1.5e-6;
  m.compile_ms = 12.5;
  m.group_text = "nn.batch_matmul(p0, p1) -> where(p2, n0, ones_like(n0))";
  m.created_at = 1700000000456;
  return m;
}

inline MeasurementRecord InvalidMeasurement(const MeasurementKey& key, const std::string& reason) {
  MeasurementRecord m;
  m.key = key;
  m.status = MeasurementStatus::kInvalid;
  m.reason = reason;
  m.created_at = 1700000000789;
  return m;
}

inline BestPlanRecord SamplePlan(const std::string& signature, double tuned_us,
                                 const std::string& target = "x86_64-zen5-avx512") {
  BestPlanRecord b;
  b.key = BestPlanKey{signature, target, 1, 1};
  b.groups = {StoredGroup{{0}, "tile_m=8,tile_n=32"}, StoredGroup{{1, 2}, ""}};
  b.tuned_us = tuned_us;
  b.greedy_us = tuned_us * 1.5;
  b.unfused_us = tuned_us * 2;
  b.chosen = "tuned";
  b.region_text = "region text of " + signature;
  b.ops = {"nn.batch_matmul", "ones_like", "where"};
  b.created_at = 1700000001000;
  return b;
}

}  // namespace fusetune::db::testing
