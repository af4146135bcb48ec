#include "worker/codegen/fma_peak.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "ir/error.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::codegen {

namespace {

// The kernel's module, optimised; `lanes` floats per vector.
std::unique_ptr<JitModule> EmitFmaPeak(Jit& jit, const std::string& name, int chains, int lanes) {
  auto module = jit.NewModule(name);
  llvm::LLVMContext& ctx = module->context();
  llvm::Type* f32 = llvm::Type::getFloatTy(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto* vec = llvm::FixedVectorType::get(f32, lanes);
  auto* fn_type = llvm::FunctionType::get(f32, {i64}, false);
  llvm::Function* f =
      llvm::Function::Create(fn_type, llvm::Function::ExternalLinkage, name, module->module());
  jit.PrepareFunction(*f);
  llvm::Function* fma =
      llvm::Intrinsic::getDeclaration(&module->module(), llvm::Intrinsic::fma, {vec});

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, "head", f);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "body", f);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", f);
  llvm::IRBuilder<> b(entry);
  auto splat = [&](float v) { return llvm::ConstantFP::get(vec, v); };
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* it = b.CreatePHI(i64, 2, "it");
  it->addIncoming(b.getInt64(0), entry);
  std::vector<llvm::PHINode*> acc(chains);
  for (int c = 0; c < chains; ++c) {
    acc[c] = b.CreatePHI(vec, 2);
    acc[c]->addIncoming(splat(kFmaPeakStart * static_cast<float>(c + 1)), entry);
  }
  b.CreateCondBr(b.CreateICmpSLT(it, f->getArg(0)), body, exit);
  b.SetInsertPoint(body);
  for (int c = 0; c < chains; ++c) {
    acc[c]->addIncoming(b.CreateCall(fma, {acc[c], splat(kFmaPeakScale), splat(kFmaPeakAdd)}),
                        body);
  }
  it->addIncoming(b.CreateAdd(it, b.getInt64(1)), body);
  b.CreateBr(head);
  b.SetInsertPoint(exit);
  // Every lane of every chain reaches the result, in a fixed order (no reassociation).
  llvm::Value* sum = llvm::ConstantFP::get(f32, 0.0);
  for (int c = 0; c < chains; ++c) sum = b.CreateFAddReduce(sum, acc[c]);
  b.CreateRet(sum);

  jit.Verify(*module);
  jit.Optimize(*module);
  return module;
}

}  // namespace

std::unique_ptr<FmaPeakKernel> CompileFmaPeak(Jit& jit, int chains, std::string* assembly) {
  FT_CHECK(chains >= 1 && chains <= 32, "FMA peak: chains must be in [1, 32]");
  const int lanes = std::max(1, jit.target().vector_floats());
  const std::string name = jit.UniqueName("fma_peak");
  // Printing assembly runs the backend's IR passes on the module: print from a second copy.
  if (assembly) *assembly = jit.Assembly(*EmitFmaPeak(jit, name, chains, lanes));
  auto module = EmitFmaPeak(jit, name, chains, lanes);
  auto code = jit.Load(std::move(module));
  auto fn = reinterpret_cast<FmaPeakKernel::Fn>(code->Lookup(name));
  return std::make_unique<FmaPeakKernel>(std::move(code), fn, chains, lanes);
}

void FmaPeakRun::Call() {
  if (threads == 1) {
    sink = kernel->Run(iters);
    return;
  }
  fusetune_parallel_for(
      threads,
      [](void* ctx, int64_t begin, int64_t end) {
        auto* self = static_cast<FmaPeakRun*>(ctx);
        for (int64_t i = begin; i < end; ++i) self->sink = self->kernel->Run(self->iters);
      },
      this);
}

double FmaPeakGflops(const FmaPeakKernel& kernel, int threads, int calls) {
  runtime::SetNumThreads(threads);
  FmaPeakRun run{&kernel, threads};
  run.Call();  // the pool's threads awake, the code in the caches
  double fastest_s = 0;
  for (int c = 0; c < calls; ++c) {
    const auto start = std::chrono::steady_clock::now();
    run.Call();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (c == 0 || s < fastest_s) fastest_s = s;
  }
  return run.Flops() / fastest_s / 1e9;
}

}  // namespace fusetune::codegen
