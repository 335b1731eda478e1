#ifndef BERTH_TEST_TESTING_FAKE_DEVICE_SELECTOR_H_
#define BERTH_TEST_TESTING_FAKE_DEVICE_SELECTOR_H_

#include <optional>
#include <regex>
#include <string>
#include <string_view>

#include "pkg/api/dra_types.h"
#include "pkg/api/quantity.h"
#include "pkg/plugins/dynamicresources/device_selector.h"

namespace berth::testing {

// A stand-in for the CEL evaluator of DRA device selectors in the allocator's unit tests. It
// recognises only a fixed set of expression shapes, the ones the allocator tests use; the real
// evaluator (CelSelectorEvaluator over pkg/cel) replaces it everywhere else, and the allocator
// table runs every case with both so that they are known to agree. Shapes:
//   true | false
//   device.driver == "D"
//   device.allowMultipleAllocations == true|false
//   device.attributes["DOMAIN"].NAME              (bool attribute)
//   device.attributes["DOMAIN"]["NAME"]           (bool attribute)
//   device.attributes["DOMAIN"].NAME == "S"       (string or version attribute)
//   device.capacity["DOMAIN"].NAME.compareTo(quantity("Q")) >= 0
//   device.capacity["DOMAIN"]["NAME"].compareTo(quantity("Q")) >= 0
//   A || B, A && B                                (each side one of the above)
// A missing attribute or capacity is a runtime error ("no such key: NAME"), as in CEL; anything
// else does not compile ("undeclared reference to 'EXPR'", worded as CEL's checker words it).
class FakeDeviceSelectorEvaluator : public plugins::dynamicresources::DeviceSelectorEvaluator {
 public:
  using SelectorResult = plugins::dynamicresources::SelectorResult;

  SelectorResult Evaluate(std::string_view expression_view, std::string_view driver,
                          const api::Device& device) const override {
    const std::string expression(expression_view);
    // "a || b": true when either side is (an error on one side does not matter then).
    if (const size_t bar = expression.find(" || "); bar != std::string::npos) {
      SelectorResult left = Evaluate(expression.substr(0, bar), driver, device);
      SelectorResult right = Evaluate(expression.substr(bar + 4), driver, device);
      if (left.matches || right.matches) {
        return SelectorResult::Match(true);
      }
      return left.failure != SelectorResult::Failure::kNone ? left : right;
    }
    // "a && b": false when either side is, an error when neither is false and one fails.
    if (const size_t amp = expression.find(" && "); amp != std::string::npos) {
      SelectorResult left = Evaluate(expression.substr(0, amp), driver, device);
      SelectorResult right = Evaluate(expression.substr(amp + 4), driver, device);
      const auto is_false = [](const SelectorResult& r) {
        return r.failure == SelectorResult::Failure::kNone && !r.matches;
      };
      if (is_false(left) || is_false(right)) {
        return SelectorResult::Match(false);
      }
      return left.failure != SelectorResult::Failure::kNone ? left : right;
    }
    std::smatch m;
    if (expression == "true" || expression == "false") {
      return SelectorResult::Match(expression == "true");
    }
    static const std::regex kDriver(R"re(^device\.driver == "([^"]*)"$)re");
    if (std::regex_match(expression, m, kDriver)) {
      return SelectorResult::Match(m[1].str() == driver);
    }
    static const std::regex kMulti(R"re(^device\.allowMultipleAllocations == (true|false)$)re");
    if (std::regex_match(expression, m, kMulti)) {
      return SelectorResult::Match(device.allow_multiple_allocations == (m[1] == "true"));
    }
    static const std::regex kBoolAttribute(
        R"re(^device\.attributes\["([^"]*)"\](?:\.(\w+)|\["([^"]+)"\])$)re");
    if (std::regex_match(expression, m, kBoolAttribute)) {
      const std::string name = m[2].matched ? m[2].str() : m[3].str();
      const api::DeviceAttribute* attribute = Attribute(device, driver, m[1].str(), name);
      if (attribute == nullptr) {
        return SelectorResult::RuntimeError("no such key: " + name);
      }
      if (attribute->kind != api::DeviceAttribute::Kind::kBool) {
        return SelectorResult::RuntimeError("no such overload");
      }
      return SelectorResult::Match(attribute->bool_value);
    }
    static const std::regex kStringAttribute(
        R"re(^device\.attributes\["([^"]*)"\]\.(\w+) == "([^"]*)"$)re");
    if (std::regex_match(expression, m, kStringAttribute)) {
      const api::DeviceAttribute* attribute = Attribute(device, driver, m[1].str(), m[2].str());
      if (attribute == nullptr) {
        return SelectorResult::RuntimeError("no such key: " + m[2].str());
      }
      return SelectorResult::Match((attribute->kind == api::DeviceAttribute::Kind::kString ||
                                    attribute->kind == api::DeviceAttribute::Kind::kVersion) &&
                                   attribute->string_value == m[3].str());
    }
    static const std::regex kCapacity(
        R"re(^device\.capacity\["([^"]*)"\](?:\.(\w+)|\["([^"]+)"\])\.compareTo\(quantity\("([^"]*)"\)\) >= 0$)re");
    if (std::regex_match(expression, m, kCapacity)) {
      const std::string name = m[2].matched ? m[2].str() : m[3].str();
      const api::DeviceCapacity* capacity = Capacity(device, driver, m[1].str(), name);
      if (capacity == nullptr) {
        return SelectorResult::RuntimeError("no such key: " + name);
      }
      return SelectorResult::Match(
          api::Quantity::Compare(capacity->value, api::Quantity::Parse(m[4].str())) >= 0);
    }
    return SelectorResult::CompileError(
        "compilation failed: ERROR: <input>:1:1: undeclared reference to '" + expression +
        "' (in container '')");
  }

 private:
  // CEL sees a device's attributes grouped by domain; a name without a domain belongs to the
  // driver's.
  template <typename Map>
  static const typename Map::mapped_type* Find(const Map& map, std::string_view driver,
                                               const std::string& domain, const std::string& name) {
    if (auto it = map.find(domain + "/" + name); it != map.end()) {
      return &it->second;
    }
    if (domain == driver) {
      if (auto it = map.find(name); it != map.end()) {
        return &it->second;
      }
    }
    return nullptr;
  }
  static const api::DeviceAttribute* Attribute(const api::Device& device, std::string_view driver,
                                               const std::string& domain, const std::string& name) {
    return Find(device.attributes, driver, domain, name);
  }
  static const api::DeviceCapacity* Capacity(const api::Device& device, std::string_view driver,
                                             const std::string& domain, const std::string& name) {
    return Find(device.capacity, driver, domain, name);
  }
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_FAKE_DEVICE_SELECTOR_H_
