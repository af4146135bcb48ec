#pragma once
// The core's FMA peak as this code generator reaches it: a JIT kernel of `chains` independent
// fused multiply-add chains on the widest vector the target uses (TargetInfo::vector_floats,
// 16 floats with AVX-512), emitted and compiled exactly as the kernels it is compared with (same
// Jit, target attributes and pipeline). Enough chains hide the FMA latency on every FMA pipe
// (latency 4 x 2 pipes needs 8 on Zen 4/5 and recent Intel cores); the benchmarks try several.
//
//   float peak(int64_t iters)   every chain does acc = acc * s + c, `iters` times; returns the
//                               sum of every lane of every chain (so nothing is dead code)
//
// 2 * chains * lanes * iters floating-point operations per call.
#include <cstdint>
#include <memory>

#include "worker/codegen/jit.h"

namespace fusetune::codegen {

class FmaPeakKernel {
 public:
  using Fn = float (*)(int64_t iters);
  FmaPeakKernel(std::unique_ptr<JitCode> code, Fn fn, int chains, int lanes)
      : code_(std::move(code)), fn_(fn), chains_(chains), lanes_(lanes) {}
  float Run(int64_t iters) const { return fn_(iters); }
  Fn fn() const { return fn_; }
  int chains() const { return chains_; }
  int lanes() const { return lanes_; }
  double FlopsPerIter() const { return 2.0 * chains_ * lanes_; }

 private:
  std::unique_ptr<JitCode> code_;
  Fn fn_;
  int chains_;
  int lanes_;
};

// The chain constants, so a test can recompute the result: chain i starts at (i + 1) * kStart.
inline constexpr float kFmaPeakStart = 0.001f;
inline constexpr float kFmaPeakScale = 0.9999f;
inline constexpr float kFmaPeakAdd = 0.0001f;

// `chains` in [1, 32]. `assembly`, when given, receives the kernel's target assembly.
std::unique_ptr<FmaPeakKernel> CompileFmaPeak(Jit& jit, int chains,
                                              std::string* assembly = nullptr);

// About a millisecond of FMAs per thread and call (16 chains: 8 cycles per iteration).
inline constexpr int64_t kFmaPeakIters = 400000;

// The kernel on `threads` threads of the runtime's pool (runtime::SetNumThreads first), one call
// of `iters` iterations each: the pool the plans' kernels run on, so a busy core lowers both.
struct FmaPeakRun {
  const FmaPeakKernel* kernel;
  int threads = 1;
  int64_t iters = kFmaPeakIters;
  volatile float sink = 0;

  void Call();
  double Flops() const { return threads * static_cast<double>(iters) * kernel->FlopsPerIter(); }
};

// GFLOP/s of the fastest of `calls` calls on `threads` threads: interference on a shared machine
// only slows a call down, so the fastest is the closest to what the core can do.
double FmaPeakGflops(const FmaPeakKernel& kernel, int threads, int calls = 9);

}  // namespace fusetune::codegen
