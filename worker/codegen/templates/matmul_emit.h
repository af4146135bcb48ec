#pragma once
// The matmul kernel emitter: out[b, m, n] = sum_k A(b, m, k) * B(b, n, k), register-blocked,
// cache-blocked, B packed inside the call (with the wpack knob: once, when the kernel is bound to
// its weights; kernel_abi.h), parallel over (batch, m block, n block) tasks, with a
// caller-supplied epilogue applied to each row of the finished accumulator tile before it is
// stored. It knows nothing of graphs: matmul.cc maps a fused group onto it.
//
//   kernel(buffers)                          void(void**), the kernel ABI (kernel_abi.h)
//     fusetune_parallel_for(tasks, task, buffers)
//   task(buffers, begin, end)                for each task t = (b, n block, m block):
//     for each k block:                        pack B block -> thread scratch (skipped when the
//       for m tiles / n panels (loop knob):      previous task of this thread packed the same one)
//         tile_<rows>x<vectors>(...)             one of <= 4 micro-kernels: full / m tail / n tail
//   tile(a, bp, kcount, first, last, row, n0, buffers)
//     acc = first ? 0 : partial sums      rows x vectors <16 x float> accumulators in registers
//     k loop (ku steps per iteration)     broadcast A(m, k), load packed B row, FMA
//     last ? epilogue(vector by vector) : store partial sums
//   (swap=1: the tile transposed in registers first, the epilogue then run on rows of output)
#include <functional>
#include <string>
#include <vector>

#include "ir/matmul_schedule.h"
#include "ir/op.h"
#include "worker/codegen/target.h"

namespace llvm {
class Function;
class MDNode;
class Module;
class Value;
class ConstantFolder;
class IRBuilderDefaultInserter;
template <typename Folder, typename Inserter>
class IRBuilder;
}  // namespace llvm

namespace fusetune::codegen {

using MatmulBuilder = llvm::IRBuilder<llvm::ConstantFolder, llvm::IRBuilderDefaultInserter>;

// Element (b, i, k) of a computed operand as a float: i = m for A, n for B; coordinates are i64.
using OperandFn = std::function<llvm::Value*(MatmulBuilder& builder, llvm::Value* buffers,
                                             llvm::Value* b, llvm::Value* i, llvm::Value* k)>;

// Where an operand lives: buffers[buffer] + b * batch_stride + i * row_stride + k * k_stride
// floats, i = m for A and n for B. A batch stride of 0 broadcasts one matrix over the batch.
// With `compute` set (a prologue fused into the kernel) the operand is evaluated element by
// element while it is packed, once per task and k block, and never stored outside the scratch.
struct MatmulOperand {
  int buffer = -1;
  int64_t batch_stride = 0;
  int64_t row_stride = 0;
  int64_t k_stride = 0;
  OperandFn compute;
};

// The operand strides of a dense row-major layout; `batch_broadcast` when that operand has a
// batch of 1 while the product has more.
MatmulOperand OperandA(const MatmulLayout& l, int buffer, bool batch_broadcast);
MatmulOperand OperandB(const MatmulLayout& l, int buffer, bool batch_broadcast);

// One vector of a finished tile: columns n_start + lane of output row `row` (the flat index over
// every output axis but the last, i.e. b * M + m); lanes where `mask` is false lie past N and
// must not be read or written.
struct TileVector {
  llvm::Value* buffers = nullptr;  // ptr: the kernel's buffer array
  llvm::Value* row = nullptr;      // i64
  llvm::Value* n_start = nullptr;  // i64
  llvm::Value* acc = nullptr;      // <16 x float>
  llvm::Value* mask = nullptr;     // <16 x i1>
};

// Computes the group's outputs from one tile vector and stores them (every output of the group
// has the anchor's shape, so all are stored at row * N + column). The emitter emits this code
// once: a cheap epilogue (a store, a select) is inlined at every tile vector; a heavy one
// (tanh-GELU) lives in one function that loops over a tile's vectors, called once per tile, so it
// is compiled once instead of rows x vectors x variants times and its constants load once.
class TileEpilogue {
 public:
  virtual ~TileEpilogue() = default;
  virtual void EmitVector(MatmulBuilder& builder, const TileVector& v) = 0;
  // Emitted in the tile before its k loop, for each vector the epilogue will handle (`acc` and
  // `mask` unset): prefetches of the inputs the epilogue reads there, so their memory latency
  // overlaps the FMAs instead of stalling the epilogue (an unfused read of the same tensor
  // streams and is prefetched by the hardware; scattered tile rows are not).
  virtual void EmitPrefetch(MatmulBuilder&, const TileVector&) {}
  // Prefetches for writing the lines this epilogue will store `v` into (`acc` and `mask` unset).
  // swap=1 stores a group of 16 columns of every output row at once, rows N apart, where the
  // hardware's stream detection does not follow: the tiles before it take the lines ahead.
  virtual void EmitPrefetchStores(MatmulBuilder&, const TileVector&) {}
  // Small enough to inline at every call (a store, a select): no call in the tile's epilogue.
  virtual bool Cheap() const = 0;
};

// The plain epilogue: stores the product into a float32 output buffer.
class StoreEpilogue : public TileEpilogue {
 public:
  StoreEpilogue(int out_buffer, int64_t n) : out_buffer_(out_buffer), n_(n) {}
  void EmitVector(MatmulBuilder& builder, const TileVector& v) override;
  bool Cheap() const override { return true; }

