#ifndef BERTH_PKG_CEL_CHECKER_H_
#define BERTH_PKG_CEL_CHECKER_H_

#include "pkg/cel/ast.h"
#include "pkg/cel/parser.h"

namespace berth::cel {

// The slot the `device` variable is read from; comprehension variables follow it.
inline constexpr int kDeviceSlot = 0;

// Type-checks `root` in the selector environment and annotates it (types, variable slots,
// candidate overloads). On failure returns false with the first error, worded as cel-go's
// checker words it. `*slots` receives the number of variable slots an evaluation needs.
bool Check(Expr* root, int* slots, ParseError* error);

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_CHECKER_H_
