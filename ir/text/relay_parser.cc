// Recursive-descent parser over the token vector of relay_lexer.h. Every value is created in the
// GraphBuilder as soon as it is read, so type errors surface at the call that causes them, and
// the builder's checks (arity, attributes, limits) are reported at the token that caused them.
#include "ir/text/relay_parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/text/relay_lexer.h"

namespace fusetune {
namespace {

using text::Describe;
using text::SourcePos;
using text::Token;
using text::TokenKind;

// Deeply nested calls would otherwise overflow the stack on hostile input.
constexpr int kMaxNesting = 256;
// `?` in an annotation: matches any size.
constexpr int64_t kAnySize = -1;

// What an expression evaluates to: one value, or a tuple of values.
struct Expr {
  bool is_tuple = false;
  ValueId value = -1;
  std::vector<ValueId> elements;
  SourcePos pos;
};

struct ParsedType {
  bool is_tuple = false;
  TensorType tensor;
  std::vector<TensorType> elements;
  SourcePos pos;
};

std::string TypeText(const ParsedType& t) {
  if (!t.is_tuple) return t.tensor.ToString();
  std::string s = "(";
  for (size_t i = 0; i < t.elements.size(); ++i) s += (i ? ", " : "") + t.elements[i].ToString();
  return s + (t.elements.size() == 1 ? ",)" : ")");
}

class RelayParser {
 public:
  RelayParser(std::string_view text, const std::string& file, const Limits& limits,
              const DimResolver* dims)
      : text_(text), file_(file), builder_(limits), dims_(dims) {}

  Graph Parse() {
    const Limits& limits = builder_.limits();
    if (static_cast<int64_t>(text_.size()) > limits.max_text_bytes) {
      Fail({1, 1}, fmt::format("the text is {} bytes, more than the limit of {} bytes",
                               text_.size(), limits.max_text_bytes));
    }
    tokens_ = text::Lex(text_, file_);
    for (const Token& t : tokens_) {
      if (t.kind == TokenKind::kLocal) spelled_.insert(t.name());
    }
    if (Peek().Is("#")) ParseVersionHeader();
    if (Peek().IsIdent("fn")) {
      Next();
    } else if (Peek().IsIdent("def")) {
      Next();
      if (Peek().kind != TokenKind::kGlobal) {
        Fail(Peek().pos, "expected a function name such as '@main' but found " + Describe(Peek()));
      }
      Next();
    } else {
      Fail(Peek().pos, "expected 'fn' or 'def' but found " + Describe(Peek()));
    }
    ParseParams();
    std::optional<ParsedType> return_type;
    if (Peek().Is("->")) {
      Next();
      return_type = ParseType();
    }
    Expect("{");
    Expr result = ParseBody();
    Expect("}");
    if (Peek().kind != TokenKind::kEnd) {
      Fail(Peek().pos, "expected end of input but found " + Describe(Peek()));
    }
    if (result.is_tuple) {
      builder_.SetOutputs(result.elements, true);
    } else {
      builder_.SetOutputs({result.value}, false);
    }
    if (return_type) CheckType(result, *return_type, "return type");
    return std::move(builder_).Build();
  }

 private:
  [[noreturn]] void Fail(SourcePos pos, std::string_view what) const {
    text::ThrowAt(file_, pos, what);
  }

