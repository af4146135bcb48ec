#include "ir/attention_schedule.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

int64_t RoundUp16(int64_t x) { return (x + 15) / 16 * 16; }

constexpr int64_t kTwoPassMaxKeys = 2048;

}  // namespace

AttentionShape AttentionShapeOf(const Graph& graph, const FusedGroup& group) {
  FT_CHECK(group.Attention(), "not an attention group");
  const Value& scores = graph.value(group.attention.scores);
  const Value& out = graph.value(group.attention.output);
  const Shape& s = scores.type.shape;
  const Shape& o = out.type.shape;
  const Shape& q = graph.value(scores.inputs[0]).type.shape;
  AttentionShape shape;
  shape.batch = s[0];
  shape.m = s[1];
  shape.n = s[2];
  shape.d = scores.attrs.GetBool("transpose_a") ? q[1] : q[2];
  shape.e = o[2];
  return shape;
}

AttentionTiling ResolveAttentionTiling(const AttentionShape& shape, const Schedule& schedule,
                                       int threads) {
  AttentionTiling t;
  t.online = shape.n > kTwoPassMaxKeys;
  std::optional<bool> blocked;  // unset: the two-pass form is blocked
  // Enough tasks for every thread to get several (one head has M / q_rows of them).
  while (t.q_rows > 8 && t.Tasks(shape) < 4 * std::max(1, threads)) t.q_rows /= 2;
  for (const auto& [key, value] : schedule.knobs) {
    if (key == "q_rows") {
      if (value < 1 || value > 4096)
        throw UserError(fmt::format("schedule knob q_rows={} must be 1..4096", value));
      t.q_rows = value;
    } else if (key == "k_block") {
      if (value < 16 || value > 256 || value % 16 != 0)
        throw UserError(
            fmt::format("schedule knob k_block={} must be a multiple of 16 in 16..256", value));
      t.k_block = value;
    } else if (key == "rows") {
      if (value < 1 || value > 8)
        throw UserError(fmt::format("schedule knob rows={} must be 1..8", value));
      t.rows = static_cast<int>(value);
    } else if (key == "online") {
      if (value != 0 && value != 1)
        throw UserError(fmt::format("schedule knob online={} must be 0 or 1", value));
      t.online = value == 1;
    } else if (key == "blocked") {
      if (value != 0 && value != 1)
        throw UserError(fmt::format("schedule knob blocked={} must be 0 or 1", value));
      blocked = value == 1;
    } else {
      throw UserError(fmt::format(
          "unknown schedule knob '{}' (the attention template has: q_rows, k_block, rows, online, "
          "blocked)",
          key));
    }
  }
  t.q_rows = std::clamp<int64_t>(t.q_rows, 1, std::max<int64_t>(1, shape.m));
  t.k_block = std::min(t.k_block, RoundUp16(std::max<int64_t>(1, shape.n)));
  t.rows = static_cast<int>(std::min<int64_t>(t.rows, t.q_rows));
  if (blocked.value_or(false) && t.online)
    throw UserError(
        "schedule knob blocked=1 is a form of the two-pass softmax: it excludes online=1");
  t.blocked = !t.online && blocked.value_or(true);
  return t;
}

std::vector<Schedule> AttentionScheduleSpace(const AttentionShape& shape, int threads) {
  (void)threads;
  std::vector<Schedule> space{Schedule{}};
  auto add = [&](std::initializer_list<std::pair<const char*, int64_t>> knobs) {
    Schedule s;
    for (const auto& [k, v] : knobs) s.Set(k, v);
    space.push_back(s);
  };
  // The two-pass form by rows next: measured first after the default, since the roofline ranks
  // attention schedules alike.
  const bool two_pass = shape.n <= kTwoPassMaxKeys;
  if (two_pass) add({{"blocked", 0}});
  add({{"k_block", 32}});
  add({{"k_block", 128}});
  add({{"rows", 2}});
  add({{"rows", 6}, {"k_block", 32}});
  if (shape.m >= 64) add({{"q_rows", 64}});
  add({{"q_rows", 16}});
  // The other softmax form than the default's, at two micro-kernel heights.
  const int64_t other = two_pass ? 1 : 0;
  add({{"online", other}});
  add({{"online", other}, {"rows", 2}});
  return space;
}

}  // namespace fusetune
