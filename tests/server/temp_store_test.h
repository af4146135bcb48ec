#pragma once
// The fixture of tests that tune into a real SQLite store: a file per test, named after the
// process, suite and test so parallel ctest runs never share one, removed with its WAL files.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace fusetune {

class TempStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("fusetune_" + std::string(test->test_suite_name()) + "_" + std::to_string(::getpid()) +
             "_" + test->name() + ".db");
    std::filesystem::remove(path_);
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path_.string() + suffix);
  }
  std::filesystem::path path_;
};

}  // namespace fusetune
