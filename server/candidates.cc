// Candidate enumeration.
//
// Connected node sets are enumerated with Wernicke's ESU algorithm over the undirected op-node
// graph: each set is grown from its smallest node `v`, only ever adding nodes larger than `v`
// that neighbour the set and were not already offered by an earlier member, so every connected
// set up to the size bound is produced exactly once. A set with two anchors (matmul, reduction,
// composite) or a never-fuse node is never extended, since no superset could be lowered. Each
// produced set is then checked by the request's policy (RequestPolicy::OneKernel: AnalyzeGroup's
// convexity and template match, the request's limits and forbidden groups).
#include "server/candidates.h"

#include <algorithm>
#include <set>

namespace fusetune {
namespace {

bool IsAnchor(const Value& v) {
  OpKind k = v.op->kind;
  return k == OpKind::kReduce || k == OpKind::kMatmul || k == OpKind::kComposite;
}

class Enumerator {
 public:
  Enumerator(const RequestPolicy& policy, std::vector<RefusedGroup>* refused)
      : g_(policy.graph()), policy_(policy), refused_(refused) {
    const int n = static_cast<int>(g_.values().size());
    neighbours_.resize(n);
    fusable_.assign(n, false);
    for (int v = 0; v < n; ++v)
      fusable_[v] = g_.value(v).kind == ValueKind::kNode && policy.MayJoinGroup(v);
    for (int v = 0; v < n; ++v) {
      if (!fusable_[v]) continue;
      for (ValueId in : g_.value(v).inputs) {
        if (!fusable_[in]) continue;
        neighbours_[v].insert(in);
        neighbours_[in].insert(v);
      }
    }
  }

  std::vector<FusedGroup> Run() {
    for (int v = 0; v < static_cast<int>(g_.values().size()); ++v) {
      if (g_.value(v).kind != ValueKind::kNode) continue;
      std::vector<ValueId> single{v};
      Record(single);
      if (!fusable_[v]) continue;
      std::set<ValueId> ext;
      for (ValueId u : neighbours_[v])
        if (u > v) ext.insert(u);
      std::vector<ValueId> set{v};
      Extend(set, ext, v, IsAnchor(g_.value(v)) ? 1 : 0);
    }
    std::sort(out_.begin(), out_.end(), [](const FusedGroup& a, const FusedGroup& b) {
      if (a.nodes.size() != b.nodes.size()) return a.nodes.size() < b.nodes.size();
      return a.nodes < b.nodes;
    });
    return std::move(out_);
  }

 private:
  void Extend(std::vector<ValueId>& set, std::set<ValueId> ext, ValueId root, int anchors) {
    if (static_cast<int>(set.size()) >= policy_.options().max_group_size) return;
    while (!ext.empty()) {
      ValueId w = *ext.begin();
      ext.erase(ext.begin());
      int w_anchors = anchors + (IsAnchor(g_.value(w)) ? 1 : 0);
      if (w_anchors > 1) continue;
      std::set<ValueId> next_ext = ext;
      for (ValueId u : neighbours_[w]) {
        if (u <= root || std::find(set.begin(), set.end(), u) != set.end()) continue;
        bool adjacent_to_set = false;
        for (ValueId s : set) adjacent_to_set |= neighbours_[s].count(u) > 0;
        if (!adjacent_to_set) next_ext.insert(u);
      }
      set.push_back(w);
      std::vector<ValueId> sorted = set;
      std::sort(sorted.begin(), sorted.end());
      Record(sorted);
      Extend(set, std::move(next_ext), root, w_anchors);
      set.pop_back();
    }
  }

  void Record(const std::vector<ValueId>& nodes) {
    std::string why;
    if (auto group = policy_.OneKernel(nodes, refused_ ? &why : nullptr))
      out_.push_back(std::move(*group));
    else if (refused_)
      refused_->push_back({nodes, std::move(why)});
  }

  const Graph& g_;
  const RequestPolicy& policy_;
  std::vector<RefusedGroup>* refused_;
  std::vector<std::set<ValueId>> neighbours_;
  std::vector<bool> fusable_;
  std::vector<FusedGroup> out_;
};

}  // namespace

std::vector<FusedGroup> EnumerateCandidateGroups(const RequestPolicy& policy,
                                                 std::vector<RefusedGroup>* refused) {
  return Enumerator(policy, refused).Run();
}

}  // namespace fusetune
