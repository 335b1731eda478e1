#ifndef BERTH_PKG_CEL_PARSER_H_
#define BERTH_PKG_CEL_PARSER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "pkg/cel/ast.h"

namespace berth::cel {

// The bounds the parser holds a hostile expression to. CEL's own parser refuses nesting past
// 250 levels and inputs past 100,000 code points; the tree height bound also covers long
// operator chains, which CEL parses without nesting, so that the checker and evaluator
// (recursive over the tree) never run out of stack.
inline constexpr int kMaxNesting = 250;
inline constexpr int kMaxHeight = 500;
inline constexpr size_t kMaxCodePoints = 100000;

struct ParseError {
  int32_t offset = 0;
  std::string message;
  // The message stands alone, without a source location: upstream reports it when it builds
  // the program (a literal that cannot convert, a malformed literal pattern), not as an issue.
  bool plain = false;
};

// Parses `input` with CEL's grammar and expands the macros (has, all, exists, exists_one,
// map, filter, the two-variable comprehensions, cel.bind). Returns nullptr and fills `error`
// on failure.
ExprPtr Parse(std::string_view input, ParseError* error);

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_PARSER_H_
