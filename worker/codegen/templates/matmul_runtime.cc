#include "worker/codegen/templates/matmul_runtime.h"

// GCC 12 reports its own _mm512_undefined_ps() (used inside the unpack/shuffle/broadcast
// intrinsics) as (maybe-)uninitialized; the warning is about the header, not this code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace {

// Any layout, any CPU: the reference the vector paths must match.
void PackGeneric(const float* b, int64_t n_stride, int64_t k_stride, int64_t n_count,
                 int64_t k_count, int64_t nr, float* out) {
  int64_t panels = (n_count + nr - 1) / nr;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = out + p * k_count * nr;
    for (int64_t k = 0; k < k_count; ++k) {
      for (int64_t j = 0; j < nr; ++j) {
        int64_t n = p * nr + j;
        panel[k * nr + j] = n < n_count ? b[n * n_stride + k * k_stride] : 0.0f;
      }
    }
  }
}

#define FT_AVX512 __attribute__((target("avx512f")))

// In-register transpose of 16 rows of 16 floats: r[i][j] -> r[j][i]. Unpacks pair rows inside
// 128-bit lanes, shuffle_ps gathers groups of four rows, shuffle_f32x4 moves the 128-bit blocks.
FT_AVX512 __attribute__((always_inline)) inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16], u[16];
  // GCC -O2 does not unroll these; left as loops the arrays live on the stack.
#pragma GCC unroll 16
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + e] holds, in 128-bit block L, rows 4g..4g+3 of column 4L + e.
#pragma GCC unroll 16
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
#pragma GCC unroll 16
  for (int e = 0; e < 4; ++e) {
    __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44);
    __m512 v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xEE);
    __m512 v2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
    __m512 v3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xEE);
    r[0 + e] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[4 + e] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    r[8 + e] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[12 + e] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

// One full 16x16 block: rows n of B (k contiguous) in, rows k of the panel out. The cross-lane
// half of the transpose is done by the loads: register v[r] of k group `a` gathers, in its
// 128-bit lane L, the four k values 4a..4a+3 of row n = 4L + r (a plain load for lane 0, masked
// 128-bit broadcasts from memory for the others, which run on the load ports and a blend), so
// only the in-lane 4x4 transposes are shuffles: 32 instead of 64 per block, 25-30% faster
// packing on Zen 5 (matmul_bench gemm; packing is ~9% of a dense with M = 128 otherwise).
FT_AVX512 __attribute__((always_inline)) inline void PackBlock16(const float* src, int64_t n_stride,
                                                                 float* dst, int64_t nr) {
#pragma GCC unroll 4
  for (int a = 0; a < 4; ++a) {
    __m512 v[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const float* p = src + r * n_stride + 4 * a;
      __m512 x = _mm512_zextps128_ps512(_mm_loadu_ps(p));
      x = _mm512_mask_broadcast_f32x4(x, 0x00F0, _mm_loadu_ps(p + 4 * n_stride));
      x = _mm512_mask_broadcast_f32x4(x, 0x0F00, _mm_loadu_ps(p + 8 * n_stride));
      v[r] = _mm512_mask_broadcast_f32x4(x, 0xF000, _mm_loadu_ps(p + 12 * n_stride));
    }
    // In each lane: the 4x4 block rows n = 4L..4L+3, columns k = 4a..4a+3, transposed.
    __m512 t0 = _mm512_unpacklo_ps(v[0], v[1]), t1 = _mm512_unpackhi_ps(v[0], v[1]);
    __m512 t2 = _mm512_unpacklo_ps(v[2], v[3]), t3 = _mm512_unpackhi_ps(v[2], v[3]);
    _mm512_store_ps(dst + (4 * a + 0) * nr, _mm512_shuffle_ps(t0, t2, 0x44));
    _mm512_store_ps(dst + (4 * a + 1) * nr, _mm512_shuffle_ps(t0, t2, 0xEE));
    _mm512_store_ps(dst + (4 * a + 2) * nr, _mm512_shuffle_ps(t1, t3, 0x44));
    _mm512_store_ps(dst + (4 * a + 3) * nr, _mm512_shuffle_ps(t1, t3, 0xEE));
  }
}

