#pragma once
// Tokens of Relay text. The whole text is split once into a vector (the parser needs two tokens of
// lookahead, and a pre-scan of every `%name` to number unnamed nodes); tokens are views into the
// text, so the text must outlive them.
#include <string_view>
#include <vector>

#include "ir/text/source_error.h"

namespace fusetune::text {

enum class TokenKind {
  kEnd,         // end of input
  kIdent,       // fn, def, let, Tensor, float32, True, nn.batch_matmul, axis, ...
  kLocal,       // %x, %0, %input.1   (name() drops the '%')
  kGlobal,      // @main              (name() drops the '@')
  kInt,         // 12, -1, 2i64       (the suffix, if any, is in `suffix`)
  kFloat,       // 0.5f, 1e-12f, 3f, -1.5, inff
  kString,      // "0.0.5"            (name() drops the quotes; no escapes)
  kPunct,       // ( ) [ ] { } , : ; = . # -> ?
  kAnnotation,  // /* ty=Tensor[...] */  (`body` is the text after "ty=", up to "*/")
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view raw;     // the full spelling, as written
  std::string_view suffix;  // numbers: "f", "f32", "f16", "bf16", "i32", "i64" or empty
  std::string_view body;    // kAnnotation: the type text
  SourcePos pos;            // where `raw` starts
  SourcePos body_pos;       // kAnnotation: where `body` starts

  std::string_view name() const;  // kLocal/kGlobal/kString without the sigil or quotes
  bool Is(std::string_view punct) const { return kind == TokenKind::kPunct && raw == punct; }
  bool IsIdent(std::string_view word) const { return kind == TokenKind::kIdent && raw == word; }
};

// How a token reads in an error message: 'x', '%0', or "end of input".
std::string Describe(const Token& token);

// Splits text[0, size) into tokens ending with one kEnd token. Comments (// and nested /* */) are
// dropped except `/* ty=... */`, which becomes a kAnnotation. `start` is the position of text[0]
// (the parser re-lexes annotation bodies in place). Throws a positioned UserError on bad input.
std::vector<Token> Lex(std::string_view text, std::string_view file, SourcePos start = {});

}  // namespace fusetune::text
