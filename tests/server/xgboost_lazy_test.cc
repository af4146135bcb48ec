// server/xgboost_lazy.cc compiled with the soname of a library that does not exist: every call
// fails cleanly (-1, nothing dereferenced) and XGBGetLastError() names the library and the
// package, which is what LearnedScheduleModel's callers report. (tuner_tests' learned-model test
// covers the forwarders with the real libxgboost.)
#include <gtest/gtest.h>

#include <string>

#include <xgboost/c_api.h>

TEST(XgboostLazy, AMissingLibraryFailsEveryCallWithAClearError) {
  const float data[2] = {1.0f, 2.0f};
  DMatrixHandle matrix = nullptr;
  EXPECT_EQ(XGDMatrixCreateFromMat(data, 1, 2, -1.0f, &matrix), -1);
  EXPECT_EQ(matrix, nullptr);
  BoosterHandle booster = nullptr;
  EXPECT_EQ(XGBoosterCreate(&matrix, 1, &booster), -1);
  EXPECT_EQ(XGBoosterFree(booster), -1);
  std::string error = XGBGetLastError();
  EXPECT_NE(error.find("cannot load"), std::string::npos) << error;
  EXPECT_NE(error.find("libfusetune-no-such-xgboost.so.0"), std::string::npos) << error;
  EXPECT_NE(error.find("libxgboost0"), std::string::npos) << error;
}
