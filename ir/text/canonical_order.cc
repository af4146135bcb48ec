// The canonical order (see canonical_order.h and docs/signatures.md).
//
//   1. Scope: the node set (all nodes, or the given ones). Values read from outside it are
//      inputs; scalar constants are written inline as literals wherever they are read.
//   2. Roots: the graph's outputs in order (whole graph), or the set's output nodes sorted by a
//      structural key (subgraph); then nodes no output reaches (dead code), sorted the same way.
//   3. Walk: depth-first from each root, inputs in argument order; a node is numbered when all
//      its inputs are (post-order), an outside value when the walk first reads it.
//
// Given the roots' order, the walk depends on nothing but structure. The structural key that
// orders unordered roots is a hash refined once in each direction: a Merkle hash from the inputs
// (op, attributes, type, and the inputs' keys), then a hash of how each value is used (the users'
// keys and argument positions), fed back into the inputs' keys and the Merkle hash again. Roots
// that still tie are structurally alike almost always; the rare remaining tie is broken by node
// id, which can only make two equal subgraphs sign differently (a missed cache hit), never make
// two different ones sign the same: the canonical text spells out the whole structure.
#include "ir/text/canonical_order.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ir/error.h"

namespace fusetune::canonical {
namespace {

// Refinement stops earlier when no class splits; the cap bounds hostile inputs.
constexpr int kMaxRefinementRounds = 64;
// Tied roots singled out one by one before the rest fall back to id order.
constexpr int kMaxIndividualisations = 256;

uint64_t Fmix(uint64_t k) {  // MurmurHash3's 64-bit finaliser
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}
uint64_t Mix(uint64_t h, uint64_t v) { return Fmix(h ^ Fmix(v + 0x9e3779b97f4a7c15ULL)); }
uint64_t HashText(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

template <typename T>
std::string ShortestText(T v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string QuotedText(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

// Exact and platform-independent: doubles in shortest round-trip form (std::to_chars).
std::string AttrValueText(const AttrValue& value) {
  struct Visitor {
    std::string operator()(NoneAttr) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return ShortestText(d); }
    std::string operator()(const std::string& s) const { return QuotedText(s); }
    std::string operator()(const IntList& l) const {
      return "[" + fmt::format("{}", fmt::join(l, ", ")) + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

std::string ScalarConstantText(const Value& v) {
  const Tensor* t = v.data.get();
  if (t && t->type().rank() == 0 && IsSupportedForCompute(t->dtype())) {
    double x = t->Get(0);
    switch (t->dtype()) {
      case DType::kFloat32:
        return ShortestText(static_cast<float>(x)) + "f";
      case DType::kInt32:
        return std::to_string(static_cast<int64_t>(x));
      case DType::kBool:
        return x != 0.0 ? "True" : "False";
      default:
        break;
    }
  }
  return "";
}

std::string ConstantContentHash(const Value& v) {
  const Tensor* t = v.data.get();
  uint64_t content = t ? XXH3_64bits(t->data(), static_cast<size_t>(t->type().NumBytes())) : 0;
  return fmt::format("{:016x}", content);
}

std::string ConstantText(const Value& v) {
  std::string scalar = ScalarConstantText(v);
  if (!scalar.empty()) return scalar;
  return fmt::format("const({}, xxh3={})", v.type.ToString(), ConstantContentHash(v));
}

namespace {

class Canonicalizer {
 public:
  Canonicalizer(const Graph& graph, bool whole, const KeySpelling& spelling)
      : graph_(graph), whole_(whole), spelling_(spelling) {
    size_t n = graph.values().size();
    in_set_.assign(n, 0);
    input_index_.assign(n, -1);
    node_index_.assign(n, -1);
    entered_.assign(n, 0);
  }

  void AddAllNodes() {
    for (ValueId id = 0; id < Size(); ++id) {
      if (graph_.value(id).kind == ValueKind::kNode) {
        in_set_[id] = 1;
        set_.push_back(id);
      }
    }
  }

  void AddNodes(std::span<const ValueId> nodes) {
    for (ValueId id : nodes) {
      if (id < 0 || id >= Size() || graph_.value(id).kind != ValueKind::kNode) {
        throw UserError(fmt::format("value {} is not a node of the graph", id));
      }
      if (!in_set_[id]) set_.push_back(id);
      in_set_[id] = 1;
    }
    std::sort(set_.begin(), set_.end());
  }

  // Members computed in the set but stored by no group (ir/fusion.h): never outputs, and what
  // they read is read again where they are recomputed, so it leaves the set.
  void SetRecomputed(std::span<const ValueId> recomputed) {
    recomputed_.assign(graph_.values().size(), 0);
    for (ValueId id : recomputed) recomputed_[id] = 1;
  }

  Order Run() {
    if (whole_) {
      for (ValueId p : graph_.params()) NumberInput(p);
      order_.outputs = graph_.outputs();
      for (ValueId o : order_.outputs) Walk(o);
      if (order_.nodes.size() < set_.size()) {
        std::vector<ValueId> dead;
        std::vector<char> read = ReadBySet();
        for (ValueId id : set_) {
          if (node_index_[id] < 0 && !read[id]) dead.push_back(id);
        }
        SortByStructure(dead);
        for (ValueId d : dead) Walk(d);
      }
    } else {
      std::vector<ValueId> outputs = SubgraphOutputs();
      SortByStructure(outputs);
      for (ValueId o : outputs) Walk(o);
      order_.outputs = std::move(outputs);
    }
    order_.whole = whole_;
    order_.in_set = std::move(in_set_);
    order_.input_index = std::move(input_index_);
    order_.node_index = std::move(node_index_);
    return std::move(order_);
  }

 private:
  ValueId Size() const { return static_cast<ValueId>(graph_.values().size()); }
  bool IsConst(ValueId id) const { return graph_.value(id).kind == ValueKind::kConst; }

  void NumberInput(ValueId id) {
    if (input_index_[id] >= 0) return;
    input_index_[id] = static_cast<int32_t>(order_.inputs.size());
    order_.inputs.push_back(id);
  }

  // Values read by some node of the set.
  std::vector<char> ReadBySet() const {
    std::vector<char> read(graph_.values().size(), 0);
    for (ValueId id : set_)
      for (ValueId in : graph_.value(id).inputs) read[in] = 1;
    return read;
  }

  // Nodes whose value leaves the set: read by a node outside it, a graph output, or read by
  // nothing at all (so every node of the set is reached from some output). Readers come after
  // what they read, so only values after the set's first node are scanned.
  std::vector<ValueId> SubgraphOutputs() const {
    std::vector<char> leaves(graph_.values().size(), 0);
    for (ValueId id = set_.empty() ? Size() : set_.front() + 1; id < Size(); ++id) {
      if (in_set_[id] || graph_.value(id).kind != ValueKind::kNode) continue;
      for (ValueId in : graph_.value(id).inputs) leaves[in] = 1;
    }
    for (ValueId o : graph_.outputs()) leaves[o] = 1;
    std::vector<char> read = ReadBySet();
    if (!recomputed_.empty())
      for (ValueId id : set_)
        if (recomputed_[id])
          for (ValueId in : graph_.value(id).inputs) leaves[in] = 1;
    std::vector<ValueId> outputs;
    for (ValueId id : set_) {
      if (!recomputed_.empty() && recomputed_[id]) continue;
      if (leaves[id] || !read[id]) outputs.push_back(id);
    }
    return outputs;
  }

  // Depth-first post-order from `root` over the set, inputs in argument order.
  void Walk(ValueId root) {
    if (!in_set_[root]) {
      if (!whole_ && !IsConst(root)) NumberInput(root);
      return;
    }
    if (entered_[root]) return;
    std::vector<std::pair<ValueId, size_t>> stack;
    stack.emplace_back(root, 0);
    entered_[root] = 1;
    while (!stack.empty()) {
      ValueId v = stack.back().first;
      size_t k = stack.back().second;
      const auto& inputs = graph_.value(v).inputs;
      if (k < inputs.size()) {
        stack.back().second = k + 1;
        ValueId c = inputs[k];
        if (in_set_[c]) {
          if (!entered_[c]) {
            entered_[c] = 1;
            stack.emplace_back(c, 0);
          } else {
            FT_CHECK(node_index_[c] >= 0, "cycle in graph");
          }
        } else if (!IsConst(c)) {
          NumberInput(c);
        }
      } else {
        node_index_[v] = static_cast<int32_t>(order_.nodes.size());
        order_.nodes.push_back(v);
        stack.pop_back();
      }
    }
  }

  // Orders `roots` by a structural key (see the note at the top of the file), then by id.
  // Works on local indices 0..m-1 over the scope (the set's nodes and the values they read), so
  // its cost follows the set, not the graph.
  void SortByStructure(std::vector<ValueId>& roots) {
    if (roots.size() < 2) return;
    std::vector<ValueId> scope = set_;
    for (ValueId id : set_)
      for (ValueId in : graph_.value(id).inputs)
        if (!in_set_[in]) scope.push_back(in);
    std::sort(scope.begin(), scope.end());
    scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
    const int32_t m = static_cast<int32_t>(scope.size());
    std::unordered_map<ValueId, int32_t> local;
    local.reserve(scope.size() * 2);
    for (int32_t i = 0; i < m; ++i) local.emplace(scope[i], i);

    // Inputs and users in local indices (CSR), values in ascending id = topological order.
    std::vector<int32_t> in_begin(m + 1, 0), in_list;
    std::vector<int32_t> user_begin(m + 1, 0);
    for (int32_t i = 0; i < m; ++i) {
      if (in_set_[scope[i]]) {
        for (ValueId in : graph_.value(scope[i]).inputs) {
          int32_t li = local.at(in);
          in_list.push_back(li);
          ++user_begin[li + 1];
        }
      }
      in_begin[i + 1] = static_cast<int32_t>(in_list.size());
    }
    for (int32_t i = 0; i < m; ++i) user_begin[i + 1] += user_begin[i];
    std::vector<std::pair<int32_t, int32_t>> users(user_begin[m]);  // (user, argument index)
    {
      std::vector<int32_t> fill(user_begin.begin(), user_begin.end() - 1);
      for (int32_t i = 0; i < m; ++i) {
        for (int32_t k = in_begin[i]; k < in_begin[i + 1]; ++k) {
          users[fill[in_list[k]]++] = {i, k - in_begin[i]};
        }
      }
    }
    std::vector<char> is_root(m, 0);
    for (ValueId r : roots) is_root[local.at(r)] = 1;

    // Round 0: Merkle hashes from the inputs (down) and from the users (up), each over the whole
    // depth in one pass, so chains are told apart at once.
    std::vector<uint64_t> down(m, 0), up(m, 0), color(m, 0), next(m, 0);
    for (int32_t i = 0; i < m; ++i) {
      ValueId id = scope[i];
      const Value& v = graph_.value(id);
      if (in_set_[id]) {
        uint64_t h = Mix(HashText(v.op->name), HashText(spelling_.attrs_and_type(v)));
        for (int32_t k = in_begin[i]; k < in_begin[i + 1]; ++k) h = Mix(h, down[in_list[k]]);
        // Which arguments are the same value (subtract(a, a) vs subtract(b, c)): refinement
        // alone cannot see it, since it compares values by key, not identity.
        for (size_t j = 0; j < v.inputs.size(); ++j) {
          size_t first = 0;
          while (v.inputs[first] != v.inputs[j]) ++first;
          h = Mix(h, first);
        }
        down[i] = h;
      } else if (v.kind == ValueKind::kConst) {
        down[i] = HashText(spelling_.constant(v));
      } else if (input_index_[id] >= 0) {
        down[i] = Mix(1, static_cast<uint64_t>(input_index_[id]));
      } else {
        down[i] = Mix(2, HashText(spelling_.type(v.type)));
      }
    }
    std::vector<uint64_t> scratch;
    for (int32_t i = m - 1; i >= 0; --i) {
      scratch.clear();
      for (int32_t k = user_begin[i]; k < user_begin[i + 1]; ++k) {
        auto [u, j] = users[k];
        scratch.push_back(Mix(Mix(down[u], static_cast<uint64_t>(j)), up[u]));
      }
      std::sort(scratch.begin(), scratch.end());
      uint64_t h = Mix(3, is_root[i]);
      for (uint64_t x : scratch) h = Mix(h, x);
      up[i] = h;
      color[i] = Mix(down[i], h);
    }

    // Refinement rounds (1-dimensional Weisfeiler-Leman over inputs and users) until no class
    // splits: tells apart values that differ only in how they share inputs with others.
    auto distinct = [&](const std::vector<uint64_t>& c) {
      scratch.assign(c.begin(), c.end());
      std::sort(scratch.begin(), scratch.end());
      return std::unique(scratch.begin(), scratch.end()) - scratch.begin();
    };
    std::vector<uint64_t> uses;
    auto refine = [&] {
      auto classes = distinct(color);
      for (int round = 0; round < kMaxRefinementRounds; ++round) {
        for (int32_t i = 0; i < m; ++i) {
          uint64_t h = color[i];
          for (int32_t k = in_begin[i]; k < in_begin[i + 1]; ++k) h = Mix(h, color[in_list[k]]);
          uses.clear();
          for (int32_t k = user_begin[i]; k < user_begin[i + 1]; ++k) {
            uses.push_back(Mix(color[users[k].first], static_cast<uint64_t>(users[k].second)));
          }
          std::sort(uses.begin(), uses.end());
          for (uint64_t x : uses) h = Mix(h, x);
          next[i] = Fmix(h);
        }
        auto refined = distinct(next);
        color.swap(next);
        if (refined == classes) return;
        classes = refined;
      }
    };
    refine();
    // Roots still tied are almost always images of each other under a symmetry of the set (two
    // identical branches). Picking one of them and refining again orders the rest consistently;
    // which one is picked does not matter, because the symmetry maps one choice onto the other.
    std::vector<std::pair<uint64_t, ValueId>> keyed;
    for (int picks = 0;; ++picks) {
      keyed.clear();
      for (ValueId r : roots) keyed.emplace_back(color[local.at(r)], r);
      std::sort(keyed.begin(), keyed.end());
      size_t tie = 0;
      while (tie + 1 < keyed.size() && keyed[tie].first != keyed[tie + 1].first) ++tie;
      if (tie + 1 >= keyed.size() || picks >= kMaxIndividualisations) break;
      uint64_t& c = color[local.at(keyed[tie].second)];
      c = Mix(c, 0x1D1D1D1D1D1D1D1DULL);
      refine();
    }
    for (size_t i = 0; i < roots.size(); ++i) roots[i] = keyed[i].second;
  }

  const Graph& graph_;
  bool whole_;
  const KeySpelling& spelling_;
  std::vector<ValueId> set_;  // the set's nodes, ascending
  std::vector<char> in_set_;
  std::vector<int32_t> input_index_;
  std::vector<int32_t> node_index_;
  std::vector<char> entered_;
  Order order_;
  std::vector<char> recomputed_;  // per graph value; empty when none is
};

}  // namespace

Order ComputeOrder(const Graph& graph, std::optional<std::span<const ValueId>> nodes,
                   const KeySpelling& spelling, std::span<const ValueId> recomputed) {
  Canonicalizer c(graph, !nodes.has_value(), spelling);
  if (nodes) {
    c.AddNodes(*nodes);
    if (!recomputed.empty()) c.SetRecomputed(recomputed);
  } else {
    c.AddAllNodes();
  }
  return c.Run();
}

}  // namespace fusetune::canonical
