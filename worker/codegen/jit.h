#pragma once
// A small ORC LLJIT wrapper for generated kernels (after LLVM's "Building a JIT" tutorial):
// one JIT per process or worker, one fresh LLVMContext per compiled module (a shared context grows
// with every compile), each module added under its own ResourceTracker and removed when the
// returned JitCode is destroyed, so a process that compiles thousands of candidates stays flat.
// Thread-safe: several threads may compile at once (each optimises and selects instructions on a
// target machine of its own; only adding the object to the JIT and lookups take a lock).
//
//   Jit jit;                                   // host CPU, its features, CodeGenOpt::Aggressive
//   auto mod = jit.NewModule("k");             // fresh context + module set up for the target
//   ... build IR; jit.PrepareFunction(f) on each function ...
//   jit.Optimize(*mod);                        // O3 with the target machine (vectorizers on)
//   auto code = jit.Load(std::move(mod));      // compiled; code->Lookup("k") gives the address
//
// No LLVM header is included here: users of the code generator need not see LLVM.
#include <memory>
#include <mutex>
#include <string>

#include "worker/codegen/target.h"

namespace llvm {
class Function;
class LLVMContext;
class Module;
}  // namespace llvm

namespace fusetune::codegen {

// A module under construction with its own context. Destroy it (or hand it to Jit::Load) to free.
class JitModule {
 public:
  JitModule(const std::string& name);
  ~JitModule();
  llvm::LLVMContext& context() { return *context_; }
  llvm::Module& module() { return *module_; }

 private:
  friend class Jit;
  std::unique_ptr<llvm::LLVMContext> context_;
  std::unique_ptr<llvm::Module> module_;
};

struct JitState;  // the LLJIT and what it needs; shared by the Jit and every JitCode it made

// Compiled code in the JIT; removed from it (memory freed) on destruction. Keeps the JIT alive,
// because destroying an LLJIT before its resource trackers hangs.
class JitCode {
 public:
  ~JitCode();
  JitCode(const JitCode&) = delete;
  JitCode& operator=(const JitCode&) = delete;
  // Address of a function defined by the module, or throws std::runtime_error.
  void* Lookup(const std::string& name) const;

 private:
  friend class Jit;
  struct Tracker;
  JitCode(std::shared_ptr<JitState> state, std::unique_ptr<Tracker> tracker);
  std::shared_ptr<JitState> state_;
  std::unique_ptr<Tracker> tracker_;
};

// Marks a generated function for `target`: CPU, features, no unwinding, and
// "prefer-vector-width"="512" where avx512f is present (LLVM's models may otherwise split 512-bit
// vectors in halves). For templates that emit their own functions without a Jit at hand.
void PrepareFunction(llvm::Function& function, const TargetInfo& target);

class Jit {
 public:
  // Sets up LLVM's native target and an LLJIT for the host; throws std::runtime_error on failure.
  // `codegen_level` (0..3) is the backend's optimisation level (CodeGenOpt None .. Aggressive).
  explicit Jit(int codegen_level = 3);
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  const TargetInfo& target() const;
  int codegen_level() const;

  // A fresh context and module with the target's data layout and triple.
  std::unique_ptr<JitModule> NewModule(const std::string& name) const;
  // PrepareFunction(function, target()).
  void PrepareFunction(llvm::Function& function) const;
  // Throws std::logic_error with LLVM's message when the module is malformed (a code-gen bug).
  void Verify(JitModule& module) const;
  // The new pass manager's per-module pipeline at `level` (0..3) with the target machine.
  void Optimize(JitModule& module, int level = 3) const;
  // The module's textual IR / the target assembly the backend emits for it.
  std::string PrintIR(JitModule& module) const;
  std::string Assembly(JitModule& module) const;
  // Compiles the module into the JIT under a new resource tracker.
  std::unique_ptr<JitCode> Load(std::unique_ptr<JitModule> module);
  // A symbol name no other module of this JIT has used.
  std::string UniqueName(const std::string& prefix);

 private:
  std::shared_ptr<JitState> state_;
};

}  // namespace fusetune::codegen