  const Token& Peek(size_t ahead = 0) const {
    size_t i = p_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& Next() {
    const Token& t = Peek();
    if (p_ + 1 < tokens_.size()) ++p_;
    return t;
  }
  const Token& Expect(std::string_view punct) {
    if (!Peek().Is(punct)) {
      Fail(Peek().pos, fmt::format("expected '{}' but found {}", punct, Describe(Peek())));
    }
    return Next();
  }

  // #[version = "0.0.5"]
  void ParseVersionHeader() {
    Next();
    Expect("[");
    if (!Peek().IsIdent("version")) {
      Fail(Peek().pos, "expected 'version' but found " + Describe(Peek()));
    }
    Next();
    Expect("=");
    if (Peek().kind != TokenKind::kString) {
      Fail(Peek().pos, "expected a version string such as \"0.0.5\" but found " + Describe(Peek()));
    }
    Next();
    Expect("]");
  }

  void ParseParams() {
    Expect("(");
    while (!Peek().Is(")")) {
      const Token& name = Next();
      if (name.kind != TokenKind::kLocal) {
        Fail(name.pos, "expected a parameter such as '%x' but found " + Describe(name));
      }
      if (scope_.count(name.name())) {
        Fail(name.pos, fmt::format("duplicate parameter '{}'", name.raw));
      }
      if (!Peek().Is(":")) {
        Fail(Peek().pos, fmt::format("expected ':' and a type after parameter '{}' but found {}",
                                     name.raw, Describe(Peek())));
      }
      Next();
      ParsedType type = ParseType(std::string(name.name()));
      if (type.is_tuple) Fail(type.pos, "tuple-typed parameters are not supported");
      Expr param;
      param.pos = name.pos;
      try {
        param.value = builder_.AddParam(std::string(name.name()), type.tensor);
      } catch (const UserError& e) {
        Fail(name.pos, e.what());
      }
      scope_[name.name()] = param;
      while (Peek().kind == TokenKind::kAnnotation) CheckAnnotation(param, Next());
      if (!Peek().Is(",")) break;
      Next();
    }
    Expect(")");
  }

  // Bindings, then the result expression.
  Expr ParseBody() {
    while (true) {
      if (Peek().IsIdent("let")) {
        Next();
        const Token& name = Next();
        if (name.kind != TokenKind::kLocal) {
          Fail(name.pos,
               "expected a variable such as '%x' after 'let' but found " + Describe(name));
        }
        CheckFresh(name);
        std::optional<ParsedType> ascribed;
        if (Peek().Is(":")) {
          Next();
          ascribed = ParseType();
        }
        Expect("=");
        Expr e = ParseExpr(name.name(), 0);
        if (ascribed) CheckType(e, *ascribed, "type");
        Expect(";");
        scope_[name.name()] = std::move(e);
      } else if (Peek().kind == TokenKind::kLocal && Peek(1).Is("=")) {
        const Token& name = Next();
        CheckFresh(name);
        Next();
        Expr e = ParseExpr(name.name(), 0);
        Expect(";");
        scope_[name.name()] = std::move(e);
      } else {
        break;
      }
    }
    if (Peek().Is("}")) {
      Fail(Peek().pos, "expected the result expression but found '}'");
    }
    return ParseExpr(std::nullopt, 0);
  }

  void CheckFresh(const Token& name) const {
    if (scope_.count(name.name())) Fail(name.pos, fmt::format("'{}' is already defined", name.raw));
  }

  // `bind_name` names the node when the expression is a call bound by `%name = call(...)`.
  Expr ParseExpr(std::optional<std::string_view> bind_name, int depth) {
    if (depth > kMaxNesting) {
      Fail(Peek().pos, fmt::format("expressions are nested more than {} deep", kMaxNesting));
    }
    const Token& t = Peek();
    Expr e;
    switch (t.kind) {
      case TokenKind::kLocal:
        Next();
        e = Lookup(t);
        break;
      case TokenKind::kInt:
      case TokenKind::kFloat:
        Next();
        e = Literal(t);
        break;
      case TokenKind::kIdent:
        if (t.IsIdent("True") || t.IsIdent("False")) {
          Next();
          e = Literal(t);
        } else if (Peek(1).Is("(")) {
          Next();
          e = ParseCall(t, bind_name, depth);
        } else if (t.IsIdent("meta")) {
          Fail(t.pos, "constant tensors (meta[...]) are not supported; pass them as parameters");
        } else {
          Fail(t.pos, "expected an expression but found " + Describe(t));
        }
        break;
      case TokenKind::kPunct:
        if (t.Is("(")) {
          e = ParseTuple(depth);
          break;
        }
        [[fallthrough]];
      default:
        Fail(t.pos, "expected an expression but found " + Describe(t));
    }
    e.pos = t.pos;
    while (Peek().kind == TokenKind::kAnnotation) CheckAnnotation(e, Next());
    return e;
  }

  // `(a, b, ...)`, `(a,)` or a parenthesised `(a)`.
  Expr ParseTuple(int depth) {
    const Token& open = Next();
    if (Peek().Is(")")) Fail(Peek().pos, "empty tuples are not supported");
    Expr tuple;
    tuple.is_tuple = true;
    bool saw_comma = false;
    while (true) {
      Expr element = ParseExpr(std::nullopt, depth + 1);
      if (element.is_tuple) Fail(element.pos, "nested tuples are not supported");
      tuple.elements.push_back(element.value);
      if (!Peek().Is(",")) break;
      Next();
      saw_comma = true;
      if (Peek().Is(")")) break;
    }
    Expect(")");
    if (!saw_comma) {
      Expr single;
      single.value = tuple.elements[0];
      return single;
    }
    tuple.pos = open.pos;
    return tuple;
  }

  Expr Lookup(const Token& t) const {
    std::string_view name = t.name();
    auto it = scope_.find(name);
    if (it != scope_.end()) return it->second;
    // %t.0 projects element 0 of a tuple bound to %t.
    size_t dot = name.rfind('.');
    if (dot != std::string_view::npos && dot + 1 < name.size()) {
      auto base = scope_.find(name.substr(0, dot));
      int64_t index = 0;
      std::string_view digits = name.substr(dot + 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (base != scope_.end() && base->second.is_tuple && ec == std::errc() &&
          end == digits.data() + digits.size()) {
        const auto& elements = base->second.elements;
        if (index < 0 || index >= static_cast<int64_t>(elements.size())) {
          Fail(t.pos, fmt::format("index {} is out of range for a tuple of {} elements", index,
                                  elements.size()));
        }
        Expr e;
        e.value = elements[index];
        return e;
      }
    }
    Fail(t.pos, fmt::format("undefined variable '{}'", t.raw));
  }

  // Scalar literal -> a constant value.
  Expr Literal(const Token& t) {
    Expr e;
    Tensor value;
    if (t.kind == TokenKind::kIdent) {
      value = Tensor::Scalar(DType::kBool, t.raw == "True" ? 1.0 : 0.0);
    } else if (t.kind == TokenKind::kInt) {
      if (t.suffix == "i64") {
        Fail(t.pos, "int64 literals are not supported; write an int32 literal such as 2");
      }
      int64_t v = ParseInt(t);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        Fail(t.pos, fmt::format("integer literal {} is out of range for int32", v));
      }
      value = Tensor::Scalar(DType::kInt32, static_cast<double>(v));
    } else {
      if (t.suffix == "f16" || t.suffix == "bf16") {
        Fail(t.pos, "float16 and bfloat16 literals are not supported");
      }
      value = Tensor::Scalar(DType::kFloat32, ParseFloat(t, /*as_float32=*/true));
    }
    try {
      e.value = builder_.AddConst(std::move(value));
    } catch (const UserError& err) {
      Fail(t.pos, err.what());
    }
    return e;
  }

  int64_t ParseInt(const Token& t) const {
    std::string_view digits = t.raw.substr(0, t.raw.size() - t.suffix.size());
    int64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || end != digits.data() + digits.size()) {
      Fail(t.pos, fmt::format("integer '{}' is out of range", t.raw));
    }
    return v;
  }

