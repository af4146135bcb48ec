#include "server/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/error.h"
#include "ir/flops.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kLanes = 16;                  // floats per 512-bit vector: the generic default width
constexpr double kHandOffUs = 2.0;          // a parallel loop's hand-off to the pool and join
constexpr double kSerialBandwidth = 0.6;    // one thread's share of the machine's bandwidth
constexpr double kL2Bytes = 1 << 20;        // a packed block beyond this streams from L3
constexpr double kCacheSpeedup = 4.0;       // L2 bandwidth over memory bandwidth
constexpr double kL1PanelBytes = 32 << 10;  // a packed B panel up to this stays in L1 (48 KiB)
constexpr double kLoadCost = 0.25;          // a tile's loads an FMA, as a share of an FMA's time

double RoundUp(double a, double b) { return std::ceil(a / b) * b; }

// The share of `threads` threads kept busy by `tasks` equal tasks.
double Balance(double tasks, int threads) {
  if (threads <= 1 || tasks <= 0) return 1.0;
  return tasks / (std::ceil(tasks / threads) * threads);
}

double MatmulEstimate(const MatmulLayout& layout, const Schedule& schedule, const GroupCost& base,
                      const RooflineTarget& target, int threads) {
  MatmulTiling t;
  try {
    t = ResolveMatmulTiling(layout, schedule, threads);
  } catch (const UserError&) {
    return kInf;
  }
  const MatmulLayout l = TiledMatmulLayout(layout, t);  // swap=1: the weights are the rows
  const double m = static_cast<double>(l.m), n = static_cast<double>(l.n);
  const double k = static_cast<double>(l.k), batch = static_cast<double>(l.batch);
  const double edge = m / RoundUp(m, t.mr) * (n / RoundUp(n, t.nr));
  // Per k step the tile issues mr x nr/16 FMAs against nr/16 loads and mr broadcasts (two of
  // each per cycle), and needs about 8 independent accumulators to cover the FMA latency. Below
  // those limits the loads still cost: on the Intel Xeon the 4 x 64 tile (0.50 loads an FMA) ran
  // BERT's FFN 1 at 77-79% of the FMA peak where 5 x 64, 6 x 64, 8 x 48 and 12 x 32 (0.42-0.58)
  // ran at 79-83% (weights packed once, M = 128 and 384), so fewer loads an FMA ranks first among
  // tiles the limits leave alike.
  const double fmas = t.mr * (t.nr / kLanes), loads = t.nr / kLanes + t.mr;
  double tile =
      std::min(1.0, fmas / loads) * std::min(1.0, fmas / 8.0) / (1.0 + kLoadCost * loads / fmas);
  // A B panel (kc x nr) past L1 is re-read from L2 by every m tile: nr * 4 bytes per k step
  // against mr * nr / 16 FMAs, i.e. 128 / mr bytes a cycle at two FMAs a cycle, where L2 feeds
  // about 32: enough from mr = 4 up (2 x 128 ran at 42-45% of the FMA peak on BERT's denses on
  // Zen 5 where 4 x 64 ran at 92-97%).
  if (4.0 * t.kc * t.nr > kL1PanelBytes) tile *= std::min(1.0, t.mr / 4.0);
  const double kblock = t.kc / (t.kc + 8.0);  // each k block loads and stores the tile again
  const double balance = Balance(static_cast<double>(t.Tasks(l)), threads);
  const double mblocks = static_cast<double>(t.MBlocks(l)),
               nblocks = static_cast<double>(t.NBlocks(l));
  const double kblocks = static_cast<double>(t.KBlocks(l));
  // Packing B inside the call (read + written once per m block, by the threads that then compute
  // on it) is time the FMAs wait for; wpack packs once at bind time instead.
  const double pack_us = t.wpack ? 0.0
                                 : 8 * batch * n * k * mblocks /
                                       (target.bandwidth_gbs * 1e3 * kCacheSpeedup) /
                                       std::max(1, threads);
  const double compute_us =
      base.flops / (target.peak_gflops * 1e3 * edge * tile * kblock * balance) + pack_us;
  // Memory: B packed (read + written; with wpack the packed copy read) once per m block, A read
  // once per n block, C written once per k block and read back for all but the first, plus
  // whatever else the group reads.
  const double abc = 4 * batch * (m * k + n * k + m * n);
  const double traffic =
      4 * batch *
      ((t.wpack ? 1 : 2) * n * k * mblocks + m * k * nblocks + m * n * (2 * kblocks - 1));
  const double memory_us =
      (traffic + std::max(0.0, base.bytes - abc)) / (target.bandwidth_gbs * 1e3);
  // The cached operand, re-read from cache: the packed B block once per m tile (loop 0) or the
  // A block once per n panel (loop 1); from L3 when the block outgrows L2.
  const double b_block = 4.0 * t.kc * t.nc, a_block = 4.0 * t.kc * t.mc;
  const double rereads = t.loop == 0 ? b_block * std::ceil(static_cast<double>(t.mc) / t.mr)
                                     : a_block * std::ceil(static_cast<double>(t.nc) / t.nr);
  const double block = t.loop == 0 ? b_block : a_block;
  const double cache_bw =
      target.bandwidth_gbs * 1e3 * (block <= kL2Bytes ? kCacheSpeedup * 4 : kCacheSpeedup);
  const double cache_us =
      rereads * static_cast<double>(t.Tasks(l)) * kblocks / cache_bw / std::max(1, threads);
  return std::max({compute_us, memory_us, cache_us}) + (threads > 1 ? kHandOffUs : 0);
}

