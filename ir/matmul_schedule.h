#pragma once
// Schedules of the matmul template (dense, batch_matmul, matmul): which register tile, which
// cache blocks, how the work is split over threads. Pure IR, so the search can enumerate and
// record them without linking LLVM; worker/codegen/templates/matmul.cc reads them.
//
// Knobs (Schedule keys), all optional; a missing knob takes the default for the problem:
//   mr, nr  register tile: mr rows x nr columns of <16 x float> accumulators (nr % 16 == 0)
//   kc      k block: B is packed kc x nc at a time; partial sums go through the output when kc < K
//   mc, nc  cache blocks in m and n; one parallel task = (batch, m block, n block)
//   ku      k steps emitted per iteration of the micro-kernel loop
//   loop    0: m tiles outer, n panels inner (A tile stays in L1); 1: n panels outer (B panel in
//   L1)
//   pf      software prefetch of the packed B panel, pf k rows ahead of the one being used (one
//           prefetcht0 per 64-byte line); 0: none (spelled only when set)
//   pb      1: the tiles of a task stream the B block their thread uses next from memory into
//           L2, one line per k-loop iteration, so packing it reads L2 (B stored [n][k], ku > 1;
//           with k blocks the next k block's rows, kc floats each, K apart) or, bound with wpack,
//           the tiles find it there (any k blocks: the next k block of the task, else the next
//           task's first; ku > 1). Otherwise no effect. Default 1 (+4-7% on BERT's QKV and FFN 1
//           at M = 128 on Zen 5; on FFN 2, K = 3072 in six k blocks, +6-8 points of the FMA peak
//           with wpack, +3-5 packed in the call). 2: two lines an iteration, so a tile's
//           stream reaches twice as far, into the block after next: with the weights from DRAM
//           (a whole model's) +2-7% on BERT's denses, with them in the last-level cache 1-3%
//           slower on three of the four (BENCHMARKS.md, "Weights streamed further ahead");
//           spelled only when not 1
//   wpack   1: B (the weights) is read from a copy packed in the kernel's panel layout once, when
//           the kernel is bound to its inputs (CompiledKernel::Bind), not packed inside every
//           call, as ONNX Runtime and oneDNN pack constant weights at session creation. Offered
//           only where B is a graph constant (MatmulWeightsConstant, ir/schedule_space.h); where
//           another kernel computes B the kernel packs per call (a plan served to another graph),
//           and a prologue on B is refused. Spelled only as wpack=1
//   swap    1: the product computed transposed, B·Aᵀ, for a dense whose weights are not bound
//           (one batch, B stored [n][k], both operands read in place): the weights are then
//           the broadcast operand, read where they lie, and the activations are packed instead
//           of the weights, the smaller copy when M < N; each finished tile is transposed in
//           registers before the epilogue, which sees the usual rows of output. Every other knob
//           then describes the swapped problem (mr rows of N, nr columns of M); one k block
//           (kc = K: partial sums would need the output in the other layout), mr <= 8. On Zen 5
//           BERT's denses with a bias ran 5-9% faster on it at M = 64 and up to 5% at M = 128,
//           at 2 threads 5-21% (BENCHMARKS.md, "Weights read in place"). Spelled only as swap=1
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/op.h"
#include "ir/plan.h"

namespace fusetune {

// A schedule with every knob resolved against one problem: what the emitter uses.
struct MatmulTiling {
  int mr = 8;
  int nr = 32;
  int ku = 4;
  int loop = 0;
  int pf = 0;
  int pb = 1;
  int wpack = 0;
  int swap = 0;  // the tiling describes SwappedMatmulLayout(layout)
  int64_t kc = 0;
  int64_t mc = 0;
  int64_t nc = 0;

  int64_t MBlocks(const MatmulLayout& l) const { return (l.m + mc - 1) / mc; }
  int64_t NBlocks(const MatmulLayout& l) const { return (l.n + nc - 1) / nc; }
  int64_t KBlocks(const MatmulLayout& l) const { return (l.k + kc - 1) / kc; }
  int64_t Tasks(const MatmulLayout& l) const { return l.batch * MBlocks(l) * NBlocks(l); }
};

// The problem swap=1 computes: Bᵀ's rows as M, A's rows as N (both [rows][k]).
MatmulLayout SwappedMatmulLayout(const MatmulLayout& layout);
// Whether swap=1 applies to the problem: one batch, A stored [m][k], B stored [n][k].
bool MatmulSwappable(const MatmulLayout& layout);
// The problem a resolved tiling describes: `layout`, or its swap when the tiling has swap=1.
inline MatmulLayout TiledMatmulLayout(const MatmulLayout& layout, const MatmulTiling& t) {
  return t.swap ? SwappedMatmulLayout(layout) : layout;
}

// The register budget of a tile: accumulators + B vectors + one broadcast must fit 32 zmm.
bool MatmulTileFitsRegisters(int mr, int nr);

// Fills defaults and checks the given knobs (throws UserError naming a bad knob: unknown key,
// nr not a multiple of 16, a tile that does not fit the registers, non-positive sizes). Sizes
// larger than the problem are clamped; mc and nc are rounded up to multiples of mr and nr.
MatmulTiling ResolveMatmulTiling(const MatmulLayout& layout, const Schedule& schedule, int threads);

// A schedule tuned for `from` adapted to `to`, the same group at other sizes (ir/schedule_space.h):
// the register tile, unroll and loop order are kept (clamped to the new problem); a k block, m
// block or n block that was the default for `from` (whole K, balanced blocks, the L1 or L2 budget)
// becomes the default for `to`, and one that was chosen otherwise keeps its size, clamped. Every
// knob is spelled, as in MatmulScheduleSpace. A swap=1 schedule adapted to fewer than 16 rows of A,
// where the space offers no swap, becomes the default. Throws UserError when `tuned` is not a
// valid schedule for `from`.
Schedule AdaptMatmulSchedule(const MatmulLayout& from, const Schedule& tuned,
                             const MatmulLayout& to, int threads);

// `s` with the weights packed once (wpack=1) and no other knob changed: the same arithmetic in the
// same order, with B's packing moved from every call to bind time. It is in the space of a group
// whose B is constant when `s` is; none for a schedule already on wpack.
std::optional<Schedule> WeightsPackedTwin(const Schedule& s);

// The bounded schedule space of one problem at a thread count; the first entry is the default.
// Every entry spells all its knobs, so a recorded measurement names exactly what ran. With
// `constant_b` (B is a graph constant) each entry also comes with wpack=1, right after it; the
// default stays the one that packs inside the call (what a rules-only compiler runs). With
// `swappable` (both operands read in place, MatmulSwappable) and B not constant, the space also
// holds swap=1 schedules, after the others, where A has at least 16 rows.
std::vector<Schedule> MatmulScheduleSpace(const MatmulLayout& layout, int threads,
                                          bool constant_b = false, bool swappable = false);

}  // namespace fusetune