  // A literal with an f suffix (and every tensor literal) is a float32 value: it is rounded to
  // float32, so printing its shortest float32 spelling reads back the same value. An attribute
  // written without a suffix keeps double precision.
  double ParseFloat(const Token& t, bool as_float32) const {
    std::string_view digits = t.raw.substr(0, t.raw.size() - t.suffix.size());
    if (digits == "inf") return std::numeric_limits<double>::infinity();
    if (digits == "-inf") return -std::numeric_limits<double>::infinity();
    if (digits == "nan") return std::numeric_limits<double>::quiet_NaN();
    double v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc::result_out_of_range) {
      Fail(t.pos, fmt::format("number '{}' is out of range", t.raw));
    }
    if (ec != std::errc() || end != digits.data() + digits.size()) {
      Fail(t.pos, fmt::format("invalid number '{}'", t.raw));
    }
    if (!as_float32) return v;
    float f = static_cast<float>(v);
    if (std::isinf(f) && !std::isinf(v)) {
      Fail(t.pos, fmt::format("number '{}' is out of range for float32", t.raw));
    }
    return f;
  }

  // op(positional..., name=value...)
  Expr ParseCall(const Token& op_token, std::optional<std::string_view> bind_name, int depth) {
    const OpDef* op = FindOp(op_token.raw);
    if (!op) Fail(op_token.pos, fmt::format("unknown operator '{}'", op_token.raw));
    const Token& open = Expect("(");
    std::vector<ValueId> inputs;
    std::vector<std::pair<std::string, AttrValue>> attrs;
    bool got_tuple = false;
    while (!Peek().Is(")")) {
      if (Peek().kind == TokenKind::kIdent && Peek(1).Is("=")) {
        const Token& name = Next();
        Next();
        CheckAttrName(*op, name, attrs);
        attrs.emplace_back(std::string(name.raw), ParseAttrValue());
      } else {
        const Token& first = Peek();
        if (!attrs.empty()) Fail(first.pos, "positional argument after attributes");
        Expr arg = ParseExpr(std::nullopt, depth + 1);
        if (op->tuple_input) {
          if (!arg.is_tuple || got_tuple) {
            Fail(first.pos, fmt::format("'{}' takes one tuple of tensors, as in {}((%a, %b), ...)",
                                        op->name, op->name));
          }
          got_tuple = true;
          inputs = std::move(arg.elements);
        } else {
          if (arg.is_tuple) {
            Fail(first.pos, fmt::format("'{}' does not take a tuple argument", op->name));
          }
          inputs.push_back(arg.value);
        }
      }
      if (!Peek().Is(",")) break;
      Next();
    }
    Expect(")");
    if (op->tuple_input && !got_tuple) {
      Fail(open.pos, fmt::format("'{}' takes one tuple of tensors, as in {}((%a, %b), ...)",
                                 op->name, op->name));
    }
    Expr e;
    std::string name = bind_name ? std::string(*bind_name) : NextUnnamed();
    try {
      e.value = builder_.AddNode(op->name, std::move(inputs), Attrs(std::move(attrs)), name);
    } catch (const UserError& err) {
      Fail(op_token.pos, err.what());
    }
    return e;
  }

