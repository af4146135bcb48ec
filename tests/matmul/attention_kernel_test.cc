// Attention kernels (templates/attention.h) against the reference interpreter: the online
// softmax and the two-pass form (online=0), blocked or by rows, must equal softmax-then-matmul at
// sizes that are not multiples of the key block or of 16 (N = 45, M = 37, head dims 64 and odd),
// with and without scale and mask steps, with the head-split transposes inlined, every schedule of
// the space and odd knobs, 1 and 2 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/attention_schedule.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "tests/matmul/group_fixture.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/attention.h"

namespace fusetune::codegen {
namespace {

using test::TheJit;
using Fixture = test::GroupFixture;

Fixture Prepare(const std::string& text, const std::vector<std::string>& names) {
  Fixture f = test::PrepareGroup(text, names, 11);
  EXPECT_TRUE(f.group.Attention());
  return f;
}

double MaxError(const Fixture& f, const Schedule& schedule, int threads) {
  EXPECT_EQ(f.group.outputs.size(), 1u);
  return test::KernelMaxError(f, threads, [&](auto& module, const std::string& symbol) {
    EmitAttentionKernel(module, f.graph, f.group, schedule, TheJit().target(), symbol, threads);
  });
}

// Every schedule of the space plus knobs that leave remainders everywhere, at 1 and 2 threads.
void CheckAllSchedules(const Fixture& f) {
  std::vector<Schedule> schedules = AttentionScheduleSpace(AttentionShapeOf(f.graph, f.group), 2);
  for (const char* text : {"q_rows=5,k_block=16,rows=3", "q_rows=1,rows=1", "k_block=256,rows=8",
                           "q_rows=7,k_block=48,rows=2", "q_rows=5,k_block=16,rows=3,online=1",
                           "q_rows=1,rows=1,online=1", "k_block=256,rows=8,online=1",
                           "q_rows=7,k_block=48,rows=2,online=1",
                           "q_rows=5,k_block=16,rows=3,blocked=0", "q_rows=1,rows=1,blocked=0",
                           "k_block=256,rows=8,blocked=0", "q_rows=7,k_block=48,rows=2,blocked=0"})
    schedules.push_back(Schedule::Parse(text));
  for (const Schedule& s : schedules)
    for (int threads : {1, 2})
      EXPECT_LT(MaxError(f, s, threads), 2e-5)
          << "schedule '" << s.ToString() << "', " << threads << " threads";
}

// Scores Q·Kᵀ (K as [B, N, D]), scale, additive mask, softmax, times Vᵀ given as [B, E, N].
std::string Scaled(int b, int m, int n, int d, int e) {
  return fmt::format(R"(
fn (%q: Tensor[({0}, {1}, {3}), float32], %k: Tensor[({0}, {2}, {3}), float32],
    %vt: Tensor[({0}, {4}, {2}), float32], %mask: Tensor[(1, {1}, {2}), float32]) {{
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.125f);
  %2 = add(%1, %mask);
  %3 = nn.softmax(%2, axis=-1);
  nn.batch_matmul(%3, %vt)
}})",
                     b, m, n, d, e);
}

TEST(AttentionKernel, ScaledMaskedAtOddSizes) {
  CheckAllSchedules(Prepare(Scaled(3, 37, 45, 64, 64), {"0", "1", "2", "3", "4"}));
}

TEST(AttentionKernel, OddHeadDimensions) {
  CheckAllSchedules(Prepare(Scaled(2, 19, 33, 19, 23), {"0", "1", "2", "3", "4"}));
}

TEST(AttentionKernel, OneQueryAndOneKey) {
  CheckAllSchedules(Prepare(Scaled(2, 1, 1, 8, 5), {"0", "1", "2", "3", "4"}));
}

// A softmax written op by op (ir/norm_pattern.h): its steps are the kernel's own softmax.
TEST(AttentionKernel, ASoftmaxWrittenOpByOpAtOddSizes) {
  CheckAllSchedules(Prepare(R"(
fn (%q: Tensor[(3, 37, 64), float32], %k: Tensor[(3, 45, 64), float32],
    %vt: Tensor[(3, 23, 45), float32], %mask: Tensor[(1, 37, 45), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.125f);
  %2 = add(%1, %mask);
  %3 = max(%2, axis=[2], keepdims=True);
  %4 = subtract(%2, %3);
  %5 = exp(%4);
  %6 = sum(%5, axis=[2], keepdims=True);
  %7 = divide(%5, %6);
  nn.batch_matmul(%7, %vt)
})",
                            {"0", "1", "2", "3", "4", "5", "6", "7", "8"}));
}

