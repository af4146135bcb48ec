#include "ir/matmul_schedule.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

constexpr int kLanes = 16;               // floats per 512-bit vector
constexpr int64_t kL1Block = 32 << 10;   // packed B block that stays in L1 (48 KiB here)
constexpr int64_t kL2Block = 512 << 10;  // packed B block that stays in L2 (2 MiB here)
constexpr int64_t kWholeK = 1024;        // up to this K, one k block (no partial sums)
constexpr int64_t kDefaultKc = 512;      // k block when K is larger
// A longer k block the space offers when K is larger: fewer passes of partial sums through the
// output, and the A block of BERT's M = 128-256 rows (384-768 KiB) still fits a 1 MiB L2. With
// wpack and the next block streamed (pb) it ran FFN 2 (K = 3072) 1-3 points of the FMA peak
// faster than kc = 512 on Zen 5 (93-95% against 91-92%).
constexpr int64_t kLongKc = 768;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

// K split evenly into blocks of at most `most`.
int64_t EvenKc(int64_t k, int64_t most) { return CeilDiv(k, CeilDiv(k, most)); }

// The k block: whole K when small (no partial sums), else K split evenly near kDefaultKc.
int64_t DefaultKc(int64_t k) {
  if (k <= kWholeK) return k;
  return EvenKc(k, kDefaultKc);
}

// The widest tile column count (64, 32 or 16 floats) that fits the registers with `mr` rows.
int64_t DefaultNr(int64_t mr, const MatmulLayout& l) {
  for (int nr : {64, 32, 16}) {
    if (nr > RoundUp(l.n, kLanes) && nr > kLanes) continue;
    if (MatmulTileFitsRegisters(static_cast<int>(mr), nr)) return nr;
  }
  return kLanes;
}

// Whether swap=1 can pay for `l` (unswapped): the swapped tile's columns are A's rows, so below a
// vector of them every FMA would use m of its 16 lanes (FFN 1's shape, M = 8: 1.09-1.48x greedy's
// time; M = 1, a decoded token: 1.6x; M = 16: 0.79-0.83x). MatmulScheduleSpace offers no swap
// where it cannot, and AdaptMatmulSchedule does not carry one there.
bool SwapCanPay(const MatmulLayout& l) { return l.m >= kLanes; }

// Up to 24 accumulators, as many rows as fit beside a row of B and a broadcast, at most 8 (swap=1's
// transpose): 6 x 64, 8 x 32, 8 x 16, 2 x 128. Against 4 x 64 (16 accumulators, the default until
// 2026-12-07) a 6 x 64 tile loads 0.42 operands an FMA instead of 0.50; on the Intel Xeon it ran
// BERT's denses 3-8% faster alone and its layer 5% faster in sequence, and on the AMD Zen 5 it ran
// them 0.5-1% faster (BENCHMARKS.md, "A default tile of 6 x 64"). Two cases keep 16 (4 x 64):
// swap=1, whose transposed tiles were measured on that default only, and K <= 64, where the k loop
// is as short as the tile's epilogue (the seed's batch_matmul + where at S = 256 ran 2-7% slower on
// 6 x 64).
int64_t DefaultMr(int64_t nr, bool swap, int64_t k) {
  const int64_t accumulators = swap || k <= 64 ? 16 : 24;
  int64_t mr = std::clamp<int64_t>(accumulators / (nr / kLanes), 1, 8);
  while (mr > 1 && !MatmulTileFitsRegisters(static_cast<int>(mr), static_cast<int>(nr))) --mr;
  return mr;
}

