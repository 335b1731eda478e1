#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CEL_SELECTOR_EVALUATOR_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CEL_SELECTOR_EVALUATOR_H_

#include <cstddef>
#include <string_view>

#include "pkg/api/dra_types.h"
#include "pkg/cel/cel.h"
#include "pkg/plugins/dynamicresources/device_selector.h"

namespace berth::plugins::dynamicresources {

// Evaluates device selectors with pkg/cel, compiling each expression once (a bounded cache, as
// kube-scheduler keeps one per plugin). Runtime errors are worded as upstream words them for the
// allocator, including its hint for a missing map key.
//
// Thread-safety: Evaluate may be called concurrently (the cache is thread-safe and a compiled
// program is immutable).
class CelSelectorEvaluator : public DeviceSelectorEvaluator {
 public:
  // kube-scheduler's DynamicResources plugin caches 10 compiled selectors.
  static constexpr size_t kDefaultCacheSize = 10;

  explicit CelSelectorEvaluator(size_t cache_size = kDefaultCacheSize) : cache_(cache_size) {}

  SelectorResult Evaluate(std::string_view expression, std::string_view driver,
                          const api::Device& device) const override;

 private:
  mutable cel::Cache cache_;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CEL_SELECTOR_EVALUATOR_H_
