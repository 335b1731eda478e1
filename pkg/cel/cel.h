#ifndef BERTH_PKG_CEL_CEL_H_
#define BERTH_PKG_CEL_CEL_H_

// The CEL environment of DRA device selectors (DeviceClass and ResourceClaim `selectors[].cel`),
// as kube-scheduler v1.37 compiles them: the stored-expressions environment with the
// `device` variable (driver, attributes, capacity, allowMultipleAllocations), the Kubernetes
// base libraries a selector can reach and a runtime cost limit of 1,000,000.
//
// Compile() parses and type-checks an expression once; Matches() evaluates the Program against
// one device. A Program is immutable: any number of threads may evaluate it at once.

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "pkg/api/quantity.h"

namespace berth::cel {

// The runtime cost limit of one selector evaluation (resource.k8s.io's
// CELSelectorExpressionMaxCost).
inline constexpr uint64_t kSelectorMaxCost = 1000000;

// A semantic version attribute is carried as its text and parsed when the device is evaluated,
// as upstream does; a text that is no semantic version fails the evaluation.
struct Version {
  std::string text;
};

// One device attribute: a scalar, or (resource.k8s.io's list-typed attributes) a list of one
// kind of scalar.
using AttributeValue =
    std::variant<bool, int64_t, std::string, Version, std::vector<bool>, std::vector<int64_t>,
                 std::vector<std::string>, std::vector<Version>>;

// The device an expression is evaluated against. Attribute and capacity names are qualified
// names as ResourceSlices carry them: "domain/name", or a bare "name" whose domain is the
// driver's name.
struct DeviceView {
  std::string driver;
  bool allow_multiple_allocations = false;
  std::map<std::string, AttributeValue> attributes;
  std::map<std::string, api::Quantity> capacity;
};

namespace internal {
struct CompiledExpr;
}

// A compiled selector. Copies share the immutable compiled form.
class Program {
 public:
  explicit Program(std::shared_ptr<const internal::CompiledExpr> expr) : expr_(std::move(expr)) {}
  const internal::CompiledExpr& expr() const { return *expr_; }

 private:
  std::shared_ptr<const internal::CompiledExpr> expr_;
};

struct CompileResult {
  std::optional<Program> program;
  // Empty when `program` is set; otherwise the reason, worded as upstream's
  // ("compilation failed: ERROR: <input>:1:1: ...", "must evaluate to bool ...").
  std::string error;
};

struct EvalResult {
  bool matches = false;
  // Empty on success; otherwise the runtime error ("no such key: model", "division by zero",
  // "operation cancelled: actual cost limit exceeded", ...). `matches` is false then.
  std::string error;
  // The cost the evaluation used, in CEL's cost units.
  uint64_t cost = 0;
};

CompileResult Compile(std::string_view expression);

// Evaluates `program` against `device`, stopping with an error once the cost passes `cost_limit`.
EvalResult Matches(const Program& program, const DeviceView& device,
                   uint64_t cost_limit = kSelectorMaxCost);

// A bounded cache of compiled selectors keyed by their text, least recently used evicted first.
// Only successful compilations are kept (a failing expression is compiled again next time, as
// upstream's cache does). Thread-safe.
class Cache {
 public:
  explicit Cache(size_t max_entries);
  CompileResult GetOrCompile(std::string_view expression);

 private:
  using Entry = std::pair<std::string, Program>;
  size_t max_entries_;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first; guarded by mu_
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // keys view lru_
};

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_CEL_H_
