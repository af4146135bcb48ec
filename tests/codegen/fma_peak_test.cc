// The FMA peak kernel (worker/codegen/fma_peak.h): it computes what its chains define, and it
// runs at the target's widest vector width (a peak measured on half-width vectors would flatter
// every efficiency figure read against it).
#include <cmath>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "worker/codegen/fma_peak.h"

namespace fusetune::codegen {
namespace {

// The kernel's result recomputed in double: each lane of chain c follows a = a * s + add.
double Expected(int chains, int lanes, int64_t iters) {
  double total = 0;
  for (int c = 0; c < chains; ++c) {
    double a = static_cast<double>(kFmaPeakStart * static_cast<float>(c + 1));
    for (int64_t i = 0; i < iters; ++i) a = a * kFmaPeakScale + kFmaPeakAdd;
    total += a * lanes;
  }
  return total;
}

TEST(FmaPeak, ComputesItsChains) {
  Jit jit;
  for (int chains : {1, 8, 16, 24}) {
    auto kernel = CompileFmaPeak(jit, chains);
    EXPECT_EQ(kernel->chains(), chains);
    EXPECT_EQ(kernel->lanes(), std::max(1, jit.target().vector_floats()));
    EXPECT_EQ(kernel->FlopsPerIter(), 2.0 * chains * kernel->lanes());
    for (int64_t iters : {0, 1, 7, 1000}) {
      double want = Expected(chains, kernel->lanes(), iters);
      EXPECT_NEAR(kernel->Run(iters), want, 1e-5 * std::abs(want) + 1e-6)
          << chains << " chains, " << iters << " iterations";
    }
  }
}

TEST(FmaPeak, UsesTheWidestVectors) {
  Jit jit;
  std::string assembly;
  CompileFmaPeak(jit, 16, &assembly);
  ASSERT_FALSE(assembly.empty());
  if (!jit.target().Has("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  // Every FMA of the loop is a 512-bit one (the final reduction may use narrower registers).
  std::istringstream lines(assembly);
  int fmas = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("vfmadd") == std::string::npos) continue;
    ++fmas;
    EXPECT_NE(line.find("zmm"), std::string::npos) << line;
  }
  EXPECT_GE(fmas, 16) << assembly;
}

TEST(FmaPeak, RejectsBadChainCounts) {
  Jit jit;
  EXPECT_ANY_THROW(CompileFmaPeak(jit, 0));
  EXPECT_ANY_THROW(CompileFmaPeak(jit, 33));
}

}  // namespace
}  // namespace fusetune::codegen
