// Family text: the canonical order computed with a key that sees no sizes (only ranks, dtypes and
// which sizes are 0 or 1), then written out with each size as a symbol.
#include "ir/text/family.h"

#include <functional>
#include <map>

#include <fmt/format.h>

#include "ir/text/canonical_order.h"
#include "ir/text/signature.h"

namespace fusetune {
namespace {

constexpr std::string_view kHeader = "fusetune-family v1";

// Sizes that change what an op means (a 1 broadcasts, a 0 empties) stay literal.
bool IsLiteralSize(int64_t size) { return size <= 1; }

std::string TypeText(const TensorType& t, const std::function<std::string(int64_t)>& size) {
  if (t.shape.empty()) return std::string(DTypeName(t.dtype));
  std::string dims;
  for (size_t i = 0; i < t.shape.size(); ++i) dims += (i ? ", " : "") + size(t.shape[i]);
  if (t.shape.size() == 1) dims += ",";
  return fmt::format("Tensor[({}), {}]", dims, DTypeName(t.dtype));
}

std::vector<SizeAttr> SizeAttrsOf(const Graph& g, const Value& v) {
  if (!v.op->size_attrs) return {};
  std::vector<TensorType> inputs;
  for (ValueId in : v.inputs) inputs.push_back(g.value(in).type);
  return v.op->size_attrs(inputs, v.type, v.attrs);
}

// "[name=value, ...] : TYPE" with every size (in attributes and the type) spelled by `size`.
std::string AttrsAndType(const Graph& g, const Value& v,
                         const std::function<std::string(int64_t)>& size) {
  std::vector<SizeAttr> refs = SizeAttrsOf(g, v);
  auto size_of = [&](const SizeAttr& r) {
    const TensorType& t = r.input < 0 ? v.type : g.value(v.inputs[r.input]).type;
    return t.shape.at(r.axis);
  };
  std::string s = "[";
  bool first = true;
  for (const auto& [name, value] : v.attrs.items()) {
    s += (first ? "" : ", ") + name + "=";
    first = false;
    std::vector<const SizeAttr*> mine;
    for (const SizeAttr& r : refs)
      if (r.attr == name) mine.push_back(&r);
    if (mine.empty()) {
      s += canonical::AttrValueText(value);
    } else if (const IntList* list = std::get_if<IntList>(&value)) {
      s += "[";
      for (size_t i = 0; i < list->size(); ++i) {
        const SizeAttr* ref = nullptr;
        for (const SizeAttr* r : mine)
          if (r->index == static_cast<int>(i)) ref = r;
        s += (i ? ", " : "") + (ref ? size(size_of(*ref)) : std::to_string((*list)[i]));
      }
      s += "]";
    } else {
      s += size(size_of(*mine.front()));
    }
  }
  return s + "] : " + TypeText(v.type, size);
}

// The key sees whether a size is 0, 1 or something else, never which something else.
std::string KeySize(int64_t size) { return IsLiteralSize(size) ? std::to_string(size) : "?"; }

canonical::KeySpelling ShapeFreeSpelling(const Graph& g) {
  return {
      .attrs_and_type = [&g](const Value& v) { return AttrsAndType(g, v, KeySize); },
      .type = [](const TensorType& t) { return TypeText(t, KeySize); },
      .constant =
          [](const Value& c) {
            std::string scalar = canonical::ScalarConstantText(c);
            if (!scalar.empty()) return scalar;
            return fmt::format("const({}, xxh3={})", TypeText(c.type, KeySize),
                               canonical::ConstantContentHash(c));
          },
  };
}

class FamilyWriter {
 public:
  FamilyWriter(const Graph& g, canonical::Order order) : g_(g), order_(std::move(order)) {}

  FamilyForm Write() {
    std::string& out = form_.text;
    out += kHeader;
    out += order_.whole ? " graph\n" : " subgraph\n";
    for (size_t i = 0; i < order_.inputs.size(); ++i)
      out += fmt::format("in p{} {}\n", i, Type(g_.value(order_.inputs[i]).type));
    for (size_t i = 0; i < order_.nodes.size(); ++i) {
      const Value& v = g_.value(order_.nodes[i]);
      out += "n" + std::to_string(i) + " = " + v.op->name + "(";
      for (size_t j = 0; j < v.inputs.size(); ++j) out += (j ? ", " : "") + Ref(v.inputs[j]);
      out += ") " + AttrsAndType(g_, v, [this](int64_t s) { return Symbol(s); }) + "\n";
    }
    out += "out";
    if (order_.whole && g_.tuple_output()) out += " tuple";
    for (ValueId o : order_.outputs) out += " " + Ref(o);
    out += "\n";
    std::string loose;
    SpellSymbols(out, &loose);
    form_.loose_key = Hash128Hex(loose);
    form_.key = Hash128Hex(out);
    form_.inputs = std::move(order_.inputs);
    form_.nodes = std::move(order_.nodes);
    form_.outputs = std::move(order_.outputs);
    return std::move(form_);
  }

