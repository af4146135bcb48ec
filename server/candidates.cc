// Candidate enumeration.
//
// Connected node sets are enumerated with Wernicke's ESU algorithm over the undirected op-node
// graph: each set is grown from its smallest node `v`, only ever adding nodes larger than `v`
// that neighbour the set and were not already offered by an earlier member, so every connected
// set up to the size bound is produced exactly once. A set with two anchors (matmul, reduction,
// composite) or a never-fuse node is never extended, since no superset could be lowered. Each
// produced set is then checked by the request's policy (RequestPolicy::OneKernel: AnalyzeGroup's
// convexity and template match, the request's limits and forbidden groups).
//
// Horizontal groups (ir/fusion.h) are sibling products that read the same A: no edge joins them,
// so the walk above never meets them. They are added afterwards: for each value read as A by two
// or more fusable matmuls whose B is not computed in a group with them, every set of 2 to 4 of
// those siblings (of the first 8), in two forms: the products alone, and each product with the
// largest epilogue group the walk found for it (bias add and the like). Mixed forms are not
// offered: they would multiply the measurements for what an epilogue choice decides anyway.
//
// Layer norms folded into a matmul (ir/fusion.h) hold two anchors, so the walk stops short of
// them too: each matmul group the walk found whose A is a layer norm read by nothing else is
// offered again with the norm.
//
// Recomputation (ir/fusion.h): a set the walk produces whose one cheap member is read outside it
// is offered a second time with that member (and the cheap ones it reads) recomputed instead of
// stored, under RecomputableMembers' rules: x - mean inside both a layer norm's variance and its
// division.
//
// Softmaxes and layer norms written op by op (ir/norm_pattern.h) hold two reductions, and an RMS
// norm's one reduction is read with its input, so the walk never grows them either: each is
// offered as its core (the ops up to its output), with the private element-wise producers of its
// input (those only it reads, nearest first), with the private element-wise consumers of its
// output (a layer norm's scale and shift), and with both, within the size bound, where the core
// counts as two ops (OpsCounted).
//
// Attention groups (ir/attention_pattern.h) hold three anchors, so the walk never grows them
// either. For each chain batch_matmul -> scale/mask -> softmax -> batch_matmul the core is offered
// with each subset of its operands' private producers (the head split's reshape and transpose,
// a scale of Q) inlined, every one within the size bound: at most 8 groups per chain.
#include "server/candidates.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include "ir/attention_pattern.h"
#include "ir/norm_pattern.h"

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
    AddNormFolds();
    if (policy_.options().horizontal) AddHorizontal();
    if (policy_.options().attention) AddAttention();
    AddNormOpByOp();
    std::sort(out_.begin(), out_.end(), [](const FusedGroup& a, const FusedGroup& b) {
      if (a.nodes.size() != b.nodes.size()) return a.nodes.size() < b.nodes.size();
      if (a.nodes != b.nodes) return a.nodes < b.nodes;
      return a.recompute < b.recompute;
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

  // A matmul group with no prologue: both operands are read from memory.
  bool ProductAndEpilogue(const FusedGroup& g) const {
    if (g.templ != GroupTemplate::kMatmul || g.Horizontal() || !g.recompute.empty()) return false;
    for (ValueId in : g_.value(g.anchor).inputs)
      if (std::binary_search(g.nodes.begin(), g.nodes.end(), in)) return false;
    return true;
  }

  void AddNormFolds() {
    const size_t max_size = static_cast<size_t>(policy_.options().max_group_size);
    std::vector<std::vector<ValueId>> sets;
    for (const FusedGroup& g : out_) {
      if (g.templ != GroupTemplate::kMatmul || g.Horizontal() || g.norm >= 0) continue;
      const ValueId a = g_.value(g.anchor).inputs[0];
      if (g_.value(a).kind != ValueKind::kNode || !fusable_[a] ||
          g_.value(a).op->name != "nn.layer_norm" || g.nodes.size() >= max_size ||
          std::binary_search(g.nodes.begin(), g.nodes.end(), a))
        continue;
      std::vector<ValueId> nodes = g.nodes;
      nodes.insert(std::lower_bound(nodes.begin(), nodes.end(), a), a);
      sets.push_back(std::move(nodes));
    }
    for (const std::vector<ValueId>& nodes : sets) Record(nodes);
  }

  void AddHorizontal() {
    constexpr size_t kMaxSiblings = 8;
    std::map<ValueId, const FusedGroup*> widest;  // per anchor
    for (const FusedGroup& g : out_) {
      if (!ProductAndEpilogue(g)) continue;
      const FusedGroup*& w = widest[g.anchor];
      if (!w || g.nodes.size() > w->nodes.size()) w = &g;
    }
    std::map<ValueId, std::vector<ValueId>> siblings;  // by A
    for (const auto& [anchor, group] : widest) {
      const Value& v = g_.value(anchor);
      if (v.op->kind == OpKind::kMatmul && fusable_[anchor])
        siblings[v.inputs[0]].push_back(anchor);
    }
    std::vector<std::vector<ValueId>> sets;
    for (auto& [a, anchors] : siblings) {
      if (anchors.size() < kMinHorizontalParts) continue;
      if (anchors.size() > kMaxSiblings) anchors.resize(kMaxSiblings);
      for (uint32_t mask = 1; mask < (1u << anchors.size()); ++mask) {
        const size_t count = static_cast<size_t>(std::popcount(mask));
        if (count < kMinHorizontalParts || count > kMaxHorizontalParts) continue;
        std::vector<ValueId> alone, wide;
        for (size_t i = 0; i < anchors.size(); ++i) {
          if (!(mask & (1u << i))) continue;
          alone.push_back(anchors[i]);
          const std::vector<ValueId>& part = widest[anchors[i]]->nodes;
          wide.insert(wide.end(), part.begin(), part.end());
        }
        std::sort(wide.begin(), wide.end());
        sets.push_back(std::move(alone));
        if (wide != sets.back()) sets.push_back(std::move(wide));
      }
    }
    for (const std::vector<ValueId>& nodes : sets) Record(nodes);
  }

  void AddAttention() {
    const size_t max_size = static_cast<size_t>(policy_.options().max_group_size);
    for (const AttentionChain& chain : FindAttentionChains(g_)) {
      bool fusable = true;
      for (ValueId v : chain.core) fusable &= fusable_[v];
      if (!fusable || OpsCounted(g_, chain.core) > max_size) continue;
      // Each operand's producers up to the first that may not join a group.
      std::vector<std::vector<ValueId>> prologues;
      for (const std::vector<ValueId>& p : chain.prologues) {
        std::vector<ValueId> usable;
        for (ValueId v : p) {
          if (!fusable_[v]) break;
          usable.push_back(v);
        }
        prologues.push_back(std::move(usable));
      }
      std::set<std::vector<ValueId>> sets;
      for (uint32_t mask = 0; mask < (1u << prologues.size()); ++mask) {
        std::vector<ValueId> nodes = chain.core;
        for (size_t i = 0; i < prologues.size(); ++i)
          if (mask & (1u << i)) nodes.insert(nodes.end(), prologues[i].begin(), prologues[i].end());
        std::sort(nodes.begin(), nodes.end());
        if (OpsCounted(g_, nodes) <= max_size) sets.insert(std::move(nodes));
      }
      for (const std::vector<ValueId>& nodes : sets) Record(nodes);
    }
  }

  void AddNormOpByOp() {
    const size_t max_size = static_cast<size_t>(policy_.options().max_group_size);
    for (const NormOpByOp& norm : FindNormOpByOp(g_)) {
      const std::vector<ValueId> core = norm.Core();
      const size_t core_ops = 2;  // what the core counts against the bound (OpsCounted)
      // x's producers while each is element-wise and read by nothing else, nearest first.
      std::vector<ValueId> before;
      for (ValueId v = norm.input;
           core_ops + before.size() < max_size && g_.value(v).kind == ValueKind::kNode;
           v = g_.value(v).inputs.at(0)) {
        std::vector<ValueId> readers = core;  // what may read v: the core and x's producers
        readers.insert(readers.end(), before.begin(), before.end());
        std::sort(readers.begin(), readers.end());
        if (!Inlinable(v) || !PrivateTo(v, readers)) break;
        before.push_back(v);
      }
      // The output's consumers while each is element-wise and the one reader of the last.
      std::vector<ValueId> after;
      for (ValueId v = norm.output; core_ops + after.size() < max_size;) {
        const std::vector<ValueId>& users = g_.Users(v);
        const std::vector<ValueId>& outputs = g_.outputs();
        if (users.size() != 1 || std::find(outputs.begin(), outputs.end(), v) != outputs.end() ||
            !Inlinable(users[0]))
          break;
        v = users[0];
        after.push_back(v);
      }
      std::set<std::vector<ValueId>> sets;
      for (size_t b = 0; b <= before.size(); ++b) {
        for (size_t a = 0; a <= after.size(); ++a) {
          if (core_ops + a + b > max_size) break;
          std::vector<ValueId> nodes = core;
          nodes.insert(nodes.end(), before.begin(), before.begin() + b);
          nodes.insert(nodes.end(), after.begin(), after.begin() + a);
          std::sort(nodes.begin(), nodes.end());
          sets.insert(std::move(nodes));
        }
      }
      for (const std::vector<ValueId>& set : sets) Record(set);
    }
  }

  // An element-wise op the search may fuse (no op a request pins).
  bool Inlinable(ValueId v) const {
    const Value& value = g_.value(v);
    return value.kind == ValueKind::kNode && fusable_[v] &&
           value.op->kind == OpKind::kElementwise && !value.inputs.empty();
  }

  // Whether every reader of `v` is in `nodes` (and `v` is no graph output).
  bool PrivateTo(ValueId v, const std::vector<ValueId>& nodes) const {
    const std::vector<ValueId>& outputs = g_.outputs();
    if (std::find(outputs.begin(), outputs.end(), v) != outputs.end()) return false;
    for (ValueId u : g_.Users(v))
      if (!std::binary_search(nodes.begin(), nodes.end(), u)) return false;
    return true;
  }

  void Record(const std::vector<ValueId>& nodes) {
    std::string why;
    if (auto group = policy_.OneKernel(nodes, refused_ ? &why : nullptr))
      out_.push_back(std::move(*group));
    else if (refused_)
      refused_->push_back({nodes, std::move(why)});
    if (nodes.size() < 2 || !policy_.options().recompute) return;
    if (std::optional<std::vector<ValueId>> recompute = RecomputableMembers(g_, nodes))
      if (auto group = policy_.OneKernel(nodes, nullptr, *recompute))
        out_.push_back(std::move(*group));
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
