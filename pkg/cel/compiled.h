#ifndef BERTH_PKG_CEL_COMPILED_H_
#define BERTH_PKG_CEL_COMPILED_H_

#include "pkg/cel/ast.h"

namespace berth::cel::internal {

// A checked expression: read-only after Compile() returns.
struct CompiledExpr {
  ExprPtr root;
  int slots = 0;
};

}  // namespace berth::cel::internal

#endif  // BERTH_PKG_CEL_COMPILED_H_
