#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CONSUMABLE_CAPACITY_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CONSUMABLE_CAPACITY_H_

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