  void CheckAttrName(const OpDef& op, const Token& name,
                     const std::vector<std::pair<std::string, AttrValue>>& given) const {
    bool known = false;
    std::string names;
    for (const AttrSpec& spec : op.attrs) {
      known = known || spec.name == name.raw;
      names += (names.empty() ? "" : ", ") + spec.name;
    }
    if (!known) {
      Fail(name.pos, fmt::format("operator '{}' has no attribute '{}' ({})", op.name, name.raw,
                                 names.empty() ? "it takes none" : "it has " + names));
    }
    for (const auto& [k, v] : given) {
      if (k == name.raw) Fail(name.pos, fmt::format("attribute '{}' is given twice", name.raw));
    }
  }

  AttrValue ParseAttrValue() {
    const Token& t = Next();
    switch (t.kind) {
      case TokenKind::kInt:
        return ParseInt(t);
      case TokenKind::kFloat:
        return ParseFloat(t, /*as_float32=*/!t.suffix.empty());
      case TokenKind::kString:
        return std::string(t.name());
      case TokenKind::kIdent:
        if (t.raw == "True") return true;
        if (t.raw == "False") return false;
        if (t.raw == "None") return NoneAttr{};
        break;
      case TokenKind::kPunct:
        if (t.Is("[") || t.Is("(")) return ParseIntList(t.Is("[") ? "]" : ")");
        break;
      default:
        break;
    }
    Fail(t.pos, "expected an attribute value but found " + Describe(t));
  }

