#include "worker/codegen/bound_weights.h"

#include <new>

namespace fusetune::codegen {

BoundWeights::BoundWeights(KernelBindFn bind, int input, int64_t bytes)
    : bind_(bind), input_(input), bytes_(bytes) {}

void BoundWeights::Bind(void** buffers) {
  const void* src = buffers[input_];
  int slot = -1;
  for (int s = 0; s < kBoundWeightSlots && slot < 0; ++s)
    if (slots_[s].src == src) slot = s;
  for (int s = 0; s < kBoundWeightSlots && slot < 0; ++s)
    if (!slots_[s].src) slot = s;
  if (slot < 0) {
    slot = next_;
    next_ = (next_ + 1) % kBoundWeightSlots;
  }
  Slot& chosen = slots_[slot];
  if (!chosen.copy) {
    const size_t rounded = static_cast<size_t>((bytes_ + 63) / 64 * 64);
    chosen.copy.reset(static_cast<float*>(std::aligned_alloc(64, rounded == 0 ? 64 : rounded)));
    if (!chosen.copy) throw std::bad_alloc();
  }
  chosen.src = src;
  bind_(buffers, chosen.copy.get(), slot);
}

void BoundWeights::Unbind(void** buffers) {
  for (int s = 0; s < kBoundWeightSlots; ++s) {
    if (slots_[s].src != buffers[input_]) continue;
    bind_(buffers, nullptr, s);
    slots_[s].src = nullptr;
    slots_[s].copy.reset();
  }
}

int BoundWeights::bound() const {
  int n = 0;
  for (const Slot& s : slots_) n += s.src != nullptr;
  return n;
}

}  // namespace fusetune::codegen
