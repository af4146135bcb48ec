// The target fingerprint (worker/codegen/target.h) keys every stored measurement and plan: CPUs
// that LLVM cannot tell apart must still get different keys when CPUID can.
#include <string>

#include <gtest/gtest.h>

#include "worker/codegen/target.h"

namespace fusetune::codegen {
namespace {

TEST(CpuSignature, AddsTheExtendedFamilyToFamily15) {
  // AMD EPYC 9005 (Zen 5, Turin): family 0x1A = 0xF + 0xB, model 2, stepping 1.
  const CpuIdentity zen5 = DecodeCpuSignature(0x00B00F21);
  EXPECT_EQ(zen5.family, 26);
  EXPECT_EQ(zen5.model, 2);
  // Ryzen 9000 (Zen 5, Granite Ridge): model 0x44 through the extended model.
  const CpuIdentity desktop = DecodeCpuSignature(0x00B40F40);
  EXPECT_EQ(desktop.family, 26);
  EXPECT_EQ(desktop.model, 0x44);
}

TEST(CpuSignature, ExtendsTheModelOfFamily6) {
  // Xeon Sapphire Rapids: family 6, model 0x8F, stepping 8.
  const CpuIdentity spr = DecodeCpuSignature(0x000806F8);
  EXPECT_EQ(spr.family, 6);
  EXPECT_EQ(spr.model, 0x8F);
}

TEST(CpuSignature, LeavesTheModelOfOtherFamiliesAlone) {
  // Family 5 (Pentium): the extended-model bits are not part of the model.
  const CpuIdentity p5 = DecodeCpuSignature(0x00010543);
  EXPECT_EQ(p5.family, 5);
  EXPECT_EQ(p5.model, 4);
}

TEST(CpuKey, NamesFamilyAndModelOnlyWhereLlvmSaysGeneric) {
  const CpuIdentity turin{"AuthenticAMD", 26, 2};
  const CpuIdentity ryzen{"AuthenticAMD", 26, 68};
  EXPECT_EQ(CpuKeyName("generic", turin), "generic-AuthenticAMD-26-2");
  EXPECT_NE(CpuKeyName("generic", turin), CpuKeyName("generic", ryzen));
  // A CPU LLVM knows keeps its name, so stores keyed by it before stay valid.
  EXPECT_EQ(CpuKeyName("znver4", {"AuthenticAMD", 25, 17}), "znver4");
  // Without CPUID (not x86) there is nothing to add.
  EXPECT_EQ(CpuKeyName("generic", CpuIdentity{}), "generic");
}

TEST(HostTarget, FingerprintIsTripleCpuKeyAndFeatures) {
  const TargetInfo& host = HostTarget();
  ASSERT_FALSE(host.cpu_key.empty());
  EXPECT_EQ(host.Fingerprint(), host.triple + ";" + host.cpu_key + ";" + host.FeatureString());
  EXPECT_EQ(host.cpu_key.rfind(host.cpu, 0), 0u)
      << host.cpu_key << " should start with " << host.cpu;
#if defined(__x86_64__)
  if (host.cpu == "generic") {
    EXPECT_NE(host.cpu_key, "generic") << "an x86 CPU LLVM does not know is keyed by its CPUID";
  } else {
    EXPECT_EQ(host.cpu_key, host.cpu);
  }
#endif
}

}  // namespace
}  // namespace fusetune::codegen
