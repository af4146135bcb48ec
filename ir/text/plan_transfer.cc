#include "ir/text/plan_transfer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/schedule_space.h"
#include "ir/text/canonical_parser.h"

namespace fusetune {

FamilyMember ReadFamilyMember(std::string_view canonical_text) {
  FamilyMember m;
  m.graph = ParseCanonicalText(canonical_text);
  std::vector<ValueId> all;
  for (ValueId v = 0; v < static_cast<ValueId>(m.graph.values().size()); ++v)
    if (m.graph.value(v).kind == ValueKind::kNode) all.push_back(v);
  m.family = CanonicalizeFamily(m.graph, all);
  std::vector<int32_t> family_of(m.graph.values().size(), -1);
  for (size_t f = 0; f < m.family.nodes.size(); ++f)
    family_of[m.family.nodes[f]] = static_cast<int32_t>(f);
  for (size_t i = 0; i < all.size(); ++i)
    m.family_position.push_back(family_of[CanonicalNode(m.graph, static_cast<int>(i))]);
  return m;
}

double BindingDistance(std::span<const int64_t> a, std::span<const int64_t> b) {
  if (a.size() != b.size()) {
    throw UserError(
        fmt::format("bindings of {} and {} sizes are not of one family", a.size(), b.size()));
  }
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d += std::fabs(std::log(static_cast<double>(a[i])) - std::log(static_cast<double>(b[i])));
  return d;
}

std::vector<size_t> RankByNearness(std::span<const int64_t> target,
                                   const std::vector<std::vector<int64_t>>& members) {
  struct Key {
    double distance;
    double log_size;
    size_t index;
  };
  std::vector<Key> keys;
  for (size_t i = 0; i < members.size(); ++i) {
    double log_size = 0;
    for (int64_t s : members[i]) log_size += std::log(static_cast<double>(s));
    keys.push_back({BindingDistance(target, members[i]), log_size, i});
  }
  // Distances are sums of logs: equal ones may differ in the last bits.
  constexpr double kSame = 1e-9;
  std::sort(keys.begin(), keys.end(), [&](const Key& x, const Key& y) {
    if (std::fabs(x.distance - y.distance) > kSame) return x.distance < y.distance;
    if (std::fabs(x.log_size - y.log_size) > kSame) return x.log_size > y.log_size;
    return members[x.index] < members[y.index];
  });
  std::vector<size_t> order;
  for (const Key& k : keys) order.push_back(k.index);
  return order;
}

std::vector<PlanGroup> TransferPlan(const Graph& graph, const FamilyForm& here,
                                    const FamilyMember& member, std::span<const MemberGroup> groups,
                                    int threads) {
  // Nodes correspond by position in one family, and in a family without its equalities as long
  // as the region keeps the member's (the order never depends on sizes).
  if (here.key != member.family.key && !EqualitiesRefine(member.family, here)) {
    throw UserError(fmt::format("the member's family {} is not the region's family {}",
                                member.family.key, here.key));
  }
  const size_t n = here.nodes.size();
  // A node in several groups is recomputed by each (ir/plan.h).
  std::vector<int> covered(n, 0);
  for (const MemberGroup& mg : groups)
    for (int32_t pos : mg.nodes) {
      if (pos < 0 || pos >= static_cast<int32_t>(member.family_position.size()))
        throw UserError(fmt::format("the member's plan names node {} of {}", pos, n));
      ++covered[member.family_position[pos]];
    }
  std::vector<PlanGroup> out;
  for (const MemberGroup& mg : groups) {
    std::vector<ValueId> theirs, ours, their_recomputed, our_recomputed;
    for (int32_t pos : mg.nodes) {
      const int32_t f = member.family_position[pos];
      theirs.push_back(CanonicalNode(member.graph, pos));
      ours.push_back(here.nodes[f]);
      if (covered[f] > 1) {
        their_recomputed.push_back(theirs.back());
        our_recomputed.push_back(ours.back());
      }
    }
    std::sort(theirs.begin(), theirs.end());
    std::sort(ours.begin(), ours.end());
    std::string why;
    auto from = AnalyzeGroup(member.graph, theirs, &why, their_recomputed);
    if (!from) throw UserError("a group of the member's plan is not lowerable: " + why);
    auto to = AnalyzeGroup(graph, ours, &why, our_recomputed);
    if (!to) throw UserError("a group of the member's plan is not lowerable here: " + why);
    PlanGroup g;
    g.nodes = std::move(ours);
    g.schedule =
        AdaptSchedule(member.graph, *from, Schedule::Parse(mg.schedule), graph, *to, threads);
    out.push_back(std::move(g));
  }
  if (std::count(covered.begin(), covered.end(), 0) != 0)
    throw UserError("the member's plan does not cover every node of the region");
  return out;
}

std::string TransferSizesText(std::span<const int64_t> here, std::span<const int64_t> member) {
  std::string s;
  for (size_t i = 0; i < here.size() && i < member.size(); ++i) {
    if (here[i] == member[i]) continue;
    s += fmt::format("{}s{}={} (here {})", s.empty() ? "" : ", ", i, member[i], here[i]);
  }
  return s;
}

}  // namespace fusetune
