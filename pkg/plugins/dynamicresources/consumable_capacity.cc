#include "pkg/plugins/dynamicresources/consumable_capacity.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace berth::plugins::dynamicresources {
namespace {

using api::Quantity;

constexpr std::string_view kNotRepresentable =
    "capacity request cannot be represented in the device's range arithmetic";

}  // namespace

std::optional<int64_t> ExactMilliValue(const Quantity& q) {
  const int64_t milli = q.MilliValue();
  if (Quantity::Compare(q, Quantity::FromMilli(milli)) != 0) {
    return std::nullopt;
  }
  return milli;
}

bool UseMilliArithmetic(const api::CapacityRequestPolicyRange& range, bool fractional_range) {
  if (!fractional_range) {
    return false;
  }
  if (!ExactMilliValue(range.min)) {
    return false;
  }
  if (range.max && !ExactMilliValue(*range.max)) {
    return false;
  }
  if (range.step) {
    std::optional<int64_t> step = ExactMilliValue(*range.step);
    if (!step || *step < 1) {
      return false;
    }
  }
  return true;
}

namespace {

// min + step * ceil((requested - min) / step), with every int64 operation checked.
std::optional<int64_t> RoundUpToStep(int64_t requested, int64_t min, int64_t step) {
  int64_t added = 0;
  if (step <= 0 || __builtin_sub_overflow(requested, min, &added)) {
    return std::nullopt;
  }
  int64_t n = added / step;
  if (added % step != 0) {
    ++n;
  }
  int64_t scaled = 0;
  int64_t result = 0;
  if (__builtin_mul_overflow(step, n, &scaled) || __builtin_add_overflow(min, scaled, &result)) {
    return std::nullopt;
  }
  return result;
}

CapacityAmount RoundUpRange(const Quantity& requested, const api::CapacityRequestPolicyRange& range,
                            bool fractional_range) {
  if (Quantity::Compare(requested, range.min) < 0) {
    return {range.min, std::nullopt};
  }
  if (!range.step) {
    return {requested, std::nullopt};
  }
  if (UseMilliArithmetic(range, fractional_range)) {
    std::optional<int64_t> requested_milli = ExactMilliValue(requested);
    if (!requested_milli) {
      return {{},
              std::string(kNotRepresentable) + ": request " + requested.ToString() +
                  " is not a representable milli value"};
    }
    std::optional<int64_t> rounded =
        RoundUpToStep(*requested_milli, range.min.MilliValue(), range.step->MilliValue());
    if (!rounded) {
      return {{},
              std::string(kNotRepresentable) + ": rounding request " + requested.ToString() +
                  " up to the next step passes the milli-value range"};
    }
    // In the step's format, as upstream writes the rounded value.
    return {Quantity::FromMilli(*rounded, range.step->format()), std::nullopt};
  }
  if (Quantity::Compare(requested, Quantity::FromValue(std::numeric_limits<int64_t>::max())) > 0) {
    return {
        {},
        std::string(kNotRepresentable) + ": request " + requested.ToString() + " exceeds MaxInt64"};
  }
  std::optional<int64_t> rounded =
      RoundUpToStep(requested.Value(), range.min.Value(), range.step->Value());
  if (!rounded) {
    return {{},
            std::string(kNotRepresentable) + ": rounding request " + requested.ToString() +
                " up to the next step passes MaxInt64"};
  }
  return {Quantity::FromValue(*rounded, range.step->format()), std::nullopt};
}

// The smallest valid value at or above the request; the request itself when none is.
Quantity RoundUpValidValues(const Quantity& requested, const std::vector<Quantity>& valid) {
  for (const Quantity& value : valid) {
    if (Quantity::Compare(requested, value) <= 0) {
      return value;
    }
  }
  return requested;
}

}  // namespace

CapacityAmount ConsumedAmount(const Quantity* requested, const api::DeviceCapacity& capacity,
                              bool fractional_range) {
  const std::optional<api::CapacityRequestPolicy>& policy = capacity.request_policy;
  if (requested == nullptr) {
    if (policy && policy->default_value) {
      return {*policy->default_value, std::nullopt};
    }
    return {capacity.value, std::nullopt};
  }
  if (!policy) {
    return {*requested, std::nullopt};
  }
  if (policy->valid_range) {
    return RoundUpRange(*requested, *policy->valid_range, fractional_range);
  }
  if (!policy->valid_values.empty()) {
    return {RoundUpValidValues(*requested, policy->valid_values), std::nullopt};
  }
  return {*requested, std::nullopt};
}

