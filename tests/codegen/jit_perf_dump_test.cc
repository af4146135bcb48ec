// FUSETUNE_PERF_JIT=1: the JIT writes LLVM's perf jitdump (jit-PID.dump under $JITDUMPDIR/.debug/
// jit/), from which `perf inject --jit` names generated kernels in `perf report`; the kernels
// still compute the same values.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/kernel_ir.h"
#include "worker/codegen/lower_llvm.h"

namespace fusetune::codegen {
namespace {

namespace fs = std::filesystem;

TEST(JitPerfDump, NamesKernelsForPerf) {
  const fs::path dir = fs::temp_directory_path() / ("ft_perf_dump_" + std::to_string(getpid()));
  fs::create_directories(dir);
  setenv("JITDUMPDIR", dir.c_str(), 1);
  setenv("FUSETUNE_PERF_JIT", "1", 1);
  std::vector<float> in(37), out(37, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) - 5.0f;
  {
    Kernel k;
    k.name = "perf_dump";
    int x = k.AddParam("x", DType::kFloat32, 37);
    int y = k.AddParam("y", DType::kFloat32, 37);
    int i = k.NewVar("i");
    k.body = kir::For(i, 37, LoopKind::kVectorized,
                      kir::Store(y, kir::Var(i),
                                 kir::Eval(sx::Binary(ScalarOp::kMul, sx::Arg(0, DType::kFloat32),
                                                      sx::Const(3.0, DType::kFloat32)),
                                           {kir::Load(x, kir::Var(i))})),
                      16);
    Jit jit;
    auto module = jit.NewModule("perf_dump");
    LowerKernel(k, jit, *module, "perf_dump_kernel");
    jit.Optimize(*module);
    auto code = jit.Load(std::move(module));
    void* buffers[] = {in.data(), out.data()};
    reinterpret_cast<KernelFn>(code->Lookup("perf_dump_kernel"))(buffers);
  }
  unsetenv("FUSETUNE_PERF_JIT");
  unsetenv("JITDUMPDIR");
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], 3.0f * in[i]) << i;

  std::string dump;
  const std::string name = "jit-" + std::to_string(getpid()) + ".dump";
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().filename() != name) continue;
    std::ifstream file(entry.path(), std::ios::binary);
    dump.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(dump.find("perf_dump_kernel"), std::string::npos)
      << "no " << name << " naming the kernel under " << dir;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusetune::codegen
