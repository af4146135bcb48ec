#include "ir/text/relay_lexer.h"

#include <string>

namespace fusetune::text {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsIdentStart(char c) { return IsAlpha(c) || c == '_'; }
bool IsIdentChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.'; }

bool IsFloatSuffix(std::string_view s) {
  return s == "f" || s == "f32" || s == "f16" || s == "bf16";
}
bool IsIntSuffix(std::string_view s) { return s == "i32" || s == "i64"; }

class Lexer {
 public:
  Lexer(std::string_view text, std::string_view file, SourcePos start)
      : text_(text),
        file_(file),
        line_(start.line),
        first_line_(start.line),
        first_col_offset_(start.col - 1) {}

  std::vector<Token> Run() {
    std::vector<Token> tokens;
    tokens.reserve(text_.size() / 4 + 1);
    while (true) {
      SkipSpaceAndComments(tokens);
      Token t;
      t.pos = Pos(i_);
      if (i_ >= text_.size()) {
        t.kind = TokenKind::kEnd;
        t.raw = text_.substr(text_.size());
        tokens.push_back(t);
        return tokens;
      }
      LexOne(t);
      tokens.push_back(t);
    }
  }

 private:
  char At(size_t i) const { return i < text_.size() ? text_[i] : '\0'; }

  SourcePos Pos(size_t i) const {
    int col = static_cast<int>(i - line_start_) + 1;
    if (line_ == first_line_) col += first_col_offset_;
    return {line_, col};
  }

  // Advances over text_[i_, end), counting newlines.
  void AdvanceTo(size_t end) {
    for (; i_ < end; ++i_) {
      if (text_[i_] == '\n') {
        ++line_;
        line_start_ = i_ + 1;
      }
    }
  }

  void SkipSpaceAndComments(std::vector<Token>& tokens) {
    while (i_ < text_.size()) {
      char c = text_[i_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        AdvanceTo(i_ + 1);
      } else if (c == '/' && At(i_ + 1) == '/') {
        size_t end = text_.find('\n', i_);
        AdvanceTo(end == std::string_view::npos ? text_.size() : end);
      } else if (c == '/' && At(i_ + 1) == '*') {
        BlockComment(tokens);
      } else {
        return;
      }
    }
  }

  // `/* ty=T */` becomes an annotation token; other block comments nest and are dropped.
  void BlockComment(std::vector<Token>& tokens) {
    SourcePos open = Pos(i_);
    size_t j = i_ + 2;
    while (At(j) == ' ' || At(j) == '\t') ++j;
    if (text_.substr(j, 3) == "ty=") {
      size_t close = text_.find("*/", j);
      if (close == std::string_view::npos) ThrowAt(file_, open, "unterminated comment");
      Token t;
      t.kind = TokenKind::kAnnotation;
      t.pos = open;
      size_t begin = i_;
      size_t body = j + 3;
      AdvanceTo(body);
      t.body_pos = Pos(body);
      t.body = text_.substr(body, close - body);
      t.raw = text_.substr(begin, close + 2 - begin);
      AdvanceTo(close + 2);
      tokens.push_back(t);
      return;
    }
    int depth = 0;
    size_t k = i_;
    while (k < text_.size()) {
      if (text_[k] == '/' && At(k + 1) == '*') {
        ++depth;
        k += 2;
      } else if (text_[k] == '*' && At(k + 1) == '/') {
        k += 2;
        if (--depth == 0) {
          AdvanceTo(k);
          return;
        }
      } else {
        ++k;
      }
    }
    ThrowAt(file_, open, "unterminated comment");
  }