// Large scores: the online rescaling must not overflow where a naive exp would.
TEST(AttentionKernel, LargeScoresNoScale) {
  Fixture f = Prepare(R"(
fn (%q: Tensor[(2, 20, 16), float32], %k: Tensor[(2, 70, 16), float32],
    %v: Tensor[(2, 70, 24), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 40f);
  %2 = nn.softmax(%1, axis=2);
  nn.batch_matmul(%2, %v, transpose_b=False)
})",
                      {"0", "1", "2", "3"});
  CheckAllSchedules(f);
}

// The ONNX BERT import's shape: heads split by reshape + transpose inside the group, Q divided
// by sqrt(d), K given transposed and V untransposed (transpose_b=False), no scale step.
TEST(AttentionKernel, OnnxStyleWithHeadSplitPrologue) {
  Fixture f = Prepare(R"(
fn (%qkv: Tensor[(29, 1, 144), float32]) {
  %0 = strided_slice(%qkv, begin=[0], end=[48], strides=[1], axes=[2]);
  %1 = strided_slice(%qkv, begin=[48], end=[96], strides=[1], axes=[2]);
  %2 = strided_slice(%qkv, begin=[96], end=[144], strides=[1], axes=[2]);
  %3 = reshape(%0, newshape=[29, 3, 16]);
  %4 = transpose(%3, axes=[1, 0, 2]);
  %5 = reshape(%1, newshape=[29, 3, 16]);
  %6 = reshape(%2, newshape=[29, 3, 16]);
  %7 = transpose(%6, axes=[1, 0, 2]);
  %8 = divide(%4, 4f);
  %9 = transpose(%5, axes=[1, 2, 0]);
  %10 = nn.batch_matmul(%8, %9, transpose_b=False);
  %11 = nn.softmax(%10, axis=2);
  nn.batch_matmul(%11, %7, transpose_b=False)
})",
                      {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"});
  CheckAllSchedules(f);
}

// Computed operands in the other two layouts: K as [B, N, D] (transpose_b) and V as [B, E, N]
// (transpose_b), each behind an element-wise step, so the kernel packs them from 16-lane reads
// (K one depth row per lane, V one key per lane), with E below its padding and N, D odd.
TEST(AttentionKernel, ComputedOperandsInEveryLayout) {
  Fixture f = Prepare(R"(
fn (%q: Tensor[(2, 19, 24), float32], %k: Tensor[(2, 37, 24), float32],
    %vt: Tensor[(2, 20, 37), float32], %mask: Tensor[(1, 19, 37), float32]) {
  %0 = negative(%k);
  %1 = multiply(%vt, 2f);
  %2 = multiply(%q, 0.5f);
  %3 = nn.batch_matmul(%2, %0);
  %4 = add(%3, %mask);
  %5 = nn.softmax(%4, axis=-1);
  nn.batch_matmul(%5, %1)
})",
                      {"0", "1", "2", "3", "4", "5", "6"});
  CheckAllSchedules(f);
}

// GPT-2's export at M queries and N keys: the scores given a leading 1 (`add_one`) for a
// [1, 1, M, N] boolean mask that `where` turns into -FLT_MAX, the softmax over the rank-4
// tensor, P back to rank 3 (`drop_one`).
std::string CausalWithALeadingOne(const std::string& add_one, const std::string& drop_one,
                                  int m = 37, int n = 45) {
  return fmt::format(R"(
fn (%q: Tensor[(3, {2}, 24), float32], %kt: Tensor[(3, 24, {3}), float32],
    %v: Tensor[(3, {3}, 20), float32], %mask: Tensor[(1, 1, {2}, {3}), bool]) {{
  %0 = nn.batch_matmul(%q, %kt, transpose_b=False);
  %1 = {0};
  %2 = multiply(%1, 0.125f);
  %3 = where(%mask, -3.4028235e+38f, %2);
  %4 = nn.softmax(%3, axis=3);
  %5 = {1};
  nn.batch_matmul(%5, %v, transpose_b=False)
}})",
                     add_one, drop_one, m, n);
}

TEST(AttentionKernel, CausalMaskOnScoresWithALeadingOne) {
  const std::vector<std::string> names{"0", "1", "2", "3", "4", "5", "6"};
  CheckAllSchedules(Prepare(CausalWithALeadingOne("reshape(%0, newshape=[1, 3, 37, 45])",
                                                  "reshape(%4, newshape=[3, 37, 45])"),
                            names));
  // The same leading 1 from expand_dims and squeeze (examples/gpt2_block_dyn.relay).
  CheckAllSchedules(
      Prepare(CausalWithALeadingOne("expand_dims(%0, axis=0)", "squeeze(%4, axis=[0])"), names));
}

