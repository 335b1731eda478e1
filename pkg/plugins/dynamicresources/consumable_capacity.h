#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CONSUMABLE_CAPACITY_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CONSUMABLE_CAPACITY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "pkg/api/dra_types.h"
#include "pkg/api/quantity.h"
#include "pkg/plugins/dynamicresources/allocated_state.h"

namespace berth::plugins::dynamicresources {

// Consumable capacity (DRAConsumableCapacity with DRAFractionalCapacityRange): how much of each
// capacity of a device one allocation consumes, and whether that still fits.
//
// Every function is pure. Errors are the reason only ("capacity \"c\": ..."); the allocator
// adds the claim, request and device around them.

using DeviceCapacities = std::map<std::string, api::DeviceCapacity, std::less<>>;
using CapacityRequests = std::map<std::string, api::Quantity, std::less<>>;

// The amount one allocation consumes of one capacity, or why it cannot be computed.
struct CapacityAmount {
  api::Quantity value;
  std::optional<std::string> error;
};

// The amount of `capacity` one allocation consumes: with no request, the policy's default, else
// the whole capacity; with a request, rounded up to the policy (the range's minimum, then
// min + a multiple of step; or the smallest valid value at or above it). An error when the
// request or the rounded amount cannot be represented in the range arithmetic.
CapacityAmount ConsumedAmount(const api::Quantity* requested, const api::DeviceCapacity& capacity,
                              bool fractional_range);

// Whether an amount is not allowed by the policy (above max, off the step grid, not a valid
// value); the default is always allowed.
bool ViolatesRequestPolicy(const api::Quantity& amount,
                           const std::optional<api::CapacityRequestPolicy>& policy,
                           bool fractional_range);

// The milli value of q when q has no finer digits than thousandths and fits int64.
std::optional<int64_t> ExactMilliValue(const api::Quantity& q);

// Range arithmetic runs in thousandths only when fractional ranges are enabled and every bound
// of the range is a whole number of thousandths (and the step at least one thousandth);
// otherwise it runs in whole units (Value(), rounded up), as upstream does.
bool UseMilliArithmetic(const api::CapacityRequestPolicyRange& range, bool fractional_range);

struct CapacityFit {
  bool fits = false;
  std::optional<std::string> error;
};

// Whether one more allocation with `requests` fits the device's capacities on top of what the
// cluster has allocated (`allocated`) and what this allocation attempt already holds
// (`allocating`, may be null). A request naming a capacity the device does not have never fits;
// a capacity the request does not name consumes the policy's default, else all of it. Amounts
// are rounded up to the request policy (valid values, or min + a multiple of step); an amount
// the policy does not allow does not fit.
CapacityFit RequestFitsCapacity(const ConsumedCapacity& allocated, const CapacityRequests& requests,
                                const DeviceCapacities& capacities,
                                const ConsumedCapacity* allocating, bool fractional_range);

// The amount of each of the device's capacities one allocation with `requests` consumes
// (rounded up to the request policies), for a device that allows multiple allocations.
// Returns an error reason instead when an amount cannot be computed.
std::optional<std::string> ConsumedCapacityFromRequests(const CapacityRequests& requests,
                                                        const DeviceCapacities& capacities,
                                                        bool fractional_range,
                                                        ConsumedCapacity* out);

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CONSUMABLE_CAPACITY_H_
