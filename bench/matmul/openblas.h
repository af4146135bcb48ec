#pragma once
// OpenBLAS's sgemm as a peer, loaded at run time (dlopen of libopenblas.so.0, the Debian
// libopenblas0-pthread build), so matmul_bench needs no link dependency on it and can choose its
// kernel set first: OpenBLAS 0.3.21 reads OPENBLAS_CORETYPE when the library loads, and on a CPU it
// does not know (AMD Zen 5) falls back to slow generic kernels unless told the best one it has
// (TOOLCHAIN.md, "Peers"). Only this process's OpenBLAS is affected.
#include <cstdint>
#include <string>

namespace fusetune::bench {

class OpenBlas {
 public:
  // Loads the library with OPENBLAS_CORETYPE = `coretype` (the environment's when empty) and
  // OPENBLAS_L2_SIZE unset. Not available() when the library is missing.
  explicit OpenBlas(const std::string& coretype = "SkylakeX");
  bool available() const { return sgemm_ != nullptr; }
  // The kernel set OpenBLAS runs ("SkylakeX", "Prescott", ...), and its build configuration.
  std::string core() const;
  std::string config() const;
  void SetThreads(int threads) const;
  // Row-major C[m, n] = A[m, k] · B[n, k]ᵀ (B as nn.dense's weight), leading dimensions packed.
  void SgemmNT(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) const;
  // Row-major C[m, n] = A[m, k] · B[k, n].
  void SgemmNN(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) const;

 private:
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
  void* handle_ = nullptr;
  Sgemm sgemm_ = nullptr;
  void (*set_threads_)(int) = nullptr;
  char* (*corename_)() = nullptr;
  char* (*config_)() = nullptr;
};

}  // namespace fusetune::bench
