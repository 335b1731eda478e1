#ifndef BERTH_PKG_CEL_EVAL_H_
#define BERTH_PKG_CEL_EVAL_H_

#include <vector>

#include "pkg/cel/ast.h"
#include "pkg/cel/functions.h"

namespace berth::cel {

// Evaluates a checked expression. `slots` holds the variables (the device at kDeviceSlot) and
// has as many entries as the checker reported. The cost is charged to `budget`; once it is
// exceeded the evaluation unwinds and its value is meaningless (the caller reports the limit).
Value Evaluate(const Expr& expr, std::vector<Value>* slots, EvalBudget* budget);

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_EVAL_H_
