#pragma once
// What one request allows, answered in one place. Candidate enumeration (server/candidates.cc),
// the greedy baseline (server/greedy_baseline.cc), reuse and storing of best plans
// (server/stored_plans.cc) and the checks of the command line and of the gRPC service all ask this
// type, so the controls mean the same everywhere. (Before it, three copies disagreed, and a cached
// plan answered a request that forbade its groups.)
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "server/search_options.h"

namespace fusetune {

class RequestPolicy {
 public:
  // Names in `options` that name no node of `graph` match nothing here; the front-ends refuse
  // them before a request gets this far (ControlNodeName below).
  RequestPolicy(const Graph& graph, SearchOptions options);

  const Graph& graph() const { return *graph_; }
  const SearchOptions& options() const { return options_; }

  // Whether node `v` may share a kernel with another node (the never-fuse controls pin it alone).
  bool MayJoinGroup(ValueId v, std::string* why_not = nullptr) const;

  // May `nodes` be one kernel for this request? The analysed group when it may; else nullopt and,
  // with `why_not`, the reason (as ir/fusion.h's AnalyzeGroup answers). A single node may whenever
  // the code generator can lower it (the unfused plan is always allowed); a larger group must also
  // fit the request's size and argument limits, hold no pinned node and not be forbidden.
  // `recompute`: the members it recomputes (ir/fusion.h).
  std::optional<FusedGroup> OneKernel(std::span<const ValueId> nodes,
                                      std::string* why_not = nullptr,
                                      std::span<const ValueId> recompute = {}) const;

  // As OneKernel, for a group that TVM's rules form (RuleGroup): the greedy baseline's kernels.
  // The size and argument limits bound the groups the search enumerates, not the rules: TVM fuses
  // GPT-2's MLP (dense, bias, the 8 ops of tanh-GELU, multiply) into one 11-op kernel, and the
  // baseline a tuned plan must beat is that kernel, not 11 single ops. Only a request that narrows
  // a limit below the default also cuts the rules' groups (it asked for no larger kernels).
  std::optional<FusedGroup> BaselineKernel(std::span<const ValueId> nodes,
                                           std::string* why_not = nullptr) const;

  // Whether `nodes` (any order) is exactly one group of ir/plan.h's GreedyPlan over the whole
  // graph, with the request's pinned nodes opaque. Computed on first use (a 600-op graph takes
  // ~17 ms): only groups past the limits ask, so lookups of plans within them never pay it.
  bool RuleGroup(std::span<const ValueId> nodes) const;

  // Whether a plan (groups in this graph's ids, e.g. a stored one) honours this request: every
  // group may be one kernel (OneKernel, or BaselineKernel for a group of TVM's rules, which the
  // validation keeps when the search does not beat it). `why_not` names the first group that
  // may not, and why.
  bool Honours(std::span<const PlanGroup> groups, std::string* why_not = nullptr) const;

  // Whether a stored best plan may answer this request. Stored plans are the best of the default
  // space (see MayStoreBestPlan). For a request with a narrower space, one that honours it is the
  // best of that space too: the best plan of a space is the best of every narrower space that
  // still holds it. For a request whose limits are above the defaults the space is wider, and the
  // stored plan need not be its best: that request searches (reusing every stored measurement).
  bool MayReuse(std::span<const PlanGroup> stored, std::string* why_not = nullptr) const;

  // Whether the plan this request's search finds may be stored as its regions' best plan. The
  // store keeps one best plan per (region signature, target, threads, search version), and every
  // later request is answered from it, so only a search over the default space may write it.
  // Never-fuse ops and nodes, forbidden groups, no horizontal or attention groups, and a
  // max-group or max-args other than the default change which plans are allowed: smaller limits
  // narrow the space, larger ones widen it to plans a default request would refuse.
  //
  // The other controls do not change which plans are allowed, and their plans are stored.
  // Threads is part of the key. Max-region changes where large regions are cut; a region cut
  // elsewhere has another signature, so another key. Schedules and budget change how much of the
  // space is measured, not the space: a budget leaves the groups it prunes unmeasured, so the
  // partition search cannot pick them, and the stored plan is the best of what was measured, not
  // necessarily the best of the space. It is still validated against greedy and unfused in the
  // same run, so it is never slower than those; a later request without a budget is answered
  // with it from the cache, until a retune (--no-cache) searches the region again.
  bool MayStoreBestPlan() const { return !narrower_ && !wider_; }

 private:
  const Graph* graph_;
  SearchOptions options_;
  std::vector<bool> pinned_;                  // per value: a never-fuse op or node
  std::set<std::vector<ValueId>> forbidden_;  // ascending ids
  // GreedyPlan's groups (ascending ids), filled by the first RuleGroup call. Not thread-safe: a
  // policy serves one request on one thread.
  mutable std::optional<std::set<std::vector<ValueId>>> rule_groups_;
  std::optional<FusedGroup> Check(std::span<const ValueId> nodes, bool limits, std::string* why_not,
                                  std::span<const ValueId> recompute = {}) const;
  bool narrower_ = false, wider_ = false;  // than the default request's space
};

// The names a request gives, for the front-ends that check them (client/search_flags.cc and
// server/service/request_checks.cc); each puts its own field name before the message.
// A node name as given ("%3" or "3") -> the name the policy matches ("3"), when it names an op
// node of `graph`.
std::optional<std::string> ControlNodeName(const Graph& graph, const std::string& given);
// Empty when `op` is an operator fusetune knows; else what is wrong.
std::string ControlOpProblem(const std::string& op);
// A forbidden group of one node would forbid nothing: a node always may be a kernel of its own.
inline constexpr size_t kMinForbiddenGroupNodes = 2;
inline constexpr const char* kForbiddenGroupTooSmall = "a forbidden group names at least two nodes";

}  // namespace fusetune
