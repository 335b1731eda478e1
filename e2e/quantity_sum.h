#ifndef BERTH_E2E_QUANTITY_SUM_H_
#define BERTH_E2E_QUANTITY_SUM_H_

// Exact sums of Kubernetes quantities for the e2e tests' over-commit checks. They are computed
// apart from pkg/api's Quantity, whose arithmetic is what the checks judge: every value is held
// as a 128-bit count of nano-units (10^-9, the finest a quantity keeps), so the requests of many
// pods near 2^63 each add up without rounding or saturating.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace berth::e2e {

using Nanos = __int128;
inline constexpr Nanos kNanosPerUnit = 1000000000;

// Resource name -> amount.
using ResourceSum = std::map<std::string, Nanos>;

// The quantity in nano-units, rounded up as the apiserver rounds sub-nano values; nullopt when it
// is not a quantity or its magnitude passes 2^120 (beyond what a sum here may hold).
std::optional<Nanos> ParseNanos(const std::string& text);

// Adds a resource list ({"cpu": "2", ...}) to `sum`; false with `error` on a bad quantity.
bool ParseResourceList(const nlohmann::json& list, ResourceSum* sum, std::string* error);

// Adds what a pod spec requests, as the scheduler counts it: the larger of its containers' sum
// and its largest init container, plus its overhead.
bool AddPodRequests(const nlohmann::json& spec, ResourceSum* sum, std::string* error);

// The amount in units with up to nine decimals ("9223372036854775807", "0.1").
std::string FormatNanos(Nanos n);

}  // namespace berth::e2e

#endif  // BERTH_E2E_QUANTITY_SUM_H_
