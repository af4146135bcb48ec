#pragma once
// Targets as users name them. A fingerprint (worker/codegen/target.h) is "triple;cpu;features",
// hundreds of bytes; tables show its CPU name ("znver4", "generic-AuthenticAMD-26-2"), and every
// --target takes that name as well as the whole fingerprint.
#include <string>
#include <vector>

namespace fusetune {

// The CPU name of a fingerprint; the fingerprint itself when it has no CPU field ("synthetic").
std::string TargetCpu(const std::string& fingerprint);

// The key fusetune gave this CPU before it told CPUs LLVM does not know apart by CPUID: the
// fingerprint with "generic" for its "generic-VENDOR-FAMILY-MODEL" CPU field; "" for any other.
std::string FingerprintBeforeCpuIds(const std::string& fingerprint);

// `name` as one of `known` (the fingerprints a store or a farm holds): one of them given whole, or
// the one whose CPU name it is. A name that fits none is returned as given (a lookup for it finds
// nothing and says so); one that fits several throws UserError listing them.
std::string ResolveTargetName(const std::string& name, const std::vector<std::string>& known);

}  // namespace fusetune
