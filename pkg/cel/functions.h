#ifndef BERTH_PKG_CEL_FUNCTIONS_H_
#define BERTH_PKG_CEL_FUNCTIONS_H_

// The function overloads of the selector environment: CEL's standard operators and
// conversions, the strings (v2), lists (v3) and sets extensions, and Kubernetes' regex,
// lists (v1), quantity and semver libraries. One table serves the checker (signatures) and
// the evaluator (implementations and call costs), so the two cannot disagree.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/cel/types.h"
#include "pkg/cel/value.h"

namespace re2 {
class RE2;
}

namespace berth::cel {

// The state of one evaluation: its cost so far against the limit, and the bytes of strings,
// lists and maps it has built against a fixed bound (cost alone does not bound memory: CEL
// charges one unit for a list concatenation of any size).
class EvalBudget {
 public:
  static constexpr uint64_t kMaxAllocatedBytes = uint64_t{64} << 20;

  explicit EvalBudget(uint64_t limit) : limit_(limit) {}
  // Adds `units`; false once the total passes the limit (it stays exceeded).
  bool Charge(uint64_t units);
  bool Allocate(uint64_t bytes);
  // Whether `units` more would stay within the limit.
  bool Fits(uint64_t units) const { return units <= limit_ && cost_ <= limit_ - units; }
  uint64_t cost() const { return cost_; }
  // Either bound is passed: the evaluation is cancelled and unwinds (no `||` absorbs it).
  bool exceeded() const { return exceeded_ || out_of_memory_; }
  bool out_of_memory() const { return out_of_memory_; }
  // The message the cancelled evaluation reports.
  const char* cancellation() const;

 private:
  uint64_t cost_ = 0;
  uint64_t limit_;
  uint64_t allocated_ = 0;
  bool exceeded_ = false;
  bool out_of_memory_ = false;
};

inline constexpr const char* kCostLimitMessage = "operation cancelled: actual cost limit exceeded";
inline constexpr const char* kMemoryLimitMessage =
    "operation cancelled: the evaluation built more than 64 MiB of values";

struct Overload {
  const char* id;
  std::string function;
  bool member;
  std::vector<TypePtr> params;
  TypePtr result;
  // Computes the call from evaluated, non-error arguments whose runtime kinds match params.
  Value (*impl)(const std::vector<Value>& args, EvalBudget& budget);
};

// The overloads of `function` (global and member alike); nullptr for an unknown name.
const std::vector<const Overload*>* FindOverloads(std::string_view function);

// True for functions the v1.37 environment declares but Berth does not implement (URL, IP,
// CIDR, format, timestamps, durations, optional values, authorization); the checker refuses
// them by name.
bool IsUnsupportedFunction(std::string_view function);

// Whether a value of this runtime kind may be passed where the signature says `t`.
bool RuntimeMatches(const TypePtr& t, const Value& v);

// The cost CEL charges for one call of `function` with these arguments and result. `resolved`:
// the checker found exactly one overload (cel-go's per-overload costs apply only then).
uint64_t CallCost(std::string_view function, bool resolved, const std::vector<Value>& args,
                  const Value& result);

// For the calls whose work grows faster than their inputs (distinct(), the sets functions):
// the work, charged before the call so that an over-limit call is refused instead of run.
uint64_t WorkBound(std::string_view function, const std::vector<Value>& args);

// Compiles a regular expression of matches(), find() or findAll(); nullptr and Go's wording of
// the error ("error parsing regexp: missing closing ): `(`") when it is malformed.
std::shared_ptr<const re2::RE2> CompileRegex(const std::string& pattern, std::string* error);

// matches(), find() or findAll() with an already compiled pattern (a literal one is compiled
// once, when the expression is).
Value RegexCall(std::string_view function, const re2::RE2& re, const std::vector<Value>& args,
                EvalBudget& budget);

// The Go type name cel-go shows for a value in "got '...', expected iterable type".
std::string GoTypeName(const Value& v);

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_FUNCTIONS_H_
