#include "worker/codegen/target.h"

#include <algorithm>

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

std::string TargetInfo::Fingerprint() const { return triple + ";" + cpu + ";" + FeatureString(); }

namespace {

TargetInfo DetectHost() {
  TargetInfo t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
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
