#include "server/target_names.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {

std::string TargetCpu(const std::string& fingerprint) {
  size_t a = fingerprint.find(';');
  size_t b = a == std::string::npos ? a : fingerprint.find(';', a + 1);
  return b == std::string::npos ? fingerprint : fingerprint.substr(a + 1, b - a - 1);
}

std::string FingerprintBeforeCpuIds(const std::string& fingerprint) {
  const std::string cpu = TargetCpu(fingerprint);
  if (cpu == fingerprint || cpu.rfind("generic-", 0) != 0) return "";
  const size_t a = fingerprint.find(';');
  return fingerprint.substr(0, a + 1) + "generic" + fingerprint.substr(a + 1 + cpu.size());
}

std::string ResolveTargetName(const std::string& name, const std::vector<std::string>& known) {
  if (std::find(known.begin(), known.end(), name) != known.end()) return name;
  std::vector<std::string> fits;
  for (const std::string& fingerprint : known)
    if (TargetCpu(fingerprint) == name &&
        std::find(fits.begin(), fits.end(), fingerprint) == fits.end())
      fits.push_back(fingerprint);
  if (fits.empty()) return name;
  if (fits.size() == 1) return fits[0];
  std::string listed;
  for (const std::string& f : fits) listed += "\n  " + f;
  throw UserError(fmt::format(
      "target {} names {} fingerprints (the same CPU with other features); give one whole:{}", name,
      fits.size(), listed));
}

}  // namespace fusetune