  // After the opening bracket: ints separated by commas, then `close`.
  IntList ParseIntList(std::string_view close) {
    IntList list;
    while (!Peek().Is(close)) {
      const Token& t = Next();
      if (t.kind == TokenKind::kFloat) Fail(t.pos, "lists of floats are not supported");
      if (t.kind != TokenKind::kInt) Fail(t.pos, "expected an integer but found " + Describe(t));
      list.push_back(ParseInt(t));
      if (!Peek().Is(",")) break;
      Next();
    }
    Expect(close);
    return list;
  }

  // Tensor[(d0, d1, ...), dtype] | dtype | (T, T, ...). `param` names the parameter whose type this
  // is: its open sizes are asked of dims_; elsewhere an open size is kAnySize or a named one.
  ParsedType ParseType(const std::string& param = "") {
    const Token& t = Next();
    ParsedType type;
    type.pos = t.pos;
    if (t.Is("(")) {
      type.is_tuple = true;
      while (!Peek().Is(")")) {
        ParsedType element = ParseType();
        if (element.is_tuple) Fail(element.pos, "nested tuple types are not supported");
        type.elements.push_back(element.tensor);
        if (!Peek().Is(",")) break;
        Next();
      }
      Expect(")");
      return type;
    }
    if (t.IsIdent("Tensor")) {
      Expect("[");
      Expect("(");
      while (!Peek().Is(")")) {
        const Token& d = Next();
        int64_t dim = 0;
        if (d.Is("?") || d.IsIdent("Any") || d.kind == TokenKind::kIdent) {
          std::string name =
              d.kind == TokenKind::kIdent && !d.IsIdent("Any") ? std::string(d.raw) : std::string();
          dim = param.empty()
                    ? AnnotatedSize(d, name)
                    : OpenSize(d, name, param, static_cast<int>(type.tensor.shape.size()));
        } else if (d.kind == TokenKind::kInt) {
          dim = ParseInt(d);
          if (dim < 0) Fail(d.pos, fmt::format("negative dimension {}", dim));
        } else {
          Fail(d.pos, "expected a dimension but found " + Describe(d));
        }
        type.tensor.shape.push_back(dim);
        if (!Peek().Is(",")) break;
        Next();
      }
      Expect(")");
      Expect(",");
      type.tensor.dtype = ParseDTypeToken(Next());
      Expect("]");
      return type;
    }
    if (t.kind == TokenKind::kIdent) {
      type.tensor.dtype = ParseDTypeToken(t);
      return type;
    }
    Fail(t.pos, "expected a type such as Tensor[(1, 2), float32] but found " + Describe(t));
  }

  // An open size of a parameter: asked of dims_, and remembered by name for annotations.
  int64_t OpenSize(const Token& d, const std::string& name, const std::string& param, int axis) {
    if (!dims_) {
      Fail(d.pos, fmt::format("%{} has a dynamic dimension {} at axis {}; give it a size (fusetune "
                              "check/tune/run/query --dim NAME=SIZE; `fusetune check` lists the "
                              "names)",
                              param, name.empty() ? "'?'" : "'" + name + "'", axis));
    }
    int64_t size = 0;
    try {
      size = (*dims_)(DimRequest{name, param, axis});
    } catch (const UserError& e) {
      Fail(d.pos, e.what());
    }
    if (!name.empty()) named_sizes_.emplace(name, size);
    return size;
  }

