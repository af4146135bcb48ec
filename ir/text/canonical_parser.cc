// A line-by-line reader of the canonical text that signature.cc writes. It accepts only that
// writer's spelling (one space after commas, attributes in schema order, ...); the final check
// that the rebuilt graph writes the same text catches anything it would misread.
#include "ir/text/canonical_parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/text/signature.h"

namespace fusetune {
namespace {

class LineReader {
 public:
  LineReader(std::string_view line, int number) : s_(line), number_(number) {}

  [[noreturn]] void Fail(std::string_view what) const {
    throw UserError(fmt::format("canonical text line {}, column {}: {}", number_, i_ + 1, what));
  }
  bool AtEnd() const { return i_ >= s_.size(); }
  bool Peek(std::string_view word) const { return s_.substr(i_).starts_with(word); }
  bool Accept(std::string_view word) {
    if (!Peek(word)) return false;
    i_ += word.size();
    return true;
  }
  void Expect(std::string_view word) {
    if (!Accept(word)) Fail(fmt::format("expected '{}'", word));
  }
  // Up to (not including) the first of `stops`.
  std::string_view Until(std::string_view stops) {
    size_t end = s_.find_first_of(stops, i_);
    if (end == std::string_view::npos) end = s_.size();
    std::string_view word = s_.substr(i_, end - i_);
    i_ = end;
    return word;
  }
  int64_t Int(std::string_view stops) {
    std::string_view word = Until(stops);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size())
      Fail(fmt::format("expected an integer, found '{}'", word));
    return v;
  }
  double Double(std::string_view word) const {
    if (word == "inf") return std::numeric_limits<double>::infinity();
    if (word == "-inf") return -std::numeric_limits<double>::infinity();
    if (word == "nan" || word == "-nan") return std::numeric_limits<double>::quiet_NaN();
    double v = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size())
      Fail(fmt::format("expected a number, found '{}'", word));
    return v;
  }
  // "..." with \" \\ and \xNN escapes.
  std::string Quoted() {
    Expect("\"");
    std::string out;
    while (!AtEnd() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
      } else if (Accept("x") && i_ + 2 <= s_.size()) {
        out += static_cast<char>(std::stoi(std::string(s_.substr(i_, 2)), nullptr, 16));
        i_ += 2;
      } else if (!AtEnd()) {
        out += s_[i_++];
      }
    }
    Expect("\"");
    return out;
  }

  TensorType Type() {
    TensorType t;
    if (Accept("Tensor[(")) {
      while (!Accept(")")) {
        t.shape.push_back(Int(",)"));
        Accept(",");
        Accept(" ");
      }
      Expect(", ");
      t.dtype = DTypeOf(Until("]"));
      Expect("]");
    } else {
      t.dtype = DTypeOf(Until(" ,)"));
    }
    return t;
  }

 private:
  DType DTypeOf(std::string_view name) const {
    std::optional<DType> dtype = ParseDType(name);
    if (!dtype) Fail(fmt::format("unknown dtype '{}'", name));
    return *dtype;
  }

  std::string_view s_;
  int number_;
  size_t i_ = 0;
};

class CanonicalTextReader {
 public:
  explicit CanonicalTextReader(std::string_view text) : text_(text) {}

  Graph Read() {
    size_t start = 0;
    int number = 0;
    bool saw_out = false;
    while (start < text_.size()) {
      size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(start, end - start);
      start = end + 1;
      LineReader r(line, ++number);
      if (number == 1) {
        if (line == "fusetune-canonical v1 graph") {
          whole_ = true;
        } else if (line != "fusetune-canonical v1 subgraph") {
          r.Fail("not a version 1 canonical text");
        }
      } else if (saw_out) {
        r.Fail("text after the out line");
      } else if (r.Accept("in p")) {
        if (r.Int(" ") != static_cast<int64_t>(values_.size())) r.Fail("inputs out of order");
        r.Expect(" ");
        TensorType type = r.Type();
        values_.push_back(b_.AddParam("p" + std::to_string(values_.size()), type));
      } else if (r.Accept("n")) {
        ReadNode(r);
      } else if (r.Accept("out")) {
        ReadOut(r);
        saw_out = true;
      } else {
        r.Fail("expected an in, node or out line");
      }
    }
    if (!saw_out) throw UserError("canonical text has no out line");
    Graph g = std::move(b_).Build();
    std::string again = whole_ ? CanonicalText(g) : CanonicalText(g, nodes_);
    if (again != text_) throw UserError("canonical text does not read back to the same text");
    return g;
  }