// Cache blocks: packed B within `budget` bytes, and enough tasks to keep every thread busy
// with little imbalance (a multiple of the thread count, or many tasks). Splitting n is
// preferred, since splitting m makes every m block pack the same B again; swapped, m is split
// first: its B is the small activations, packed by each thread, and its m rows are the weights,
// which each thread then reads a share of instead of all.
void DefaultBlocks(const MatmulLayout& l, int threads, int64_t budget, MatmulTiling& t) {
  t.nc = std::clamp<int64_t>(budget / (t.kc * 4) / t.nr * t.nr, t.nr, RoundUp(l.n, t.nr));
  t.nc = RoundUp(CeilDiv(l.n, t.NBlocks(l)), t.nr);  // equal blocks
  t.mc = RoundUp(l.m, t.mr);
  auto balanced = [&] {
    int64_t tasks = t.Tasks(l);
    return threads <= 1 || tasks % threads == 0 || tasks >= 8 * threads;
  };
  for (int guard = 0; guard < 64 && !balanced(); ++guard) {
    if (t.swap && t.mc > t.mr) {
      int64_t mblocks = t.MBlocks(l) + 1;
      t.mc = RoundUp(CeilDiv(l.m, mblocks), t.mr);
    } else if (t.nc > t.nr) {
      int64_t nblocks = t.NBlocks(l) + 1;
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
  static const std::set<std::string> known{"mr",   "nr", "kc", "mc", "nc",    "ku",
                                           "loop", "l2", "pf", "pb", "wpack", "swap"};
  return known;
}

}  // namespace

MatmulLayout SwappedMatmulLayout(const MatmulLayout& l) {
  MatmulLayout s = l;
  s.m = l.n;
  s.n = l.m;
  return s;
}

bool MatmulSwappable(const MatmulLayout& l) {
  return l.batch == 1 && l.transpose_b && !l.transpose_a;
}

bool MatmulTileFitsRegisters(int mr, int nr) {
  int vectors = nr / kLanes;
  return mr >= 1 && nr >= kLanes && nr % kLanes == 0 && mr * vectors + vectors + 1 <= 32;
}

MatmulTiling ResolveMatmulTiling(const MatmulLayout& layout, const Schedule& s, int threads) {
  FT_CHECK(layout.m > 0 && layout.n > 0 && layout.k > 0 && layout.batch > 0,
           "matmul layout with an empty dimension");
  for (const auto& [key, value] : s.knobs) {
    if (!KnownKnobs().count(key))
      throw UserError(
          fmt::format("matmul schedule: unknown knob '{}' (known: mr, nr, kc, mc, nc, "
                      "ku, loop, l2, pf, pb, wpack, swap)",
                      key));
    if (value < 0 || (value == 0 && key != "loop" && key != "l2" && key != "pf" && key != "pb" &&
                      key != "wpack" && key != "swap"))
      throw UserError(fmt::format("matmul schedule: knob {}={} must be positive", key, value));
  }
  MatmulTiling t;
  if (s.Get("swap", 0) > 1) throw UserError("matmul schedule: swap must be 0 or 1");
  t.swap = static_cast<int>(s.Get("swap", 0));
  if (t.swap) {
    if (!MatmulSwappable(layout))
      throw UserError(
          "matmul schedule: swap=1 is for a product of one batch with A stored [m][k] and B "
          "stored [n][k] (nn.dense)");
    if (s.Get("wpack", 0))
      throw UserError("matmul schedule: swap=1 reads the weights in place; it excludes wpack=1");
    if (s.Get("kc", layout.k) < layout.k)
      throw UserError(
          fmt::format("matmul schedule: swap=1 needs one k block (kc = K = {})", layout.k));
    if (s.Get("mr", 0) > 8)
      throw UserError("matmul schedule: swap=1 transposes tiles of at most 8 rows (mr <= 8)");
  }
  const MatmulLayout l = t.swap ? SwappedMatmulLayout(layout) : layout;
  int64_t mr = s.Get("mr", 0), nr = s.Get("nr", 0);
  if (mr == 0 && nr == 0) nr = l.n <= 16 ? 16 : l.n <= 32 ? 32 : 64;
  if (mr == 0) mr = DefaultMr(nr, t.swap, l.k);  // at most 8 rows: swap=1's transpose too
  if (nr == 0) nr = DefaultNr(mr, l);
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
  t.kc = t.swap ? l.k : std::min(s.Get("kc", DefaultKc(l.k)), l.k);
  if (s.Get("pf", 0) > 64) throw UserError("matmul schedule: pf (k rows ahead) must be at most 64");
  t.pf = static_cast<int>(s.Get("pf", 0));
  if (s.Get("pb", 1) > 2) throw UserError("matmul schedule: pb must be 0, 1 or 2");
  t.pb = static_cast<int>(s.Get("pb", 1));
  if (s.Get("wpack", 0) > 1) throw UserError("matmul schedule: wpack must be 0 or 1");
  t.wpack = static_cast<int>(s.Get("wpack", 0));
  if (s.Get("l2", 0) > 1) throw UserError("matmul schedule: l2 must be 0 or 1");
  DefaultBlocks(l, threads, s.Get("l2", 0) ? kL2Block : kL1Block, t);
  if (s.Get("mc", 0) > 0) t.mc = RoundUp(std::min(s.Get("mc", 0), l.m), t.mr);
  if (s.Get("nc", 0) > 0) t.nc = RoundUp(std::min(s.Get("nc", 0), l.n), t.nr);
  // swap=1 flushes output columns in groups of 16 (the emitter's staging): m blocks start groups.
  if (t.swap) t.mc = std::min(RoundUp(t.mc, std::lcm<int64_t>(t.mr, kLanes)), RoundUp(l.m, t.mr));
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
  // Spelled only when not the default, so the schedules recorded before these knobs existed keep
  // their names.
  if (t.pf > 0) s.Set("pf", t.pf);
  if (t.pb != 1) s.Set("pb", t.pb);
  if (t.wpack) s.Set("wpack", 1);
  if (t.swap) s.Set("swap", 1);
  return s;  // "l2" only chose nc, which is spelled
}

std::optional<Schedule> WeightsPackedTwin(const Schedule& s) {
  if (s.Get("wpack", 0)) return std::nullopt;
  Schedule twin = s;
  twin.Set("wpack", 1);
  return twin;
}

Schedule AdaptMatmulSchedule(const MatmulLayout& from, const Schedule& tuned,
                             const MatmulLayout& to, int threads) {
  const MatmulTiling was = ResolveMatmulTiling(from, tuned, threads);
  // Where swap=1 cannot pay, the rules' kernel instead.
  if (was.swap && !SwapCanPay(to)) return ToSchedule(ResolveMatmulTiling(to, Schedule{}, threads));
  // The choices that do not depend on the problem's size.
  Schedule policy;
  policy.Set("mr", was.mr);
  policy.Set("nr", was.nr);
  policy.Set("ku", was.ku);
  policy.Set("loop", was.loop);
  if (was.pf > 0) policy.Set("pf", was.pf);
  if (was.pb != 1) policy.Set("pb", was.pb);
  if (was.wpack) policy.Set("wpack", 1);
  if (was.swap) policy.Set("swap", 1);  // whose k block is always all of K
  if (!was.swap && was.kc != DefaultKc(from.k)) policy.Set("kc", was.kc);
  // Which budget chose the blocks: the L1 one, the L2 one, or neither (then keep their sizes).
  // When both give these blocks, the loop order decides, as MatmulScheduleSpace pairs them (n
  // panels outer only with the L2 block), so a member of one space adapts into the other.
  Schedule l1 = policy, l2 = policy;
  l2.Set("l2", 1);
  const MatmulTiling by_l1 = ResolveMatmulTiling(from, l1, threads);
  const MatmulTiling by_l2 = ResolveMatmulTiling(from, l2, threads);
  const bool fits_l1 = was.nc == by_l1.nc, fits_l2 = was.nc == by_l2.nc;
  const MatmulTiling* by_default = fits_l1 && fits_l2 ? (was.loop == 1 ? &by_l2 : &by_l1)
                                   : fits_l1          ? &by_l1
                                   : fits_l2          ? &by_l2
                                                      : nullptr;
  if (by_default == &by_l2) policy.Set("l2", 1);
  if (!by_default) policy.Set("nc", was.nc);
  if (!by_default || was.mc != by_default->mc) policy.Set("mc", was.mc);
  return ToSchedule(ResolveMatmulTiling(to, policy, threads));
}

std::vector<Schedule> MatmulScheduleSpace(const MatmulLayout& l, int threads, bool constant_b,
                                          bool swappable) {
  std::vector<Schedule> space;
  auto add_one = [&](const Schedule& s) {
    Schedule full = ToSchedule(ResolveMatmulTiling(l, s, threads));
    if (std::find(space.begin(), space.end(), full) == space.end()) space.push_back(full);
  };
  auto add = [&](Schedule s) {
    add_one(s);
    if (!constant_b) return;
    s.Set("wpack", 1);
    add_one(s);
  };
  add(Schedule{});  // the default comes first
  const std::pair<int, int> tiles[] = {{4, 64}, {8, 32}, {6, 64}, {12, 32}, {2, 128}, {5, 64}};
  std::vector<int64_t> kcs{DefaultKc(l.k)};
  if (l.k > 256 && kcs[0] != 256) kcs.push_back(256);
  if (l.k > kWholeK && EvenKc(l.k, kLongKc) != kcs[0]) kcs.push_back(EvenKc(l.k, kLongKc));
  // (B block for L1 or L2, loop order): with an L1 block the order hardly matters.
  const std::pair<int, int> blocks[] = {{0, 0}, {1, 0}, {1, 1}};
  for (auto [mr, nr] : tiles) {
    for (int64_t kc : kcs) {
      for (auto [l2, loop] : blocks) {
        Schedule s;
        s.Set("mr", mr);
        s.Set("nr", nr);
        s.Set("kc", kc);
        s.Set("l2", l2);
        s.Set("loop", loop);
        add(s);
      }
    }
  }
  // Weights read in place (swap=1), for weights the kernel cannot pack ahead: the tiles that
  // fit the 8-row transpose, each with the L1 block and with the L2 block and n panels outer.
  if (swappable && !constant_b && MatmulSwappable(l) && SwapCanPay(l)) {
    Schedule swapped;
    swapped.Set("swap", 1);
    add_one(swapped);
    for (auto [mr, nr] : {std::pair{4, 64}, {6, 64}, {8, 32}}) {
      for (auto [l2, loop] : {std::pair{0, 0}, {1, 1}}) {
        Schedule s = swapped;
        s.Set("mr", mr);
        s.Set("nr", nr);
        s.Set("l2", l2);
        s.Set("loop", loop);
        add_one(s);
      }
    }
  }
  return space;
}

}  // namespace fusetune