 private:
  static constexpr char kMark = '\x01', kEnd = '\x02';

  // Placeholders -> `sN` in `text`, and `?` in `loose`.
  static void SpellSymbols(std::string& text, std::string* loose) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != kMark) {
        out += text[i];
        *loose += text[i];
        continue;
      }
      const size_t end = text.find(kEnd, i);
      out += 's';
      out.append(text, i + 1, end - i - 1);
      *loose += '?';
      i = end;
    }
    text = std::move(out);
  }

  // Symbols are numbered in order of first appearance in the text, which follows the canonical
  // order, so corresponding sizes of two members get the same symbol.
  std::string Symbol(int64_t size) {
    if (IsLiteralSize(size)) return std::to_string(size);
    auto [it, fresh] = symbols_.emplace(size, static_cast<int>(form_.binding.size()));
    if (fresh) form_.binding.push_back(size);
    form_.size_symbols.push_back(it->second);
    // A placeholder, spelled out in Write(): `sN` in the text, `?` in the loose text. Control
    // characters never occur raw in the text (attribute strings escape them).
    return kMark + std::to_string(it->second) + kEnd;
  }

  std::string Type(const TensorType& t) {
    return TypeText(t, [this](int64_t s) { return Symbol(s); });
  }

  std::string Ref(ValueId id) {
    if (order_.in_set[id]) return "n" + std::to_string(order_.node_index[id]);
    const Value& v = g_.value(id);
    if (v.kind == ValueKind::kConst) {
      std::string scalar = canonical::ScalarConstantText(v);
      if (!scalar.empty()) return scalar;
      return fmt::format("const({}, xxh3={})", Type(v.type), canonical::ConstantContentHash(v));
    }
    return "p" + std::to_string(order_.input_index[id]);
  }

  const Graph& g_;
  canonical::Order order_;
  FamilyForm form_;
  std::map<int64_t, int> symbols_;
};

}  // namespace

FamilyForm CanonicalizeFamily(const Graph& graph) {
  return FamilyWriter(graph, canonical::ComputeOrder(graph, std::nullopt, ShapeFreeSpelling(graph)))
      .Write();
}

FamilyForm CanonicalizeFamily(const Graph& graph, std::span<const ValueId> nodes) {
  return FamilyWriter(graph, canonical::ComputeOrder(graph, nodes, ShapeFreeSpelling(graph)))
      .Write();
}

std::string FamilyKey(const Graph& graph) { return CanonicalizeFamily(graph).key; }
std::string FamilyKey(const Graph& graph, std::span<const ValueId> nodes) {
  return CanonicalizeFamily(graph, nodes).key;
}

bool EqualitiesRefine(const FamilyForm& member, const FamilyForm& here,
                      std::vector<int64_t>* here_sizes, std::string* not_held) {
  if (member.loose_key != here.loose_key || member.size_symbols.size() != here.size_symbols.size())
    return false;
  std::vector<int64_t> sizes(member.binding.size(), -1);
  for (size_t i = 0; i < member.size_symbols.size(); ++i) {
    const int symbol = member.size_symbols[i];
    const int64_t ours = here.binding[here.size_symbols[i]];
    if (sizes[symbol] >= 0 && sizes[symbol] != ours) {  // equal there, different here
      if (not_held)
        *not_held = fmt::format("{} is two sizes here ({} and {})", member.binding[symbol],
                                sizes[symbol], ours);
      return false;
    }
    sizes[symbol] = ours;
  }
  if (here_sizes) *here_sizes = std::move(sizes);
  return true;
}

std::string BindingText(std::span<const int64_t> binding) {
  std::string s;
  for (size_t i = 0; i < binding.size(); ++i)
    s += fmt::format("{}s{}={}", i ? " " : "", i, binding[i]);
  return s;
}

}  // namespace fusetune
