#include "server/budget.h"

#include <algorithm>
#include <limits>
#include <map>

namespace fusetune {

BudgetDecision PruneToBudget(const std::vector<std::vector<BudgetCandidate>>& regions, int budget) {
  std::set<std::string> baselines, kept, dropped;
  for (const auto& region : regions)
    for (const BudgetCandidate& c : region)
      if (c.baseline) baselines.insert(c.signature);

  std::map<std::string, int> cost_of;
  for (const auto& region : regions) {
    std::vector<const BudgetCandidate*> optional;
    for (const BudgetCandidate& c : region) {
      cost_of[c.signature] = c.unmeasured;
      if (!baselines.count(c.signature)) optional.push_back(&c);
    }
    std::sort(
        optional.begin(), optional.end(), [](const BudgetCandidate* a, const BudgetCandidate* b) {
          return a->benefit != b->benefit ? a->benefit > b->benefit : a->signature < b->signature;
        });
    int allowed = budget > 0 ? budget : std::numeric_limits<int>::max();
    std::set<std::string> seen;
    for (const BudgetCandidate* c : optional) {
      if (!seen.insert(c->signature).second || kept.count(c->signature)) continue;
      if (c->unmeasured <= allowed) {
        allowed -= c->unmeasured;
        kept.insert(c->signature);
      } else {
        dropped.insert(c->signature);
      }
    }
  }

  BudgetDecision d;
  for (const std::string& sig : dropped)
    if (!kept.count(sig)) {
      d.pruned.insert(sig);
      d.pruned_total += cost_of.at(sig);
    }
  for (const auto& region : regions) {
    std::set<std::string> counted;
    int pruned = 0;
    for (const BudgetCandidate& c : region)
      if (d.pruned.count(c.signature) && counted.insert(c.signature).second) pruned += c.unmeasured;
    d.pruned_per_region.push_back(pruned);
  }
  return d;
}

}  // namespace fusetune
