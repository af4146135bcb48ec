#pragma once
// The packed copies of a wpack kernel's weights (kernel_abi.h, "Weights packed at bind time"):
// packing is setup, done once when the kernel is bound to its inputs, not inside every call, as
// ONNX Runtime and oneDNN pack constant weights at session creation. One copy per bound B pointer,
// up to kBoundWeightSlots: one kernel serves every group with its signature and schedule (every
// layer of a deep model, and several plans through the kernel cache), each with its own copy.
// A binding past the slots reuses the oldest, whose user then packs per call again (right, only
// slower). The copies belong to one compiled kernel, i.e. to one group, schedule and
// thread count, so a kernel never reads a copy packed for another schedule or shape.
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "worker/codegen/kernel_abi.h"

namespace fusetune::codegen {

class BoundWeights {
 public:
  // `input`: B's index in the kernel's buffers; `bytes`: one packed copy.
  BoundWeights(KernelBindFn bind, int input, int64_t bytes);
  BoundWeights(const BoundWeights&) = delete;
  BoundWeights& operator=(const BoundWeights&) = delete;

  // Packs buffers[input] into its slot's copy (again, if it was bound before: its contents may
  // have changed) and makes the kernel's calls with that B read it.
  void Bind(void** buffers);
  // Forgets the copy of buffers[input], if any, and frees it.
  void Unbind(void** buffers);
  int bound() const;  // slots in use
  int64_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  struct Slot {
    const void* src = nullptr;
    std::unique_ptr<float, Free> copy;
  };
  KernelBindFn bind_;
  int input_;
  int64_t bytes_;
  Slot slots_[kBoundWeightSlots];
  int next_ = 0;  // the slot a binding evicts when all are in use
};

}  // namespace fusetune::codegen
