// A process that compiles and drops many kernels must not grow: each module has its own
// LLVMContext and is removed from the JIT with its ResourceTracker.
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/fusion.h"
#include "worker/codegen/compile.h"

namespace fusetune::testing {
namespace {

double RssMiB() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

TEST(JitMemory, FlatOverCompileRemoveCycles) {
  Graph graph = ParseGraph(
      "fn (%x: Tensor[(8, 33), float32], %m: Tensor[(8, 1), float32]) { %0 = subtract(%x, %m); %1 "
      "= exp(%0); sum(%1, axis=[1]) }");
  std::vector<ValueId> nodes;
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v)
    if (graph.value(v).kind == ValueKind::kNode) nodes.push_back(v);
  FusedGroup group = *AnalyzeGroup(graph, nodes);
  codegen::Jit jit;
  for (int i = 0; i < 20; ++i)
    codegen::CompileGroup(graph, group, Schedule{}, jit);  // allocator warm-up
  const double before = RssMiB();
  for (int i = 0; i < 150; ++i) codegen::CompileGroup(graph, group, Schedule{}, jit);
  const double growth = RssMiB() - before;
  // ~1 KB per cycle would be a leak of LLVM metadata or JIT memory; allow allocator noise.
  EXPECT_LT(growth, 3.0) << "RSS grew by " << growth << " MiB over 150 compile/remove cycles";
}

}  // namespace
}  // namespace fusetune::testing
