// The greedy baseline: TVM FuseOps' rules on fusetune's op set.
//
// Like TVM (src/relay/transforms/fuse_ops.cc), fusion follows the post-dominator tree: a node may
// fuse with everything on its paths to its immediate post-dominator when these rules allow it.
//
//   source pattern      phase  fuses into its post-dominator when
//   ------------------  -----  ------------------------------------------------------------------
//   OutEWiseFusable      0     the edge pattern to it is ElemWise and every op on the way is
//   (dense, matmul)            <= Broadcast                     (epilogue fusion)
//   CommReduce           0     same rule as OutEWiseFusable     (element-wise epilogue)
//   ElemWise/Broadcast   0,1   the dominator's pattern is <= Injective or CommReduce, the ops on
//                              the way are <= Injective, and the dominator itself is <= Broadcast,
//                              Injective, CommReduce or OutEWiseFusable
//   Injective            1,2   every op on the way, dominator included, is <= Injective
//   Opaque (softmax,     -     never fuses
//   layer_norm)
//
// An edge into a Broadcast op whose input shape equals its output shape counts as ElemWise, as in
// TVM. Groups are checked with AnalyzeGroup; one that fusetune's templates cannot lower (none is
// known) would be split into single ops rather than fail.
//
//   %a ──▶ %b ──▶ %d        post-dominator of %a is %d: with the rules above, {%a, %b, %c, %d}
//     └──▶ %c ──┘           become one group when every op on both paths passes.
#include <algorithm>
#include <functional>
#include <unordered_set>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/plan.h"

namespace fusetune {
namespace {

constexpr int kMaxFuseDepth = 256;  // TVM's default max_fuse_depth

OpPattern Combine(OpPattern a, OpPattern b) { return std::max(a, b); }

struct DomNode {
  int parent = -1;  // -1: a root (graph output, or consumers with no common post-dominator)
  int depth = 1;
  OpPattern pattern = OpPattern::kOpaque;
};

struct GroupRec {
  int parent = -1;  // union-find
  OpPattern pattern;
  bool has_anchor = false;
  int num_nodes = 1;
};

class GreedyFuser {
 public:
  GreedyFuser(const Graph& g, const std::function<bool(ValueId)>& never_fuse)
      : g_(g), n_(static_cast<int>(g.values().size())), never_fuse_(never_fuse) {
    users_.resize(n_);
    for (int v = 0; v < n_; ++v)
      for (ValueId in : g.value(v).inputs) users_[in].push_back(v);
    for (ValueId o : g.outputs()) is_output_.insert(o);
  }

  Plan Run() {
    BuildPostDominators();
    groups_.resize(n_);
    for (int v = 0; v < n_; ++v) {
      if (!IsNode(v)) continue;
      groups_[v].pattern =
          never_fuse_ && never_fuse_(v) ? OpPattern::kOpaque : g_.value(v).op->pattern;
      // A merged group takes its anchor's pattern, so nothing fuses a second anchor into it.
      groups_[v].has_anchor = groups_[v].pattern == OpPattern::kOutEWiseFusable ||
                              groups_[v].pattern == OpPattern::kCommReduce;
    }
    for (int phase = 0; phase < 3; ++phase) RunPhase(phase);
    return CollectPlan();
  }

 private:
  bool IsNode(int v) const { return g_.value(v).kind == ValueKind::kNode; }

  OpPattern EdgePattern(int from, int to) const {
    const Value& consumer = g_.value(to);
    OpPattern p = never_fuse_ && never_fuse_(to) ? OpPattern::kOpaque : consumer.op->pattern;
    if (p == OpPattern::kBroadcast && consumer.type.shape == g_.value(from).type.shape)
      p = OpPattern::kElemWise;
    return p;
  }

  int Lca(int a, int b, OpPattern* pattern) const {
    while (a != b) {
      if (a < 0 || b < 0) return -1;
      if (dom_[a].depth < dom_[b].depth) {
        *pattern = Combine(*pattern, dom_[b].pattern);
        b = dom_[b].parent;
      } else if (dom_[b].depth < dom_[a].depth) {
        *pattern = Combine(*pattern, dom_[a].pattern);
        a = dom_[a].parent;
      } else {
        *pattern = Combine(*pattern, Combine(dom_[a].pattern, dom_[b].pattern));
        a = dom_[a].parent;
        b = dom_[b].parent;
      }
    }
    return a;
  }

  // Consumers come after producers in the value list, so one reverse sweep suffices.
  void BuildPostDominators() {
    dom_.assign(n_, DomNode{});
    for (int v = n_ - 1; v >= 0; --v) {
      if (!IsNode(v) || is_output_.count(v) || users_[v].empty()) continue;
      OpPattern pattern = OpPattern::kElemWise;
      int lca = users_[v][0];
      for (int u : users_[v]) pattern = Combine(pattern, EdgePattern(v, u));
      for (size_t i = 1; i < users_[v].size() && lca >= 0; ++i)
        lca = Lca(lca, users_[v][i], &pattern);
      if (lca < 0) continue;
      dom_[v] = {lca, dom_[lca].depth + 1, pattern};
    }
  }

