// Horizontal matmul kernels (templates/horizontal_matmul.h) against the reference interpreter:
// sibling denses and batch_matmuls with their epilogues at odd sizes (n not a multiple of 16,
// m = 1), light and heavy epilogues, extra outputs, every schedule of the space, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/text/relay_parser.h"
#include "tests/matmul/group_fixture.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/matmul.h"

namespace fusetune::codegen {
namespace {

using test::TheJit;
using Fixture = test::GroupFixture;

Fixture Prepare(const std::string& text, const std::vector<std::string>& names) {
  Fixture f = test::PrepareGroup(text, names, 7);
  EXPECT_TRUE(f.group.Horizontal());
  return f;
}

double MaxError(const Fixture& f, const Schedule& schedule, int threads) {
  return test::KernelMaxError(f, threads, [&](auto& module, const std::string& symbol) {
    EmitMatmulKernel(module, f.graph, f.group, schedule, TheJit().target(), symbol, threads);
  });
}

std::string T(std::vector<int64_t> shape, const char* dtype = "float32") {
  std::string s = "Tensor[(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",), " : "), ") + dtype + "]";
}

constexpr double kTol = 5e-5;

// Three sibling denses of widths n0, n1, n2 over x [m, k], each with a bias add.
std::string Qkv(int64_t m, int64_t k, std::array<int64_t, 3> n) {
  return fmt::format(
      "fn (%x: {}, %wq: {}, %bq: {}, %wk: {}, %bk: {}, %wv: {}, %bv: {}) {{\n"
      "  %0 = nn.dense(%x, %wq); %1 = add(%0, %bq);\n"
      "  %2 = nn.dense(%x, %wk); %3 = add(%2, %bk);\n"
      "  %4 = nn.dense(%x, %wv); %5 = add(%4, %bv);\n"
      "  (%1, %3, %5)\n}}",
      T({m, k}), T({n[0], k}), T({n[0]}), T({n[1], k}), T({n[1]}), T({n[2], k}), T({n[2]}));
}

TEST(HorizontalMatmul, QkvWithBiasAtOddSizesAndThreads) {
  for (auto [m, k, n] : {std::tuple{1, 19, std::array<int64_t, 3>{17, 33, 5}},
                         {7, 64, {48, 48, 48}},
                         {33, 24, {1, 70, 16}},
                         {64, 96, {96, 96, 96}}}) {
    Fixture f = Prepare(Qkv(m, k, n), {"0", "1", "2", "3", "4", "5"});
    for (int threads : {1, 2})
      EXPECT_LT(MaxError(f, {}, threads), kTol)
          << m << "x" << k << " n " << n[0] << "," << n[1] << "," << n[2] << " at " << threads;
  }
}

TEST(HorizontalMatmul, EverySchedule) {
  Fixture f = Prepare(Qkv(37, 40, {50, 23, 64}), {"0", "1", "2", "3", "4", "5"});
  MatmulLayout first{false, false, true, 1, 37, 50, 40};
  for (const Schedule& s : MatmulScheduleSpace(first, 1))
    EXPECT_LT(MaxError(f, s, 1), kTol) << s.ToString();
  // Tiles wider than a part and small cache blocks: panels and blocks cross part boundaries.
  Schedule wide;
  wide.Set("mr", 2);
  wide.Set("nr", 64);
  wide.Set("nc", 64);
  wide.Set("mc", 4);
  EXPECT_LT(MaxError(f, wide, 2), kTol);
}

TEST(HorizontalMatmul, ProductsAloneAndMixedEpilogues) {
  Fixture alone = Prepare(Qkv(9, 16, {20, 20, 20}), {"0", "2", "4"});
  EXPECT_LT(MaxError(alone, {}, 1), kTol);
  Fixture mixed = Prepare(Qkv(9, 16, {20, 36, 20}), {"0", "1", "2"});
  EXPECT_LT(MaxError(mixed, {}, 2), kTol);
}

TEST(HorizontalMatmul, HeavyEpilogueAndExtraOutputs) {
  // One part ends in tanh (a heavy epilogue: a tile function), the other stores both the
  // product and its bias add.
  Fixture f = Prepare(fmt::format("fn (%x: {}, %w0: {}, %b0: {}, %w1: {}, %b1: {}) {{\n"
                                  "  %0 = nn.dense(%x, %w0); %1 = add(%0, %b0); %2 = tanh(%1);\n"
                                  "  %3 = nn.dense(%x, %w1); %4 = add(%3, %b1);\n"
                                  "  %5 = multiply(%3, 2f);\n"
                                  "  (%2, %4, %5)\n}}",
                                  T({13, 24}), T({29, 24}), T({29}), T({18, 24}), T({18})),
                      {"0", "1", "2", "3", "4"});
  EXPECT_EQ(f.group.outputs.size(), 3u);  // %2, %3 (read by %5 outside), %4
  for (int threads : {1, 2}) EXPECT_LT(MaxError(f, {}, threads), kTol) << threads;
}

TEST(HorizontalMatmul, SiblingBatchMatmuls) {
  // Q·K1ᵀ and Q·K2ᵀ per head: batch_matmul siblings of different widths.
  Fixture f = Prepare(fmt::format("fn (%q: {}, %k1: {}, %k2: {}) {{\n"
                                  "  %0 = nn.batch_matmul(%q, %k1);\n"
                                  "  %1 = nn.batch_matmul(%q, %k2);\n"
                                  "  %2 = multiply(%1, 0.5f);\n"
                                  "  (%0, %2)\n}}",
                                  T({3, 11, 16}), T({3, 21, 16}), T({3, 40, 16})),
                      {"0", "1", "2"});
  for (int threads : {1, 2}) EXPECT_LT(MaxError(f, {}, threads), kTol) << threads;
}

}  // namespace
}  // namespace fusetune::codegen
