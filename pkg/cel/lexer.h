#ifndef BERTH_PKG_CEL_LEXER_H_
#define BERTH_PKG_CEL_LEXER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace berth::cel {

enum class Tok {
  kEof,
  kIdent,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kDot,
  kComma,
  kColon,
  kQuestion,
  kOr,
  kAnd,
  kNot,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kIn,
  kTrue,
  kFalse,
  kNull,
};

struct Token {
  Tok kind = Tok::kEof;
  int32_t offset = 0;
  std::string_view text;  // the token as written
  std::string value;      // kString/kBytes: the unescaped contents; kIdent: the name
  uint64_t u = 0;         // kInt (magnitude; the sign is the parser's) and kUint
  double d = 0;           // kDouble
};

// Splits `input` into tokens. On a malformed token returns false with the byte offset and the
// reason.
bool Lex(std::string_view input, std::vector<Token>* tokens, int32_t* error_offset,
         std::string* error);

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_LEXER_H_