  int Find(int v) {
    while (groups_[v].parent >= 0) {
      if (groups_[groups_[v].parent].parent >= 0)
        groups_[v].parent = groups_[groups_[v].parent].parent;
      v = groups_[v].parent;
    }
    return v;
  }

  void Merge(int child_node, int target_root) {
    int child = Find(child_node), parent = Find(target_root);
    if (child == parent) return;
    groups_[parent].num_nodes += groups_[child].num_nodes;
    groups_[child].parent = parent;
    if (groups_[child].has_anchor) {
      groups_[parent].has_anchor = true;
      groups_[parent].pattern = Combine(groups_[child].pattern, groups_[parent].pattern);
    }
  }

  using Cond = std::function<bool(OpPattern, bool is_sink)>;

  bool CheckPathFrom(int v, int sink, const Cond& cond, std::unordered_set<int>& visited) {
    if (!visited.insert(v).second) return true;
    if (!cond(groups_[Find(v)].pattern, v == sink)) return false;
    if (v == sink) return true;
    for (int u : users_[v])
      if (!CheckPathFrom(u, sink, cond, visited)) return false;
    return true;
  }

  bool CheckPath(int src, int sink, const Cond& cond) {
    std::unordered_set<int> visited;
    for (int u : users_[src])
      if (!CheckPathFrom(u, sink, cond, visited)) return false;
    return true;
  }

  void CollectPath(int v, int sink, std::unordered_set<int>& path) {
    if (v == sink || !path.insert(v).second) return;
    for (int u : users_[v]) CollectPath(u, sink, path);
  }

  void CommitFuse(int src, int sink) {
    std::unordered_set<int> path;
    CollectPath(src, sink, path);
    int target = Find(sink);
    for (int v : path) Merge(v, target);
  }

  int CountWithPath(int src, int sink) {
    std::unordered_set<int> path, roots{Find(sink)};
    CollectPath(src, sink, path);
    for (int v : path) roots.insert(Find(v));
    int count = 0;
    for (int r : roots) count += groups_[r].num_nodes;
    return count;
  }

  void RunPhase(int phase) {
    for (int v = 0; v < n_; ++v) {
      if (!IsNode(v) || dom_[v].parent < 0) continue;
      const GroupRec& own = groups_[v];
      const int sink = dom_[v].parent;
      if (own.pattern == OpPattern::kOpaque) continue;
      if (Find(v) == Find(sink)) continue;
      if (phase == 2 && own.pattern != OpPattern::kInjective) continue;
      if (CountWithPath(v, sink) > kMaxFuseDepth) continue;

      if (own.pattern == OpPattern::kOutEWiseFusable || own.pattern == OpPattern::kCommReduce) {
        if (phase != 0 || dom_[v].pattern != OpPattern::kElemWise) continue;
        if (CheckPath(v, sink, [](OpPattern k, bool) { return k <= OpPattern::kBroadcast; }))
          CommitFuse(v, sink);
      } else if (own.pattern <= OpPattern::kBroadcast) {
        OpPattern dp = dom_[v].pattern;
        if (!(dp <= OpPattern::kInjective || dp == OpPattern::kCommReduce)) continue;
        auto cond = [](OpPattern k, bool is_sink) {
          if (!is_sink) return k <= OpPattern::kInjective;
          return k <= OpPattern::kInjective || k == OpPattern::kCommReduce ||
                 k == OpPattern::kOutEWiseFusable;
        };
        if (CheckPath(v, sink, cond)) CommitFuse(v, sink);
      } else if (own.pattern == OpPattern::kInjective) {
        if (phase == 0) continue;  // so anchors finish their epilogues first
        if (CheckPath(v, sink, [](OpPattern k, bool) { return k <= OpPattern::kInjective; }))
          CommitFuse(v, sink);
      }
    }
  }

  Plan CollectPlan() {
    std::vector<std::vector<ValueId>> members(n_);
    for (int v = 0; v < n_; ++v)
      if (IsNode(v)) members[Find(v)].push_back(v);
    Plan plan{"greedy", {}};
    for (auto& nodes : members) {
      if (nodes.empty()) continue;
      if (AnalyzeGroup(g_, nodes)) {
        plan.groups.push_back({nodes, {}});
      } else {
        for (ValueId v : nodes) plan.groups.push_back({{v}, {}});
      }
    }
    SortGroupsTopologically(g_, plan);
    return plan;
  }

  const Graph& g_;
  const int n_;
  const std::function<bool(ValueId)>& never_fuse_;
  std::vector<std::vector<int>> users_;
  std::unordered_set<int> is_output_;
  std::vector<DomNode> dom_;
  std::vector<GroupRec> groups_;
};

}  // namespace

Plan GreedyPlan(const Graph& graph, const std::function<bool(ValueId)>& never_fuse) {
  return GreedyFuser(graph, never_fuse).Run();
}

}  // namespace fusetune
