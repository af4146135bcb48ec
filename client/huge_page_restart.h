#pragma once
// `fusetune` restarts itself with glibc's malloc on transparent huge pages when it is given a
// large ONNX model, as `fusetune-codegen` is always started (worker/codegen_binary.h
// CodegenEnvironment): importing a model copies its weights a few times over (the file, the
// protobuf, the tensors, the dense weights transposed), and the first touch of each 4 KiB page is
// a page fault that this project's VMs pay 5-15 µs for. The 12-layer BERT encoder (340 MB) took
// 3.9-4.8 s to import, 1.4-2.2 s on huge pages. glibc reads the tunable only when a process starts,
// hence the restart; it costs a few ms, so a small graph (and `query`, which must start fast)
// never pays it.
#include <cstdint>
#include <span>

namespace fusetune::cli {

// A model this large (bytes) or larger; FUSETUNE_HUGE_PAGE_MODEL_BYTES sets another bound.
inline constexpr int64_t kLargeModelBytes = int64_t{64} << 20;

// Whether to restart: `tunables` (GLIBC_TUNABLES, or null) says nothing of glibc.malloc.hugetlb
// (the user's choice, or this restart's), and some argument names a regular file ending in
// ".onnx" of at least `min_bytes`.
bool WantsHugePageMalloc(std::span<char* const> args, const char* tunables, int64_t min_bytes);

// Replaces this process with itself, the same arguments and CodegenEnvironment(), when
// WantsHugePageMalloc; returns otherwise, or when the exec fails (then it runs as it is).
void RestartWithHugePageMallocForLargeModels(int argc, char** argv);

}  // namespace fusetune::cli
