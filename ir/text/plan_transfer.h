#pragma once
// Plans across sizes: a region the store has never seen takes the plan of the nearest tuned
// member of its family (family.h), with each schedule adapted to the new sizes. Pure IR: the
// caller looks the members up (best plans by family key, same target and thread count), calls
// these functions, and checks the result against the reference interpreter before trusting it.
// Lives beside the canonical text because a stored member is known only by its canonical text.
//
//   FamilyForm here = CanonicalizeFamily(graph, region.nodes);
//   for each stored plan with family key here.key:   member = ReadFamilyMember(region_text)
//   order = RankByNearness(here.binding, {member.family.binding, ...})
//   groups = TransferPlan(graph, here, members[order[0]], its stored groups, threads)
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"
#include "ir/text/family.h"

namespace fusetune {

// A tuned region known by its canonical text (the store's region_text).
struct FamilyMember {
  Graph graph;                           // rebuilt from the text (canonical_parser.h)
  FamilyForm family;                     // of all its nodes
  std::vector<int32_t> family_position;  // canonical position i -> family position
};

// Throws UserError when the text cannot be rebuilt (a non-scalar constant, malformed text): the
// caller treats that member as absent.
FamilyMember ReadFamilyMember(std::string_view canonical_text);

// How far apart two bindings of one family are: the sum over symbols of |ln(a_i / b_i)|, so
// 192 is nearer 256 (ratio 1.33) than 128 (ratio 1.5), and doubling one size costs the same
// whatever the size. Throws UserError when the bindings have different lengths.
double BindingDistance(std::span<const int64_t> a, std::span<const int64_t> b);

// Indices of `members` ordered nearest to `target` first. Ties go to the member with the larger
// sizes (the product of its binding: a schedule then has its tiles clamped to the smaller
// problem rather than stretched), then to the lexicographically smaller binding, so the order
// never depends on the order the members were listed in.
std::vector<size_t> RankByNearness(std::span<const int64_t> target,
                                   const std::vector<std::vector<int64_t>>& members);

// One group of a member's plan: positions in the member's canonical node order (as stored) and
// the schedule text it was measured with.
struct MemberGroup {
  std::vector<int32_t> nodes;
  std::string schedule;
};

// The member's plan on `graph`'s region (`here` = CanonicalizeFamily(graph, region nodes)):
// groups of `graph`'s node ids, ascending, each lowerable, with its schedule adapted to the
// region's sizes at `threads` (AdaptSchedule). The member may also be of the region's family
// without equalities when the region keeps all of the member's (EqualitiesRefine: the seed at
// S=64 takes S=128's plan); each group is then checked lowerable here like any other. Throws
// UserError when the member is of another family or its plan does not cover the region exactly
// once with lowerable groups.
std::vector<PlanGroup> TransferPlan(const Graph& graph, const FamilyForm& here,
                                    const FamilyMember& member, std::span<const MemberGroup> groups,
                                    int threads);

// For reports: the sizes that differ, "s1=256 (here 192)"; empty when the bindings are equal.
std::string TransferSizesText(std::span<const int64_t> here, std::span<const int64_t> member);

}  // namespace fusetune