  // An open size in an annotation or return type: `?` matches anything, a name is the size the
  // parameters gave it.
  int64_t AnnotatedSize(const Token& d, const std::string& name) const {
    if (name.empty()) return kAnySize;
    auto it = named_sizes_.find(name);
    if (it == named_sizes_.end()) {
      Fail(d.pos, fmt::format("unknown dimension '{}': no parameter's type uses it", name));
    }
    return it->second;
  }

  DType ParseDTypeToken(const Token& t) const {
    if (t.kind != TokenKind::kIdent) Fail(t.pos, "expected a dtype but found " + Describe(t));
    if (auto dtype = ParseDType(t.raw)) return *dtype;
    static const std::unordered_set<std::string_view> kRelayOnly = {
        "int8", "int16", "int64", "uint8", "uint16", "uint32", "uint64", "float64"};
    if (kRelayOnly.count(t.raw)) {
      Fail(t.pos, fmt::format("dtype '{}' is not supported (use float32, int32 or bool)", t.raw));
    }
    Fail(t.pos, fmt::format("unknown dtype '{}'", t.raw));
  }

  // `/* ty=T */` after an expression: T is lexed in place so errors point into the comment.
  void CheckAnnotation(const Expr& e, const Token& annotation) {
    std::vector<Token> saved = std::move(tokens_);
    size_t saved_p = p_;
    tokens_ = text::Lex(annotation.body, file_, annotation.body_pos);
    p_ = 0;
    ParsedType type = ParseType();  // anything after the type (e.g. span=...) is ignored
    tokens_ = std::move(saved);
    p_ = saved_p;
    CheckType(e, type, "type annotation");
  }

  void CheckType(const Expr& e, const ParsedType& type, std::string_view what) const {
    if (e.is_tuple != type.is_tuple || (e.is_tuple && e.elements.size() != type.elements.size())) {
      std::string actual;
      if (e.is_tuple) {
        actual = fmt::format("a tuple of {} elements", e.elements.size());
      } else {
        actual = builder_.TypeOf(e.value).ToString();
      }
      Fail(type.pos, fmt::format("{} {} does not match {}", what, TypeText(type), actual));
    }
    try {
      if (e.is_tuple) {
        for (size_t i = 0; i < e.elements.size(); ++i) {
          builder_.CheckAnnotatedType(e.elements[i], Matched(type.elements[i], e.elements[i]));
        }
      } else {
        builder_.CheckAnnotatedType(e.value, Matched(type.tensor, e.value));
      }
    } catch (const UserError& err) {
      Fail(type.pos, err.what());
    }
  }

  // `annotated` with each `?` replaced by the inferred size there (when the ranks agree).
  TensorType Matched(TensorType annotated, ValueId value) const {
    const TensorType& inferred = builder_.TypeOf(value);
    if (annotated.rank() != inferred.rank()) return annotated;
    for (int a = 0; a < annotated.rank(); ++a)
      if (annotated.shape[a] == kAnySize) annotated.shape[a] = inferred.shape[a];
    return annotated;
  }

  // The smallest number at or above the last one handed out that no `%name` in the text spells.
  std::string NextUnnamed() {
    while (spelled_.count(std::to_string(next_unnamed_))) ++next_unnamed_;
    return std::to_string(next_unnamed_++);
  }

  std::string_view text_;
  const std::string& file_;
  GraphBuilder builder_;
  std::vector<Token> tokens_;
  size_t p_ = 0;
  std::unordered_map<std::string_view, Expr> scope_;
  std::unordered_set<std::string_view> spelled_;
  int next_unnamed_ = 0;
  const DimResolver* dims_;
  std::map<std::string, int64_t> named_sizes_;
};

}  // namespace

Graph ParseRelay(std::string_view text, const std::string& file_name, const Limits& limits,
                 const DimResolver* dims) {
  return RelayParser(text, file_name, limits, dims).Parse();
}

}  // namespace fusetune
