#pragma once
// The CPU that kernels are generated for: LLVM's view of the host (triple, CPU name, features),
// and the fingerprint string recorded with every measurement.
#include <string>
#include <vector>

namespace fusetune::codegen {

struct TargetInfo {
  std::string triple;  // e.g. x86_64-pc-linux-gnu
  std::string cpu;     // llvm::sys::getHostCPUName(); "generic" on CPUs LLVM 16 predates
  std::vector<std::string> features;  // enabled features, sorted, without '+'
  int vector_bits = 128;              // widest vector the kernels use (512 with avx512f)

  bool Has(const std::string& feature) const;
  // Floats per widest vector: 16 with AVX-512.
  int vector_floats() const { return vector_bits / 32; }
  // "triple;cpu;+f1,+f2,...": features sorted, so equal CPUs give equal strings.
  std::string Fingerprint() const;
  // "+f1,+f2,...", the form LLVM's "target-features" attribute and TargetMachine take.
  std::string FeatureString() const;
};

// The host as LLVM sees it, computed once.
const TargetInfo& HostTarget();

}  // namespace fusetune::codegen