 private:
  void ReadNode(LineReader& r) {
    if (r.Int(" ") != static_cast<int64_t>(nodes_.size())) r.Fail("nodes out of order");
    r.Expect(" = ");
    std::string op_name(r.Until("("));
    const OpDef* op = FindOp(op_name);
    if (!op) r.Fail(fmt::format("unknown operator '{}'", op_name));
    r.Expect("(");
    std::vector<ValueId> inputs;
    while (!r.Accept(")")) {
      inputs.push_back(Arg(r));
      r.Accept(", ");
    }
    r.Expect(" [");
    std::vector<std::pair<std::string, AttrValue>> attrs;
    while (!r.Accept("]")) {
      std::string name(r.Until("="));
      r.Expect("=");
      const AttrSpec* spec = nullptr;
      for (const AttrSpec& a : op->attrs)
        if (a.name == name) spec = &a;
      if (!spec) r.Fail(fmt::format("'{}' has no attribute '{}'", op->name, name));
      attrs.emplace_back(name, AttrValueOf(r, *spec));
      r.Accept(", ");
    }
    r.Expect(" : ");
    TensorType type = r.Type();
    if (!r.AtEnd()) r.Fail("unexpected text after the type");
    try {
      ValueId id = b_.AddNode(op->name, std::move(inputs), Attrs(std::move(attrs)),
                              "n" + std::to_string(nodes_.size()));
      b_.CheckAnnotatedType(id, type);
      nodes_.push_back(id);
    } catch (const UserError& e) {
      r.Fail(e.what());
    }
  }

  void ReadOut(LineReader& r) {
    bool tuple = r.Accept(" tuple");
    std::vector<ValueId> outputs;
    while (r.Accept(" ")) outputs.push_back(Arg(r));
    if (!r.AtEnd()) r.Fail("unexpected text in the out line");
    // A subgraph's several outputs are a tuple of the rebuilt graph; its text never says so.
    if (!whole_ && outputs.size() > 1) tuple = true;
    b_.SetOutputs(std::move(outputs), tuple);
  }

  ValueId Arg(LineReader& r) {
    if (r.Peek("const(")) {
      r.Fail("a non-scalar constant cannot be rebuilt: the canonical text holds only its hash");
    }
    std::string_view word = r.Until(",) ");
    if (word.size() > 1 && (word[0] == 'n' || word[0] == 'p') && word[1] >= '0' && word[1] <= '9') {
      LineReader index(word.substr(1), 0);
      int64_t i = index.Int("");
      const std::vector<ValueId>& list = word[0] == 'n' ? nodes_ : values_;
      if (i < 0 || i >= static_cast<int64_t>(list.size()))
        r.Fail(fmt::format("'{}' is not defined before it is read", word));
      return list[i];
    }
    Tensor scalar;
    if (word == "True" || word == "False") {
      scalar = Tensor::Scalar(DType::kBool, word == "True" ? 1.0 : 0.0);
    } else if (word.ends_with("f")) {
      scalar = Tensor::Scalar(DType::kFloat32, r.Double(word.substr(0, word.size() - 1)));
    } else {
      LineReader integer(word, 0);
      scalar = Tensor::Scalar(DType::kInt32, static_cast<double>(integer.Int("")));
    }
    return b_.AddConst(std::move(scalar));
  }

  AttrValue AttrValueOf(LineReader& r, const AttrSpec& spec) {
    if (r.Accept("None")) return NoneAttr{};
    if (r.Accept("True")) return true;
    if (r.Accept("False")) return false;
    if (r.Peek("\"")) return r.Quoted();
    if (r.Accept("[")) {
      IntList list;
      while (!r.Accept("]")) {
        list.push_back(r.Int(",]"));
        r.Accept(", ");
      }
      return list;
    }
    std::string_view word = r.Until(",]");
    if (spec.kind == AttrKind::kFloat) return r.Double(word);
    LineReader integer(word, 0);
    return integer.Int("");
  }

  std::string_view text_;
  GraphBuilder b_;
  bool whole_ = false;
  std::vector<ValueId> values_;  // p<i>
  std::vector<ValueId> nodes_;   // n<i>
};

}  // namespace

Graph ParseCanonicalText(std::string_view text) { return CanonicalTextReader(text).Read(); }

ValueId CanonicalNode(const Graph& parsed, int i) {
  auto id = parsed.FindByName("n" + std::to_string(i));
  if (!id) throw UserError(fmt::format("canonical position {} is not a node of the text", i));
  return *id;
}

}  // namespace fusetune