namespace {

bool ViolatesRange(const Quantity& amount, const api::CapacityRequestPolicyRange& range,
                   bool fractional_range) {
  if (range.max && Quantity::Compare(amount, *range.max) > 0) {
    return true;
  }
  if (!range.step) {
    return false;
  }
  int64_t requested = 0;
  int64_t step = 0;
  int64_t min = 0;
  if (UseMilliArithmetic(range, fractional_range)) {
    std::optional<int64_t> milli = ExactMilliValue(amount);
    if (!milli) {
      return true;
    }
    requested = *milli;
    step = range.step->MilliValue();
    min = range.min.MilliValue();
  } else {
    requested = amount.Value();
    step = range.step->Value();
    min = range.min.Value();
  }
  if (step == 0) {
    return true;
  }
  // 128-bit difference: no wrap-around for any pair of int64 values.
  const __int128 offset = static_cast<__int128>(requested) - min;
  return offset % step != 0;
}

}  // namespace

bool ViolatesRequestPolicy(const Quantity& amount,
                           const std::optional<api::CapacityRequestPolicy>& policy,
                           bool fractional_range) {
  if (!policy) {
    return false;
  }
  if (policy->default_value && Quantity::Compare(amount, *policy->default_value) == 0) {
    return false;
  }
  if (policy->valid_range) {
    return ViolatesRange(amount, *policy->valid_range, fractional_range);
  }
  if (!policy->valid_values.empty()) {
    for (const Quantity& value : policy->valid_values) {
      if (Quantity::Compare(amount, value) == 0) {
        return false;
      }
    }
    return true;
  }
  return false;
}

namespace {

std::string CapacityError(const std::string& name, const std::string& reason) {
  return "capacity \"" + name + "\": " + reason;
}

}  // namespace

CapacityFit RequestFitsCapacity(const ConsumedCapacity& allocated, const CapacityRequests& requests,
                                const DeviceCapacities& capacities,
                                const ConsumedCapacity* allocating, bool fractional_range) {
  for (const auto& [name, quantity] : requests) {
    if (capacities.find(name) == capacities.end()) {
      return {false, std::nullopt};
    }
  }
  // The common case, checked on every device a search looks at: nothing requested, nothing
  // consumed yet and no policies, so each capacity consumes its own value and fits unless negative
  // (the error the general walk below reports for the first negative one, in the same order).
  if (requests.empty() && allocated.empty() && (allocating == nullptr || allocating->empty())) {
    bool plain = true;
    for (const auto& [name, capacity] : capacities) {
      if (capacity.request_policy) {
        plain = false;
        break;
      }
      if (capacity.value.Negative()) {
        return {false, CapacityError(name, "capacity value is negative")};
      }
    }
    if (plain) {
      return {true, std::nullopt};
    }
  }
  // In the order of `capacities`, which the second pass walks again: no map per device checked.
  std::vector<Quantity> consumed;
  consumed.reserve(capacities.size());
  for (const auto& [name, capacity] : capacities) {
    auto requested = requests.find(name);
    CapacityAmount amount = ConsumedAmount(
        requested == requests.end() ? nullptr : &requested->second, capacity, fractional_range);
    if (amount.error) {
      return {false, CapacityError(name, *amount.error)};
    }
    if (amount.value.Negative()) {
      return {false, CapacityError(name, "capacity value is negative")};
    }
    consumed.push_back(amount.value);
  }
  size_t index = 0;
  for (const auto& [name, capacity] : capacities) {
    const Quantity& amount = consumed[index++];
    if (ViolatesRequestPolicy(amount, capacity.request_policy, fractional_range)) {
      return {false, std::nullopt};
    }
    std::optional<Quantity> total = amount;
    if (auto it = allocated.find(name); it != allocated.end()) {
      total = Quantity::Add(it->second, *total);
    }
    if (allocating != nullptr) {
      if (auto it = allocating->find(name); it != allocating->end() && total) {
        total = Quantity::Add(*total, it->second);
      }
    }
    // A total that cannot be represented exactly cannot be shown to fit; refusing is the safe
    // answer (it needs amounts 58 decimal orders of magnitude apart).
    if (!total || Quantity::Compare(*total, capacity.value) > 0) {
      return {false, std::nullopt};
    }
  }
  return {true, std::nullopt};
}

std::optional<std::string> ConsumedCapacityFromRequests(const CapacityRequests& requests,
                                                        const DeviceCapacities& capacities,
                                                        bool fractional_range,
                                                        ConsumedCapacity* out) {
  out->clear();
  for (const auto& [name, capacity] : capacities) {
    auto requested = requests.find(name);
    CapacityAmount amount = ConsumedAmount(
        requested == requests.end() ? nullptr : &requested->second, capacity, fractional_range);
    if (amount.error) {
      return CapacityError(name, *amount.error);
    }
    out->emplace(name, amount.value);
  }
  return std::nullopt;
}

}  // namespace berth::plugins::dynamicresources
