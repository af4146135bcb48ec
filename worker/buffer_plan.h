#pragma once
// Which values that cross a kernel boundary share memory. Given a buffer of its own, every such
// value of a deep model is written to memory last touched a whole run earlier (a 12-layer GPT-2
// stack at S = 128 stores ~130 MB of them), so the kernel writing it first fetches each line from
// DRAM. A buffer is reused once its value's last reader has run, as TVM's storage planner and
// ONNX Runtime's arena do, so that the next write finds it in the caches.
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

// One kernel of a plan, in the order they run: the values it reads and the values it writes.
struct BufferStep {
  std::vector<ValueId> reads;
  std::vector<ValueId> writes;
};

struct BufferPlan {
  std::vector<int64_t> block_bytes;           // the shared blocks' sizes
  std::unordered_map<ValueId, int> block_of;  // a written value -> its block
};

// Every written value not in `own` (graph outputs, which must survive the run) gets a block. A
// block is free again after the step that last reads its value (or that writes it, when nothing
// reads it), so a step's outputs never share memory with its inputs. Of the free blocks the
// smallest that holds the value is taken, the most recently freed among equals (warmest); when
// none is large enough, the largest free one grows; when none is free, a new one is added.
BufferPlan PlanBuffers(const std::vector<BufferStep>& steps,
                       const std::function<int64_t(ValueId)>& bytes,
                       const std::unordered_set<ValueId>& own);

}  // namespace fusetune
