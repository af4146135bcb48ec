// Targets named by their CPU (server/target_names.h): what `cache ls` and `workers` show must find
// the one fingerprint it stands for, and never pick one of several silently.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "server/target_names.h"

namespace fusetune {
namespace {

const std::string kTurin = "x86_64-pc-linux-gnu;generic-AuthenticAMD-26-2;+avx512f,+fma";
const std::string kRyzen = "x86_64-pc-linux-gnu;generic-AuthenticAMD-26-68;+avx512f,+fma";
const std::string kZen4 = "x86_64-pc-linux-gnu;znver4;+avx512f,+fma";

TEST(TargetNames, TheCpuIsTheMiddleFieldAndOtherNamesStayWhole) {
  EXPECT_EQ(TargetCpu(kTurin), "generic-AuthenticAMD-26-2");
  EXPECT_EQ(TargetCpu(kZen4), "znver4");
  EXPECT_EQ(TargetCpu("synthetic"), "synthetic");
  EXPECT_EQ(TargetCpu("a;b"), "a;b");  // no features field: not a fingerprint
}

TEST(TargetNames, TheKeyBeforeCpuIdsIsGenericForACpuLlvmDoesNotKnowOnly) {
  EXPECT_EQ(FingerprintBeforeCpuIds(kTurin), "x86_64-pc-linux-gnu;generic;+avx512f,+fma");
  EXPECT_EQ(FingerprintBeforeCpuIds(kZen4), "");
  EXPECT_EQ(FingerprintBeforeCpuIds("synthetic"), "");
  EXPECT_EQ(FingerprintBeforeCpuIds("x86_64-pc-linux-gnu;generic;+avx2"), "");
}

TEST(TargetNames, ACpuNameResolvesToItsOneFingerprint) {
  const std::vector<std::string> known = {kTurin, kRyzen, kZen4, kZen4};
  EXPECT_EQ(ResolveTargetName("znver4", known), kZen4);
  EXPECT_EQ(ResolveTargetName("generic-AuthenticAMD-26-68", known), kRyzen);
  EXPECT_EQ(ResolveTargetName(kTurin, known), kTurin);
  // Unknown names and parts of names are passed on as given: the lookup then finds nothing.
  EXPECT_EQ(ResolveTargetName("generic-AuthenticAMD-26", known), "generic-AuthenticAMD-26");
  EXPECT_EQ(ResolveTargetName("znver5", {}), "znver5");
}

TEST(TargetNames, ACpuNameOfSeveralFingerprintsIsRefusedNamingThem) {
  const std::string zen4_vm = "x86_64-pc-linux-gnu;znver4;+avx2,+fma";
  try {
    ResolveTargetName("znver4", {kZen4, zen4_vm, kTurin});
    FAIL() << "an ambiguous name resolved";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("names 2 fingerprints"), std::string::npos) << what;
    EXPECT_NE(what.find(kZen4), std::string::npos) << what;
    EXPECT_NE(what.find(zen4_vm), std::string::npos) << what;
    EXPECT_EQ(what.find(kTurin), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fusetune