  void LexOne(Token& t) {
    size_t b = i_;
    char c = text_[i_];
    if (IsDigit(c) || (c == '-' && IsDigit(At(i_ + 1)))) return Number(t);
    if (c == '-' && text_.substr(i_ + 1, 4) == "inff") {
      t.kind = TokenKind::kFloat;
      t.raw = text_.substr(b, 5);
      t.suffix = t.raw.substr(4);
      i_ += 5;
      return;
    }
    if (IsIdentStart(c)) {
      size_t j = i_ + 1;
      while (IsIdentChar(At(j))) ++j;
      t.kind = TokenKind::kIdent;
      t.raw = text_.substr(b, j - b);
      if (t.raw == "inff" || t.raw == "nanf") {
        t.kind = TokenKind::kFloat;
        t.suffix = t.raw.substr(3);
      }
      i_ = j;
      return;
    }
    if (c == '%' || c == '@') {
      size_t j = i_ + 1;
      while (IsIdentChar(At(j))) ++j;
      if (j == i_ + 1) {
        ThrowAt(file_, t.pos,
                std::string("expected a name after '") + c + "' but found " + DescribeChar(At(j)));
      }
      t.kind = c == '%' ? TokenKind::kLocal : TokenKind::kGlobal;
      t.raw = text_.substr(b, j - b);
      i_ = j;
      return;
    }
    if (c == '"') {
      size_t j = i_ + 1;
      while (j < text_.size() && text_[j] != '"' && text_[j] != '\n') ++j;
      if (At(j) != '"') ThrowAt(file_, t.pos, "unterminated string");
      t.kind = TokenKind::kString;
      t.raw = text_.substr(b, j + 1 - b);
      i_ = j + 1;
      return;
    }
    if (c == '-' && At(i_ + 1) == '>') {
      t.kind = TokenKind::kPunct;
      t.raw = text_.substr(b, 2);
      i_ += 2;
      return;
    }
    static constexpr std::string_view kPunct = "()[]{},:;=.#?";  // ? is Relay's Any dimension
    if (kPunct.find(c) != std::string_view::npos) {
      t.kind = TokenKind::kPunct;
      t.raw = text_.substr(b, 1);
      i_ += 1;
      return;
    }
    ThrowAt(file_, t.pos, "unexpected character " + DescribeChar(c));
  }

  // [-]digits[.digits][e[+-]digits][suffix]
  void Number(Token& t) {
    size_t b = i_;
    size_t j = i_;
    if (text_[j] == '-') ++j;
    while (IsDigit(At(j))) ++j;
    bool is_float = false;
    if (At(j) == '.' && IsDigit(At(j + 1))) {
      is_float = true;
      ++j;
      while (IsDigit(At(j))) ++j;
    }
    if ((At(j) == 'e' || At(j) == 'E') &&
        (IsDigit(At(j + 1)) || ((At(j + 1) == '+' || At(j + 1) == '-') && IsDigit(At(j + 2))))) {
      is_float = true;
      j += 2;
      while (IsDigit(At(j))) ++j;
    }
    size_t digits_end = j;
    while (IsAlpha(At(j)) || IsDigit(At(j))) ++j;
    t.raw = text_.substr(b, j - b);
    t.suffix = text_.substr(digits_end, j - digits_end);
    if (t.suffix.empty()) {
      t.kind = is_float ? TokenKind::kFloat : TokenKind::kInt;
    } else if (IsFloatSuffix(t.suffix)) {
      t.kind = TokenKind::kFloat;
    } else if (IsIntSuffix(t.suffix) && !is_float) {
      t.kind = TokenKind::kInt;
    } else {
      ThrowAt(file_, t.pos, "invalid number '" + std::string(t.raw) + "'");
    }
    i_ = j;
  }

  static std::string DescribeChar(char c) {
    if (c == '\0') return "end of input";
    if (c == '\n') return "end of line";
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      char buf[16];
      snprintf(buf, sizeof buf, "byte 0x%02x", static_cast<unsigned char>(c));
      return buf;
    }
    return std::string("'") + c + "'";
  }

  std::string_view text_;
  std::string_view file_;
  size_t i_ = 0;
  int line_;
  size_t line_start_ = 0;
  int first_line_;
  int first_col_offset_;
};

}  // namespace

std::string_view Token::name() const {
  switch (kind) {
    case TokenKind::kLocal:
    case TokenKind::kGlobal:
      return raw.substr(1);
    case TokenKind::kString:
      return raw.substr(1, raw.size() - 2);
    default:
      return raw;
  }
}

std::string Describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kAnnotation:
      return "a type annotation";
    default:
      return "'" + std::string(token.raw) + "'";
  }
}

std::vector<Token> Lex(std::string_view text, std::string_view file, SourcePos start) {
  return Lexer(text, file, start).Run();
}

}  // namespace fusetune::text
