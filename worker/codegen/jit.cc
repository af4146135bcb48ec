#include "worker/codegen/jit.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::codegen {

namespace {

std::string ErrorText(llvm::Error error) { return llvm::toString(std::move(error)); }

template <typename T>
T Unwrap(llvm::Expected<T> value, const char* what) {
  if (!value) throw std::runtime_error(std::string(what) + ": " + ErrorText(value.takeError()));
  return std::move(*value);
}

void InitializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

}  // namespace

struct JitState {
  TargetInfo target;
  int codegen_level = 3;
  std::unique_ptr<llvm::TargetMachine> machine;  // for optimisation and assembly listings
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::mutex mutex;  // LLJIT calls are serialised: one worker compiles one kernel at a time
  std::atomic<int64_t> next_id{0};
};

struct JitCode::Tracker {
  llvm::orc::ResourceTrackerSP tracker;
};

JitModule::JitModule(const std::string& name)
    : context_(std::make_unique<llvm::LLVMContext>()),
      module_(std::make_unique<llvm::Module>(name, *context_)) {}

JitModule::~JitModule() {
  module_.reset();  // the module must die before its context
  context_.reset();
}

JitCode::JitCode(std::shared_ptr<JitState> state, std::unique_ptr<Tracker> tracker)
    : state_(std::move(state)), tracker_(std::move(tracker)) {}

JitCode::~JitCode() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (llvm::Error error = tracker_->tracker->remove()) llvm::consumeError(std::move(error));
}

void* JitCode::Lookup(const std::string& name) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto address = state_->lljit->lookup(tracker_->tracker->getJITDylib(), name);
  if (!address)
    throw std::runtime_error("JIT lookup of " + name + ": " + ErrorText(address.takeError()));
  return address->toPtr<void*>();
}

Jit::Jit(int codegen_level) : state_(std::make_shared<JitState>()) {
  InitializeLlvmOnce();
  state_->target = HostTarget();
  state_->codegen_level = std::clamp(codegen_level, 0, 3);
  const TargetInfo& target = state_->target;

  llvm::orc::JITTargetMachineBuilder builder{llvm::Triple(target.triple)};
  builder.setCPU(target.cpu);
  std::vector<std::string> features;
  for (const std::string& f : target.features) features.push_back("+" + f);
  builder.addFeatures(features);
  constexpr llvm::CodeGenOpt::Level kLevels[] = {llvm::CodeGenOpt::None, llvm::CodeGenOpt::Less,
                                                 llvm::CodeGenOpt::Default,
                                                 llvm::CodeGenOpt::Aggressive};
  builder.setCodeGenOptLevel(kLevels[state_->codegen_level]);
  state_->machine = Unwrap(builder.createTargetMachine(), "creating the target machine");
  state_->lljit = Unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(builder).create(),
                         "creating the JIT");

  // Generated code calls the runtime (thread pool) and libm; resolve both from this process.
  llvm::orc::JITDylib& main = state_->lljit->getMainJITDylib();
  const llvm::DataLayout& layout = state_->lljit->getDataLayout();
  main.addGenerator(Unwrap(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(layout.getGlobalPrefix()),
      "searching process symbols"));
  // The runtime is defined explicitly: executables need not export their symbols (-rdynamic).
  llvm::orc::MangleAndInterner mangle(state_->lljit->getExecutionSession(), layout);
  llvm::orc::SymbolMap runtime;
  runtime[mangle("fusetune_parallel_for")] =
      llvm::JITEvaluatedSymbol::fromPointer(&fusetune_parallel_for);
  runtime[mangle("fusetune_parallel_for_chunked")] =
      llvm::JITEvaluatedSymbol::fromPointer(&fusetune_parallel_for_chunked);
  if (llvm::Error error = main.define(llvm::orc::absoluteSymbols(std::move(runtime)))) {
    throw std::runtime_error("defining runtime symbols: " + ErrorText(std::move(error)));
  }
}

Jit::~Jit() = default;

const TargetInfo& Jit::target() const { return state_->target; }

int Jit::codegen_level() const { return state_->codegen_level; }

std::unique_ptr<JitModule> Jit::NewModule(const std::string& name) const {
  auto module = std::make_unique<JitModule>(name);
  module->module().setDataLayout(state_->machine->createDataLayout());
  module->module().setTargetTriple(state_->target.triple);
  return module;
}

void Jit::PrepareFunction(llvm::Function& function) const {
  const TargetInfo& target = state_->target;
  function.addFnAttr("target-cpu", target.cpu);
  function.addFnAttr("target-features", target.FeatureString());
  // Never lower min-legal-vector-width: it would let the backend split 512-bit vectors.
  if (target.Has("avx512f")) function.addFnAttr("prefer-vector-width", "512");
  function.addFnAttr(llvm::Attribute::NoUnwind);
}

void Jit::Verify(JitModule& module) const {
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyModule(module.module(), &os)) {
    os.flush();
    throw std::logic_error("generated LLVM IR does not verify: " + message);
  }
}

void Jit::Optimize(JitModule& module, int level) const {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = level >= 2;
  tuning.SLPVectorization = level >= 2;  // off unless asked for
  llvm::PassBuilder builder(state_->machine.get(), tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel opt = level <= 0   ? llvm::OptimizationLevel::O0
                                : level == 1 ? llvm::OptimizationLevel::O1
                                : level == 2 ? llvm::OptimizationLevel::O2
                                             : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager passes =
      level <= 0 ? builder.buildO0DefaultPipeline(opt) : builder.buildPerModuleDefaultPipeline(opt);
  passes.run(module.module(), mam);
}

std::string Jit::PrintIR(JitModule& module) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.module().print(os, nullptr);
  os.flush();
  return text;
}

std::string Jit::Assembly(JitModule& module) const {
  llvm::SmallString<4096> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager passes;
  if (state_->machine->addPassesToEmitFile(passes, os, nullptr, llvm::CGFT_AssemblyFile)) {
    throw std::runtime_error("the target cannot print assembly");
  }
  passes.run(module.module());
  return std::string(text.str());
}

std::unique_ptr<JitCode> Jit::Load(std::unique_ptr<JitModule> module) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto tracker = std::make_unique<JitCode::Tracker>();
  tracker->tracker = state_->lljit->getMainJITDylib().createResourceTracker();
  llvm::orc::ThreadSafeModule safe(std::move(module->module_), std::move(module->context_));
  if (llvm::Error error = state_->lljit->addIRModule(tracker->tracker, std::move(safe))) {
    throw std::runtime_error("adding a module to the JIT: " + ErrorText(std::move(error)));
  }
  return std::unique_ptr<JitCode>(new JitCode(state_, std::move(tracker)));
}

std::string Jit::UniqueName(const std::string& prefix) {
  return prefix + "_" + std::to_string(state_->next_id.fetch_add(1));
}

}  // namespace fusetune::codegen
