#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DEVICE_SELECTOR_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DEVICE_SELECTOR_H_

#include <optional>
#include <string>
#include <string_view>

#include "pkg/api/dra_types.h"

namespace berth::plugins::dynamicresources {

// The outcome of evaluating one CEL device selector against one device.
struct SelectorResult {
  enum class Failure {
    kNone,
    // The expression does not compile (e.g. an apiserver of a newer release stored it).
    kCompile,
    // The expression compiled but failed while evaluating (e.g. a missing map key).
    kRuntime,
  };
  bool matches = false;
  Failure failure = Failure::kNone;
  // The evaluator's description of the failure, already in the words the user should see
  // (upstream's cel package enhances runtime errors before the allocator wraps them).
  std::string error;

  static SelectorResult Match(bool matches) { return SelectorResult{matches, Failure::kNone, {}}; }
  static SelectorResult CompileError(std::string error) {
    return SelectorResult{false, Failure::kCompile, std::move(error)};
  }
  static SelectorResult RuntimeError(std::string error) {
    return SelectorResult{false, Failure::kRuntime, std::move(error)};
  }
};

// Evaluates DRA device selectors (CEL). The allocator reaches CEL only through this interface,
// so the evaluator (pkg/cel) can cache compiled programs as it sees fit.
//
// Thread-safety: Evaluate is called concurrently from Filter workers (one allocation per node),
// so implementations must be safe for concurrent const calls.
class DeviceSelectorEvaluator {
 public:
  virtual ~DeviceSelectorEvaluator() = default;
  // `driver` is the driver of the slice the device is published in (CEL's device.driver).
  virtual SelectorResult Evaluate(std::string_view expression, std::string_view driver,
                                  const api::Device& device) const = 0;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DEVICE_SELECTOR_H_
