#include "worker/codegen/jit.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <vector>

#include <llvm/ExecutionEngine/JITEventListener.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
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
  std::optional<llvm::orc::JITTargetMachineBuilder> builder;
  std::optional<llvm::DataLayout> layout;
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::mutex mutex;  // LLJIT calls (adding objects, lookups, removals) are serialised
  std::atomic<int64_t> next_id{0};
  // Target machines for optimisation and code generation. A TargetMachine caches per-function
  // subtargets without a lock, so each compiling thread borrows one of its own (MachineLease);
  // compiles on several threads run in parallel up to adding the object to the JIT.
  std::mutex machines_mutex;
  std::vector<std::unique_ptr<llvm::TargetMachine>> spare_machines;
};

namespace {

// A target machine of the JIT's configuration, for one thread at a time; returned on destruction.
class MachineLease {
 public:
  explicit MachineLease(JitState& state) : state_(state) {
    {
      std::lock_guard<std::mutex> lock(state_.machines_mutex);
      if (!state_.spare_machines.empty()) {
        machine_ = std::move(state_.spare_machines.back());
        state_.spare_machines.pop_back();
      }
    }
    if (!machine_)
      machine_ = Unwrap(state_.builder->createTargetMachine(), "creating the target machine");
  }
  ~MachineLease() {
    std::lock_guard<std::mutex> lock(state_.machines_mutex);
    state_.spare_machines.push_back(std::move(machine_));
  }
  MachineLease(const MachineLease&) = delete;
  MachineLease& operator=(const MachineLease&) = delete;
  llvm::TargetMachine& operator*() { return *machine_; }
  llvm::TargetMachine* operator->() { return machine_.get(); }
  llvm::TargetMachine* get() { return machine_.get(); }

 private:
  JitState& state_;
  std::unique_ptr<llvm::TargetMachine> machine_;
};

}  // namespace

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
  state_->builder = builder;
  std::unique_ptr<llvm::TargetMachine> machine =
      Unwrap(builder.createTargetMachine(), "creating the target machine");
  state_->layout = machine->createDataLayout();
  state_->spare_machines.push_back(std::move(machine));
  llvm::orc::LLJITBuilder jit_builder;
  jit_builder.setJITTargetMachineBuilder(builder);
  if (std::getenv("FUSETUNE_PERF_JIT")) {
    // Kernels named in `perf report`: LLVM's perf listener writes jit-PID.dump under
    // $JITDUMPDIR (else $HOME)/.debug/jit/ for `perf record -k 1` + `perf inject --jit`, the only
    // symbol source perf has for JIT code. The listener attaches to RuntimeDyld, so under the
    // variable objects are linked by it. Off by default: the dump writes a file per kernel.
    jit_builder.setObjectLinkingLayerCreator(
        [](llvm::orc::ExecutionSession& session,
           const llvm::Triple&) -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
          auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
              session, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
          if (llvm::JITEventListener* perf = llvm::JITEventListener::createPerfJITEventListener())
            layer->registerJITEventListener(*perf);
          return std::unique_ptr<llvm::orc::ObjectLayer>(std::move(layer));
        });
  }
  state_->lljit = Unwrap(jit_builder.create(), "creating the JIT");

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
  module->module().setDataLayout(*state_->layout);
  module->module().setTargetTriple(state_->target.triple);
  return module;
}

void PrepareFunction(llvm::Function& function, const TargetInfo& target) {
  function.addFnAttr("target-cpu", target.cpu);
  function.addFnAttr("target-features", target.FeatureString());
  // Never lower min-legal-vector-width: it would let the backend split 512-bit vectors.
  if (target.Has("avx512f")) function.addFnAttr("prefer-vector-width", "512");
  function.addFnAttr(llvm::Attribute::NoUnwind);
}

void Jit::PrepareFunction(llvm::Function& function) const {
  codegen::PrepareFunction(function, state_->target);
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
  MachineLease machine(*state_);  // first: it outlives the analyses that refer to it
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = level >= 2;
  tuning.SLPVectorization = level >= 2;  // off unless asked for
  llvm::PassBuilder builder(machine.get(), tuning);
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
  MachineLease machine(*state_);
  if (machine->addPassesToEmitFile(passes, os, nullptr, llvm::CGFT_AssemblyFile)) {
    throw std::runtime_error("the target cannot print assembly");
  }
  passes.run(module.module());
  return std::string(text.str());
}

std::unique_ptr<JitCode> Jit::Load(std::unique_ptr<JitModule> module) {
  // Instruction selection here, on this thread's own target machine and outside the JIT's lock
  // (LLJIT would do it lazily inside the first lookup, under the lock): only linking is serial.
  std::unique_ptr<llvm::MemoryBuffer> object;
  {
    MachineLease machine(*state_);
    llvm::orc::SimpleCompiler compile(*machine);
    object = Unwrap(compile(module->module()), "compiling a module");
  }
  module.reset();
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto tracker = std::make_unique<JitCode::Tracker>();
  tracker->tracker = state_->lljit->getMainJITDylib().createResourceTracker();
  if (llvm::Error error = state_->lljit->addObjectFile(tracker->tracker, std::move(object))) {
    throw std::runtime_error("adding a module to the JIT: " + ErrorText(std::move(error)));
  }
  return std::unique_ptr<JitCode>(new JitCode(state_, std::move(tracker)));
}

std::string Jit::UniqueName(const std::string& prefix) {
  return prefix + "_" + std::to_string(state_->next_id.fetch_add(1));
}

}  // namespace fusetune::codegen
