#pragma once
// The CPU that kernels are generated for: LLVM's view of the host (triple, CPU name, features),
// and the fingerprint string recorded with every measurement.
#include <cstdint>
#include <string>
#include <vector>

namespace fusetune::codegen {

// What CPUID says the processor is (x86 only; empty vendor elsewhere).
struct CpuIdentity {
  std::string vendor;  // "AuthenticAMD", "GenuineIntel"
  int family = 0;      // as /proc/cpuinfo's "cpu family": base + extended
  int model = 0;       // as /proc/cpuinfo's "model": with the extended model where it applies
};

// Family and model from CPUID leaf 1's EAX, decoded as the vendors' manuals say: the extended
// family adds to a base family of 15, the extended model extends a base family of 6 or 15.
CpuIdentity DecodeCpuSignature(uint32_t eax);

// The CPU's name in the fingerprint: LLVM's name, except where LLVM does not know the CPU and
// says "generic". Then it is "generic-VENDOR-FAMILY-MODEL", so two CPUs LLVM 16 predates (a Zen 5
// desktop and a Zen 5 server, with the same features and other caches and FPU widths) do not share
// stored plans.
std::string CpuKeyName(const std::string& llvm_cpu, const CpuIdentity& id);

struct TargetInfo {
  std::string triple;   // e.g. x86_64-pc-linux-gnu
  std::string cpu;      // llvm::sys::getHostCPUName(); "generic" on CPUs LLVM 16 predates
  std::string cpu_key;  // CpuKeyName(cpu, CPUID): what the fingerprint names
  std::vector<std::string> features;  // enabled features, sorted, without '+'
  int vector_bits = 128;              // widest vector the kernels use (512 with avx512f)

  bool Has(const std::string& feature) const;
  // Floats per widest vector: 16 with AVX-512.
  int vector_floats() const { return vector_bits / 32; }
  // "triple;cpu_key;+f1,+f2,...": features sorted, so equal CPUs give equal strings.
  std::string Fingerprint() const;
  // "+f1,+f2,...", the form LLVM's "target-features" attribute and TargetMachine take.
  std::string FeatureString() const;
};

// The host as LLVM sees it, computed once.
const TargetInfo& HostTarget();

}  // namespace fusetune::codegen
