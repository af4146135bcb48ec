#include "ir/matmul_schedule.h"

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

constexpr int kLanes = 16;                     // floats per 512-bit vector
constexpr int64_t kPackedBBudget = 256 << 10;  // bytes of packed B per task (L2 share)
constexpr int64_t kDefaultKc = 256;            // k block when K is large

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

// The k block: whole K when small (no partial sums), else K split evenly near kDefaultKc.
int64_t DefaultKc(int64_t k) {
  if (k <= 2 * kDefaultKc) return k;
  return CeilDiv(k, CeilDiv(k, kDefaultKc));
}

// Cache blocks: packed B within its budget, and enough tasks to keep every thread busy with
// little imbalance (a multiple of the thread count, or many tasks). Splitting n is preferred,
// since splitting m makes every m block pack the same B again.
void DefaultBlocks(const MatmulLayout& l, int threads, MatmulTiling& t) {
  int64_t nblocks = std::max<int64_t>(1, CeilDiv(l.n * t.kc * 4, kPackedBBudget));
  t.nc = RoundUp(CeilDiv(l.n, nblocks), t.nr);
  t.mc = RoundUp(l.m, t.mr);
  auto balanced = [&] {
    int64_t tasks = t.Tasks(l);
    return threads <= 1 || tasks % threads == 0 || tasks >= 8 * threads;
  };
  for (int guard = 0; guard < 64 && !balanced(); ++guard) {
    if (t.nc > t.nr) {
      nblocks = t.NBlocks(l) + 1;
      t.nc = RoundUp(CeilDiv(l.n, nblocks), t.nr);
    } else if (t.mc > t.mr) {
      int64_t mblocks = t.MBlocks(l) + 1;
      t.mc = RoundUp(CeilDiv(l.m, mblocks), t.mr);
    } else {
      break;
    }
  }
}

// Rows: at most M (a 1-row problem gets a 1-row tile). Columns: no wider than N needs.
int ClampMr(int mr, const MatmulLayout& l) { return static_cast<int>(std::min<int64_t>(mr, l.m)); }
int ClampNr(int nr, const MatmulLayout& l) {
  return static_cast<int>(std::min<int64_t>(nr, RoundUp(l.n, kLanes)));
}

const std::set<std::string>& KnownKnobs() {
  static const std::set<std::string> known{"mr", "nr", "kc", "mc", "nc", "ku", "loop"};
  return known;
}

}  // namespace

bool MatmulTileFitsRegisters(int mr, int nr) {
  int vectors = nr / kLanes;
  return mr >= 1 && nr >= kLanes && nr % kLanes == 0 && mr * vectors + vectors + 1 <= 32;
}

MatmulTiling ResolveMatmulTiling(const MatmulLayout& l, const Schedule& s, int threads) {
  FT_CHECK(l.m > 0 && l.n > 0 && l.k > 0 && l.batch > 0, "matmul layout with an empty dimension");
  for (const auto& [key, value] : s.knobs) {
    if (!KnownKnobs().count(key))
      throw UserError(
          fmt::format("matmul schedule: unknown knob '{}' (known: mr, nr, kc, mc, nc, "
                      "ku, loop)",
                      key));
    if (value < 0 || (value == 0 && key != "loop"))
      throw UserError(fmt::format("matmul schedule: knob {}={} must be positive", key, value));
  }
  MatmulTiling t;
  int64_t mr = s.Get("mr", 8), nr = s.Get("nr", l.n <= kLanes ? kLanes : 32);
  if (nr % kLanes != 0)
    throw UserError(fmt::format("matmul schedule: nr={} is not a multiple of {}", nr, kLanes));
  if (mr > 32 || nr > 512 || !MatmulTileFitsRegisters(static_cast<int>(mr), static_cast<int>(nr)))
    throw UserError(
        fmt::format("matmul schedule: tile mr={} x nr={} needs more than 32 vector "
                    "registers",
                    mr, nr));
  t.mr = ClampMr(static_cast<int>(mr), l);
  t.nr = ClampNr(static_cast<int>(nr), l);
  t.ku = static_cast<int>(std::clamp<int64_t>(s.Get("ku", 4), 1, 16));
  t.loop = static_cast<int>(s.Get("loop", 0));
  if (t.loop > 1) throw UserError(fmt::format("matmul schedule: loop={} must be 0 or 1", t.loop));
  t.kc = std::min(s.Get("kc", DefaultKc(l.k)), l.k);
  DefaultBlocks(l, threads, t);
  if (s.Get("mc", 0) > 0) t.mc = RoundUp(std::min(s.Get("mc", 0), l.m), t.mr);
  if (s.Get("nc", 0) > 0) t.nc = RoundUp(std::min(s.Get("nc", 0), l.n), t.nr);
  return t;
}

static Schedule ToSchedule(const MatmulTiling& t) {
  Schedule s;
  s.Set("mr", t.mr);
  s.Set("nr", t.nr);
  s.Set("kc", t.kc);
  s.Set("mc", t.mc);
  s.Set("nc", t.nc);
  s.Set("ku", t.ku);
  s.Set("loop", t.loop);
  return s;
}

std::vector<Schedule> MatmulScheduleSpace(const MatmulLayout& l, int threads) {
  std::vector<Schedule> space;
  auto add = [&](Schedule s) {
    Schedule full = ToSchedule(ResolveMatmulTiling(l, s, threads));
    if (std::find(space.begin(), space.end(), full) == space.end()) space.push_back(full);
  };
  add(Schedule{});  // the default comes first
  const std::pair<int, int> tiles[] = {{8, 32}, {4, 64}, {12, 32}, {6, 64}, {2, 128}, {14, 32}};
  std::vector<int64_t> kcs{DefaultKc(l.k)};
  if (l.k > 128) kcs.push_back(128);
  if (l.k <= 2048 && kcs[0] != l.k) kcs.push_back(l.k);
  for (auto [mr, nr] : tiles) {
    for (int64_t kc : kcs) {
      for (int loop : {0, 1}) {
        Schedule s;
        s.Set("mr", mr);
        s.Set("nr", nr);
        s.Set("kc", kc);
        s.Set("loop", loop);
        add(s);
      }
    }
  }
  return space;
}

}  // namespace fusetune