// `f` with every element of parameter `name` replaced by value(index), the other parameters as
// they were, and the reference values recomputed.
Fixture WithParam(Fixture f, const std::string& name, const std::function<double(int64_t)>& value) {
  std::vector<Tensor> inputs;
  for (ValueId p : f.graph.params()) inputs.push_back(f.values[p]);
  const ValueId param = f.graph.FindByName(name).value();
  const auto at = std::find(f.graph.params().begin(), f.graph.params().end(), param);
  Tensor& t = inputs[at - f.graph.params().begin()];
  for (int64_t i = 0; i < t.size(); ++i) t.Set(i, value(i));
  f.values = InterpretAll(f.graph, inputs);
  f.inputs.clear();
  for (ValueId v : f.group.inputs) f.inputs.push_back(f.values[v]);
  return f;
}

// GPT-2's attention at M x N with mask(m, n) as its [1, 1, M, N] mask.
Fixture CausalForm(int m, int n, const std::function<bool(int64_t, int64_t)>& masked) {
  const std::string text =
      CausalWithALeadingOne("expand_dims(%0, axis=0)", "squeeze(%4, axis=[0])", m, n);
  return WithParam(Prepare(text, {"0", "1", "2", "3", "4", "5", "6"}), "mask",
                   [&](int64_t i) { return masked(i / n, i % n) ? 1.0 : 0.0; });
}

// Key blocks masked in every row of a call are skipped (their products never computed), which
// must give the softmax of every key: with a causal mask, with rows masked entirely (no block
// may be skipped for them: their softmax is uniform over all keys), and with the unmasked keys
// last (the first blocks are masked before any row has a score to compare with).
TEST(AttentionKernel, MasksThatSkipKeyBlocks) {
  CheckAllSchedules(CausalForm(37, 45, [](int64_t m, int64_t n) { return n > m; }));
  CheckAllSchedules(CausalForm(70, 70, [](int64_t m, int64_t n) { return n > m || m % 9 == 4; }));
  CheckAllSchedules(CausalForm(37, 80, [](int64_t m, int64_t n) { return n < 40 + m; }));
}

// A skipped key is never read: with 4 causal queries, V's last key is NaN, which no query
// attends to; without the skip every output would be NaN (0 · NaN), with it the outputs equal the
// reference of V with that key zeroed. Every form, blocks that leave the last key out of the first.
TEST(AttentionKernel, SkippedKeysAreNotRead) {
  const int n = 45, e = 20;
  Fixture f = CausalForm(4, n, [](int64_t q, int64_t k) { return k > q; });
  const Tensor v = f.values[f.graph.FindByName("v").value()];
  auto last_key = [&](int64_t i) { return (i / e) % n == n - 1; };
  const std::vector<Tensor> zeroed =
      WithParam(f, "v", [&](int64_t i) { return last_key(i) ? 0.0 : v.Get(i); }).values;
  f = WithParam(f, "v", [&](int64_t i) { return last_key(i) ? NAN : v.Get(i); });
  f.values = zeroed;
  for (const char* text :
       {"k_block=16", "k_block=32,rows=8", "k_block=16,online=1", "k_block=32,rows=2,online=1",
        "k_block=16,blocked=0", "k_block=32,rows=3,blocked=0"})
    for (int threads : {1, 2})
      EXPECT_LT(MaxError(f, Schedule::Parse(text), threads), 2e-5)
          << "schedule '" << text << "', " << threads << " threads";
}

TEST(AttentionKernel, BadKnobIsAClearError) {
  Fixture f = Prepare(Scaled(1, 4, 4, 4, 4), {"0", "1", "2", "3", "4"});
  try {
    MaxError(f, Schedule::Parse("k_block=24"), 1);
    FAIL() << "k_block=24 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("k_block=24"), std::string::npos) << e.what();
  }
  try {
    MaxError(f, Schedule::Parse("online=2"), 1);
    FAIL() << "online=2 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("online=2 must be 0 or 1"), std::string::npos) << e.what();
  }
  try {
    MaxError(f, Schedule::Parse("online=1,blocked=1"), 1);
    FAIL() << "online=1,blocked=1 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("blocked=1 is a form of the two-pass softmax"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fusetune::codegen