// A shape's rows along `axis` (its last when out of range): their length and how many there are.
std::pair<double, double> RowsAlong(const Shape& s, int64_t axis) {
  double all = 1;
  for (int64_t d : s) all *= static_cast<double>(d);
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) axis = static_cast<int64_t>(s.size()) - 1;
  const double len = s.empty() ? 1 : static_cast<double>(s[axis]);
  return {len, all / std::max(1.0, len)};
}

// The row a generic kernel vectorizes along, and how many rows there are.
std::pair<double, double> RowsOf(const Graph& graph, const FusedGroup& group) {
  if (group.templ == GroupTemplate::kElementwise)
    return RowsAlong(graph.value(group.sink).type.shape, -1);
  if (group.NormWrittenOpByOp())  // its anchor is the division: the row is the norm's
    return RowsAlong(graph.value(group.row_norm.input).type.shape, group.row_norm.axis);
  const Value& anchor = graph.value(group.anchor);
  const Shape& in = graph.value(anchor.inputs.at(0)).type.shape;
  int64_t axis = -1;
  if (group.templ == GroupTemplate::kComposite && anchor.attrs.Has("axis")) {
    axis = anchor.attrs.GetInt("axis");
    if (axis < 0) axis += static_cast<int64_t>(in.size());
  }
  return RowsAlong(in, axis);
}

bool HasTranspose(const Graph& graph, const FusedGroup& group) {
  for (ValueId v : group.nodes)
    if (graph.value(v).op->name == "transpose") return true;
  return false;
}

double GenericEstimate(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                       const GroupCost& base, const RooflineTarget& target, int threads) {
  const double w = static_cast<double>(schedule.Get("vector", kLanes));
  const bool parallel = schedule.Get("parallel", 1) == 1, tiled = schedule.Get("tile", 1) == 1;
  const auto [len, rows] = RowsOf(graph, group);
  const double tail = len / RoundUp(len, w);
  // A reduction's accumulator is one dependency chain per vector: wider buys more chains.
  const bool accumulates = group.templ != GroupTemplate::kElementwise;
  const double chains = accumulates ? std::min(1.0, w / (2.0 * kLanes)) : 1.0;
  const double width = std::min(w, static_cast<double>(kLanes)) / kLanes;
  double compute_us = base.flops / (target.peak_gflops * 1e3 * width * tail * chains);
  double memory_us = base.bytes / (target.bandwidth_gbs * 1e3);
  if (schedule.Get("online", 0) == 1) {
    // A row's statistics in one pass: a layer norm reads its row twice instead of three times
    // (0.67x measured at 256 x 768), a softmax computes exp twice instead of once (1.3-1.6x).
    // Its passes after the first read the row from cache, which bytes over bandwidth does not
    // see: both terms scale, so the ranking tells one-pass from two-pass kernels.
    const bool softmax = group.NormWrittenOpByOp()
                             ? group.row_norm.kind == RowNorm::kSoftmax
                             : graph.value(group.anchor).op->name == "nn.softmax";
    const double passes = softmax ? 1.5 : 2.0 / 3.0;
    compute_us *= passes;
    memory_us *= passes;
  }
  if (!tiled && HasTranspose(graph, group)) memory_us *= 1.5;
  if (threads <= 1) return std::max(compute_us, memory_us) + (parallel ? 0.1 : 0);
  if (!parallel) return std::max(compute_us * threads, memory_us / kSerialBandwidth);
  return std::max(compute_us, memory_us) / Balance(rows, threads) + kHandOffUs;
}

}  // namespace

GroupCost EstimateGroup(const Graph& graph, const FusedGroup& group, const RooflineTarget& target) {
  GroupCost cost;
  for (ValueId v : group.nodes) cost.flops += NodeFlops(graph, v);
  for (ValueId v : group.inputs) cost.bytes += static_cast<double>(graph.value(v).type.NumBytes());
  for (ValueId v : group.outputs) cost.bytes += static_cast<double>(graph.value(v).type.NumBytes());
  // GFLOP/s and GB/s are both 1e3 per microsecond.
  cost.estimate_us =
      std::max(cost.flops / (target.peak_gflops * 1e3), cost.bytes / (target.bandwidth_gbs * 1e3));
  return cost;
}

double EstimateSchedule(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                        const RooflineTarget& target, int threads) {
  const GroupCost base = EstimateGroup(graph, group, target);
  if (group.templ == GroupTemplate::kMatmul)
    return MatmulEstimate(MatmulLayoutOf(graph, group), schedule, base, target, threads);
  return GenericEstimate(graph, group, schedule, base, target, threads);
}

}  // namespace fusetune