// A ragged block: `rows` rows of n (the rest zero), `cols` values of k.
FT_AVX512 void PackEdge16(const float* src, int64_t n_stride, int64_t rows, int64_t cols,
                          float* dst, int64_t nr) {
  __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);
  __m512 r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(mask, src + i * n_stride) : _mm512_setzero_ps();
  Transpose16x16(r);
  for (int64_t j = 0; j < cols; ++j) _mm512_store_ps(dst + j * nr, r[j]);
}

// B stored [n][k] (k contiguous): 16x16 blocks are loaded as rows of n, transposed, stored as
// rows of k.
FT_AVX512 void PackNkAvx512(const float* b, int64_t n_stride, int64_t n_count, int64_t k_count,
                            int64_t nr, float* out) {
  int64_t panels = (n_count + nr - 1) / nr;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = out + p * k_count * nr;
    for (int64_t g = 0; g < nr; g += 16) {
      int64_t n0 = p * nr + g;
      int64_t rows = std::clamp<int64_t>(n_count - n0, 0, 16);
      const float* src = b + n0 * n_stride;
      int64_t k0 = 0;
      if (rows == 16) {
        for (; k0 + 16 <= k_count; k0 += 16)
          PackBlock16(src + k0, n_stride, panel + k0 * nr + g, nr);
      }
      for (; k0 < k_count; k0 += 16) {
        PackEdge16(src + k0, n_stride, rows, std::min<int64_t>(16, k_count - k0),
                   panel + k0 * nr + g, nr);
      }
    }
  }
}

// B stored [k][n] (n contiguous): each panel row is a copy of nr contiguous floats.
FT_AVX512 void PackKnAvx512(const float* b, int64_t k_stride, int64_t n_count, int64_t k_count,
                            int64_t nr, float* out) {
  int64_t panels = (n_count + nr - 1) / nr;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = out + p * k_count * nr;
    for (int64_t k = 0; k < k_count; ++k) {
      const float* row = b + k * k_stride + p * nr;
      for (int64_t g = 0; g < nr; g += 16) {
        int64_t cols = std::clamp<int64_t>(n_count - p * nr - g, 0, 16);
        __m512 v = cols == 16
                       ? _mm512_loadu_ps(row + g)
                       : _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << cols) - 1), row + g);
        _mm512_store_ps(panel + k * nr + g, v);
      }
    }
  }
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

struct Scratch {
  void* data = nullptr;
  int64_t bytes = 0;
  ~Scratch() { std::free(data); }
};

}  // namespace

extern "C" void fusetune_mm_pack_b(const float* b, int64_t n_stride, int64_t k_stride,
                                   int64_t n_count, int64_t k_count, int64_t nr, float* out) {
  if (HasAvx512() && nr % 16 == 0) {
    if (k_stride == 1) return PackNkAvx512(b, n_stride, n_count, k_count, nr, out);
    if (n_stride == 1) return PackKnAvx512(b, k_stride, n_count, k_count, nr, out);
  }
  PackGeneric(b, n_stride, k_stride, n_count, k_count, nr, out);
}

extern "C" void* fusetune_mm_scratch(int64_t bytes) {
  thread_local Scratch scratch;
  if (bytes > scratch.bytes) {
    std::free(scratch.data);
    int64_t rounded = (bytes + 4095) / 4096 * 4096;
    scratch.data = std::aligned_alloc(64, static_cast<size_t>(rounded));
    // Called from generated code, which cannot unwind: out of memory ends the process.
    if (!scratch.data) std::abort();
    // Touch every page now, so the first timed call does not pay the page faults.
    std::memset(scratch.data, 0, static_cast<size_t>(rounded));
    scratch.bytes = rounded;
  }
  return scratch.data;
}
