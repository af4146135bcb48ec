#include "bench/matmul/openblas.h"

#include <dlfcn.h>

#include <cstdlib>

namespace fusetune::bench {
namespace {

// CBLAS enum values (cblas.h), spelled here so the benchmark needs no CBLAS header.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

}  // namespace

OpenBlas::OpenBlas(const std::string& coretype) {
  // As bench/peers/peers.py sets up PyTorch's OpenBLAS: the named kernel set, whatever the
  // environment says, and OpenBLAS's own cache-size detection.
  if (!coretype.empty()) setenv("OPENBLAS_CORETYPE", coretype.c_str(), /*overwrite=*/1);
  unsetenv("OPENBLAS_L2_SIZE");
  handle_ = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!handle_) return;
  sgemm_ = reinterpret_cast<Sgemm>(dlsym(handle_, "cblas_sgemm"));
  set_threads_ = reinterpret_cast<void (*)(int)>(dlsym(handle_, "openblas_set_num_threads"));
  corename_ = reinterpret_cast<char* (*)()>(dlsym(handle_, "openblas_get_corename"));
  config_ = reinterpret_cast<char* (*)()>(dlsym(handle_, "openblas_get_config"));
  if (!set_threads_) sgemm_ = nullptr;
}

std::string OpenBlas::core() const { return corename_ ? corename_() : "?"; }
std::string OpenBlas::config() const { return config_ ? config_() : "?"; }

void OpenBlas::SetThreads(int threads) const {
  if (set_threads_) set_threads_(threads);
}

void OpenBlas::SgemmNT(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                       float* c) const {
  sgemm_(kRowMajor, kNoTrans, kTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
         1.0f, a, static_cast<int>(k), b, static_cast<int>(k), 0.0f, c, static_cast<int>(n));
}

void OpenBlas::SgemmNN(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                       float* c) const {
  sgemm_(kRowMajor, kNoTrans, kNoTrans, static_cast<int>(m), static_cast<int>(n),
         static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c,
         static_cast<int>(n));
}

}  // namespace fusetune::bench
