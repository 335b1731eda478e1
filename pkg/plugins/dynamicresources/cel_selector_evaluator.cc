#include "pkg/plugins/dynamicresources/cel_selector_evaluator.h"

#include <string>
#include <utility>

namespace berth::plugins::dynamicresources {
namespace {

cel::AttributeValue ToCel(const api::DeviceAttribute& attribute) {
  switch (attribute.kind) {
    case api::DeviceAttribute::Kind::kInt:
      return attribute.int_value;
    case api::DeviceAttribute::Kind::kBool:
      return attribute.bool_value;
    case api::DeviceAttribute::Kind::kVersion:
      return cel::Version{attribute.string_value};
    case api::DeviceAttribute::Kind::kString:
      break;
  }
  return attribute.string_value;
}

// Upstream adds advice to a missing-key error, the most common mistake in selectors.
std::string EnhanceRuntimeError(std::string error) {
  if (error.find("no such key:") != std::string::npos) {
    error +=
        ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
        "with has() for optional fields";
  }
  return error;
}

}  // namespace

SelectorResult CelSelectorEvaluator::Evaluate(std::string_view expression, std::string_view driver,
                                              const api::Device& device) const {
  cel::CompileResult compiled = cache_.GetOrCompile(expression);
  if (!compiled.program) {
    return SelectorResult::CompileError(std::move(compiled.error));
  }
  cel::DeviceView view;
  view.driver = std::string(driver);
  view.allow_multiple_allocations = device.allow_multiple_allocations;
  for (const auto& [name, attribute] : device.attributes) {
    view.attributes.emplace(name, ToCel(attribute));
  }
  for (const auto& [name, capacity] : device.capacity) {
    view.capacity.emplace(name, capacity.value);
  }
  cel::EvalResult result = cel::Matches(*compiled.program, view);
  if (!result.error.empty()) {
    return SelectorResult::RuntimeError(EnhanceRuntimeError(std::move(result.error)));
  }
  return SelectorResult::Match(result.matches);
}

}  // namespace berth::plugins::dynamicresources
