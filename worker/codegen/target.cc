#include "worker/codegen/target.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

namespace fusetune::codegen {

bool TargetInfo::Has(const std::string& feature) const {
  return std::binary_search(features.begin(), features.end(), feature);
}

std::string TargetInfo::FeatureString() const {
  std::string out;
  for (const std::string& f : features) {
    if (!out.empty()) out += ',';
    out += '+';
    out += f;
  }
  return out;
}

std::string TargetInfo::Fingerprint() const {
  return triple + ";" + cpu_key + ";" + FeatureString();
}

CpuIdentity DecodeCpuSignature(uint32_t eax) {
  const int base_family = static_cast<int>((eax >> 8) & 0xF);
  const int base_model = static_cast<int>((eax >> 4) & 0xF);
  CpuIdentity id;
  id.family = base_family == 0xF ? base_family + static_cast<int>((eax >> 20) & 0xFF) : base_family;
  id.model = base_family == 0x6 || base_family == 0xF
                 ? base_model + (static_cast<int>((eax >> 16) & 0xF) << 4)
                 : base_model;
  return id;
}

std::string CpuKeyName(const std::string& llvm_cpu, const CpuIdentity& id) {
  if (llvm_cpu != "generic" || id.vendor.empty()) return llvm_cpu;
  return "generic-" + id.vendor + "-" + std::to_string(id.family) + "-" + std::to_string(id.model);
}

namespace {

CpuIdentity HostCpuIdentity() {
  CpuIdentity id;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return id;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return id;
  id = DecodeCpuSignature(eax);
  id.vendor = vendor;
#endif
  return id;
}

TargetInfo DetectHost() {
  TargetInfo t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  t.cpu_key = CpuKeyName(t.cpu, HostCpuIdentity());
  llvm::StringMap<bool> detected;
  if (llvm::sys::getHostCPUFeatures(detected)) {
    for (const auto& entry : detected) {
      if (entry.getValue()) t.features.push_back(entry.getKey().str());
    }
  }
  std::sort(t.features.begin(), t.features.end());
  if (t.Has("avx512f")) {
    t.vector_bits = 512;
  } else if (t.Has("avx")) {
    t.vector_bits = 256;
  }
  return t;
}

}  // namespace

const TargetInfo& HostTarget() {
  static const TargetInfo host = DetectHost();
  return host;
}

}  // namespace fusetune::codegen
