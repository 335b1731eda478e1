#ifndef BERTH_PKG_CEL_AST_H_
#define BERTH_PKG_CEL_AST_H_

// The parsed expression. The parser builds it; the checker annotates it (types, variable
// slots, candidate overloads) once; after that it is read-only and shared by every evaluation.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pkg/cel/types.h"
#include "pkg/cel/value.h"

namespace re2 {
class RE2;
}

namespace berth::cel {

struct Overload;

enum class ExprKind {
  kLiteral,
  kIdent,
  kSelect,    // args[0].name
  kPresence,  // has(args[0].name)
  kCall,      // name(args...) or, when `member`, args[0].name(args[1...])
  kList,      // [args...]
  kMap,       // {args[0]: args[1], args[2]: args[3], ...}
  kComprehension,
};

// The macros, each evaluated directly rather than expanded into CEL's generic fold.
enum class Macro {
  kNone,
  kAll,            // range.all(var, args[1])          / range.all(var, var2, args[1])
  kExists,         // range.exists(var, args[1])       / two-variable form
  kExistsOne,      // range.exists_one(var, args[1])   / existsOne, two-variable forms
  kMap,            // range.map(var, args[1])          / range.map(var, args[1], args[2])
  kFilter,         // range.filter(var, args[1])
  kTransformList,  // range.transformList(i, v, args[1][, args[2]])
  kTransformMap,   // range.transformMap(k, v, args[1][, args[2]])
  kBind,           // cel.bind(var, args[0], args[1])
  kSortBy,         // range.sortBy(var, args[1]): range ordered by the keys args[1] computes
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int32_t offset = 0;  // of the expression's first token, in bytes
  int32_t height = 1;  // of the tree below and including this node; the parser bounds it
  Value literal;
  std::string name;  // identifier, field or function
  bool member = false;
  std::vector<std::unique_ptr<Expr>> args;

  Macro macro = Macro::kNone;
  std::string var;   // comprehension variable (the index or key in two-variable forms)
  std::string var2;  // the value variable of two-variable forms; empty otherwise
  // Filled by the parser for two-argument map (args[1] filter, args[2] transform) forms.
  bool has_filter = false;

  // Checker annotations.
  TypePtr type;
  int slot = -1;  // kIdent: the variable slot read; kComprehension: the first slot written
  std::vector<const Overload*> overloads;  // kCall: candidates, tried in order at runtime
  // kCall of `in` over a literal list of scalars: CEL plans it as a set lookup that costs
  // nothing.
  bool free_call = false;
  // kCall of matches/find/findAll with a literal pattern: the pattern, compiled once.
  std::shared_ptr<const re2::RE2> regex;
};

using ExprPtr = std::unique_ptr<Expr>;

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_AST_H_