 private:
  int out_buffer_;
  int64_t n_;
};

// Emits the packing of one B block, replacing the emitter's own: columns [n0, n0 + n_count) and
// k in [k0, k0 + k_count) of batch `b`, into `out` in fusetune_mm_pack_b's panel layout (panels of
// `nr` columns, columns past the block zero). Horizontal fusion sets it: its B is several
// weights side by side (templates/horizontal_matmul.cc).
using PackBFn = std::function<void(MatmulBuilder& builder, llvm::Value* buffers, llvm::Value* b,
                                   llvm::Value* n0, llvm::Value* n_count, llvm::Value* k0,
                                   llvm::Value* k_count, int64_t nr, llvm::Value* out)>;

// Emits the packing of a task's A rows, replacing the element-by-element prologue: rows [m0,
// m_end) of batch `b`, k in [k0, k0 + k_count), into `out` as [m - m0][kc] floats. A folded layer
// norm sets it (templates/matmul_norm.h: each row needs its mean and deviation first), and so does
// a prologue computing A along k (templates/matmul.cc: 16 lanes at a time).
using PackAFn = std::function<void(MatmulBuilder& builder, llvm::Value* buffers, llvm::Value* b,
                                   llvm::Value* m0, llvm::Value* m_end, llvm::Value* k0,
                                   llvm::Value* k_count, int64_t kc, llvm::Value* out)>;

struct MatmulKernelDesc {
  std::string name;  // the kernel's symbol; helper functions get it as a prefix
  MatmulLayout layout;
  MatmulTiling tiling;
  MatmulOperand a, b;
  PackBFn pack_b;  // set: packs B instead of `b` (whose buffer is then -1)
  PackAFn pack_a;  // set: packs A instead of `a` (whose buffer is then -1)
  // A float32 output of shape [batch * M, N] that holds partial sums between k blocks. -1 when
  // the group has none: the emitter then uses one k block (kc = K).
  int acc_buffer = -1;
  // swap=1 (ir/matmul_schedule.h): `layout` is the swapped product, whose rows are the group's
  // output columns and whose columns its output rows. Each finished tile is transposed in
  // registers, and the epilogue sees vectors of the output's rows as always (lanes: the tile's
  // rows). One batch, one k block, at most 8 tile rows.
  bool transposed_out = false;
};

// Emits the kernel `void name(void** buffers)` and its helpers into `module`, marked for `target`.
llvm::Function* EmitMatmulFunction(llvm::Module& module, const MatmulKernelDesc& desc,
                                   TileEpilogue& epilogue, const TargetInfo& target);

// Load/store helpers shared with epilogues: a float pointer to buffers[index] + offset floats.
llvm::Value* BufferElementPtr(MatmulBuilder& builder, llvm::Value* buffers, int index,
                              llvm::Value* offset);

// for (i = start; i < end; i += step) body(i), at the builder's position (i64 counter); a
// `loop_md` marks the back edge (e.g. llvm.loop.unroll.disable).
void EmitCountedLoop(MatmulBuilder& b, llvm::Value* start, llvm::Value* end, int64_t step,
                     const std::string& name,
                     const std::function<void(MatmulBuilder&, llvm::Value*)>& body,
                     llvm::MDNode* loop_md = nullptr);

}  // namespace fusetune::codegen
