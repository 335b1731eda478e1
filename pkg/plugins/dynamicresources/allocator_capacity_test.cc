// Upstream allocator table cases for consumable capacity (allowMultipleAllocations, capacity
// requests, request policies, shares) and distinctAttribute constraints.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "test/testing/dra_allocator_case.h"
#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using namespace berth::testing::dra;  // NOLINT(google-build-using-namespace): test vocabulary.

std::string Attribute(const char* name, const char* value) {
  return "device.attributes[\"" + kDriverA + "\"]." + name + " == \"" + value + "\"";
}

std::string Memory(const char* amount) {
  return "device.capacity[\"" + kDriverA + "\"].memory.compareTo(quantity(\"" + amount +
         "\")) >= 0";
}

std::string Capacity0AtLeast(const char* amount) {
  return "device.capacity[\"" + kDriverA + "\"][\"" + kCapacity0 + "\"].compareTo(quantity(\"" +
         amount + "\")) >= 0";
}

// Request one device of class-a with `amount` of capacity-0.
Req CapRequest(const std::string& name, const char* amount) {
  return Request(name, kClassA).Capacity(kCapacity0, amount);
}

ConsumedCapacity Consumed(const char* amount) { return {{kCapacity0, Q(amount)}}; }

std::vector<AllocatorCase> CapacityCases() {
  std::vector<AllocatorCase> cases;
  const api::DeviceClassPtr multi = ClassWithMultiAlloc(kClassA, kDriverA, true);
  const api::DeviceClassPtr dedicated = ClassWithMultiAlloc(kClassA, kDriverA, false);
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-missing-capacity-request",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity1, "1").MultiAlloc()})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-"
              "capacity-request",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA).Capacity(kCapacity0, "1")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity1, "1").MultiAlloc()})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-"
              "request",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim1, kReq0, kClassA)},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {Device(kDevice1).MultiAlloc()})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({})}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({})})},
  });
  cases.push_back({
      .name =
          "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim1, kReq0, kClassA)},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "1").MultiAlloc(),
                        Device(kDevice2).Capacity(kCapacity0, "1").MultiAlloc()})},
      .expect = {Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "1"}})}),
                 Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Share({{kCapacity0, "1"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-"
              "request-block",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim1, kReq0, kClassA)},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "2").MultiAlloc()})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")}),
                 Claim(kClaim1, {CapRequest(kReq0, "1")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "2").MultiAlloc()})},
      .expect = {Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "1"}})}),
                 Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "1"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim1, kReq0, kClassA)},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4")})},
      .expect = {Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})}),
                 Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-zero-request-policy",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim1, kReq0, kClassA)},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().ValidValuesPolicy(kCapacity0, "1", "0")})},
      .expect = {Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "0"}})}),
                 Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "0"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-violates-zero-request-policy",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().ValidValuesPolicy(kCapacity0, "1", "0")})},
  });
  cases.push_back({
      .name =
          "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")}),
                 Claim(kClaim1, {CapRequest(kReq0, "1")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4")})},
      .expect = {Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})}),
                 Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-range-policy-step",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "3")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4")})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "4"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-range-policy-request-above-int64-rejected",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "18446744073709551616")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4")})},
      .expect_error = "cannot be represented",
  });
  cases.push_back({
      .name = "consumable-capacity-range-policy-rounded-value-overflow-rejected",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "9223372036854775807")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4")})},
      .expect_error = "cannot be represented",
  });
  cases.push_back({
      .name = "consumable-capacity-range-policy-overflow-aborts-not-skip",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "18446744073709551616")})},
      .classes = {multi},
      .slices = {Slice(
          kSlice1, kNode1, Pool(kPool1), kDriverA,
          {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4"),
           Device(kDevice2).Capacity(kCapacity0, "36893488147419103232").MultiAlloc()})},
      .expect_error = "claim claim-0, request req-0: checking capacity for device "
                      "driver-a/pool-1/device-1: capacity \"capacity-0\": capacity request cannot "
                      "be represented",
  });
  cases.push_back({
      .name = "consumable-capacity-range-policy-allocation-mode-all-overflow-aborts",
      .claims = {Claim(kClaim0,
                       {AllRequest(kReq0, kClassA).Capacity(kCapacity0, "18446744073709551616")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4")})},
      .expect_error = "claim claim-0, request req-0: checking capacity for device device-1: "
                      "capacity \"capacity-0\": capacity request cannot be represented",
  });
  cases.push_back({
      .name = "consumable-capacity-negative-request-aborts",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "-5")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "10").MultiAlloc()})},
      .expect_error = "capacity \"capacity-0\": capacity value is negative",
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-valid-values-policy",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "2")})},
      .classes = {multi},
      .slices = {Slice(
          kSlice1, kNode1, Pool(kPool1), kDriverA,
          {Device(kDevice1).MultiAlloc().ValidValuesPolicy(kCapacity0, "4", "1", {"2"})})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "2")})},
      .classes = {multi},
      .slices = {Slice(
          kSlice1, kNode1, Pool(kPool1), kDriverA,
          {Device(kDevice1).MultiAlloc().ValidValuesPolicy(kCapacity0, "3", "1", {"3"})})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "3"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-"
              "request",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")}),
                 Claim(kClaim1, {CapRequest(kReq0, "2")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "2")})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "6")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "10")})},
  });
  AllocatedState two_used;
  two_used.aggregated_capacity[{kDriverA, kPool1, kDevice1}] = Consumed("2");
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "2")})},
      .state = two_used,
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "4")})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "2")})},
      .state = two_used,
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "2"),
                        Device(kDevice2).MultiAlloc().RangePolicy(kCapacity0, "2")})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-with-multi-allocatable-device-backtrack",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "2"), CapRequest(kReq1, "2")})
                     .Constraints({MatchAttribute(kDriverA + "/stringAttribute")}),
                 Claim(kClaim1, {CapRequest(kReq0, "2")})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice2)
                            .Attr("stringAttribute", StringAttr("stringAttributeValue1"))
                            .MultiAlloc()
                            .RangePolicy(kCapacity0, "2"),
                        Device(kDevice1)
                            .Attr("stringAttribute", StringAttr("stringAttributeValue2"))
                            .MultiAlloc()
                            .RangePolicy(kCapacity0, "4")})},
      .expect = {Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}}),
                      DeviceResult(kReq1, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})}),
                 Allocation(
                     LocalSelector(kNode1),
                     {DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-subrequest",
      .claims = {Claim(
          kClaim0,
          {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1).Capacity(kCapacity0, "4"),
                                  SubRequest(kSubReq1, kClassA, 1).Capacity(kCapacity0, "2"),
                                  SubRequest(kSubReq1, kClassA, 1)})})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "2")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1)
                                 .Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "2")})},
      .state = two_used,
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "2")})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-"
              "capacity",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA).Capacity(kCapacity0, "2")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "2").MultiAlloc(),
                        Device(kDevice2).MultiAlloc()})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-"
              "insufficient-capacity",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA).Capacity(kCapacity0, "2")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "2").MultiAlloc(),
                        Device(kDevice2).Capacity(kCapacity0, "1").MultiAlloc()})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-"
              "sufficient",
      .claims = {Claim(
          kClaim0, {CapRequest(kReq0, "1"), AllRequest(kReq1, kClassA).Capacity(kCapacity0, "1")})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "2").MultiAlloc(),
                        Device(kDevice2).Capacity(kCapacity0, "1").MultiAlloc()})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "1"}}),
           DeviceResult(kReq1, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "1"}}),
           DeviceResult(kReq1, kDriverA, kPool1, kDevice2).Share({{kCapacity0, "1"}})})},
  });
  AllocatedState one_used;
  one_used.aggregated_capacity[{kDriverA, kPool1, kDevice1}] = Consumed("1");
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA).Capacity(kCapacity0, "1")})},
      .state = one_used,
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "2").MultiAlloc(),
                        Device(kDevice2).Capacity(kCapacity0, "1").MultiAlloc()})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "1"}}),
           DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Share({{kCapacity0, "1"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-"
              "insufficient",
      .claims = {Claim(
          kClaim0, {CapRequest(kReq0, "1"), AllRequest(kReq1, kClassA).Capacity(kCapacity0, "1")})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "1").MultiAlloc(),
                        Device(kDevice2).Capacity(kCapacity0, "1").MultiAlloc()})},
  });
  cases.push_back({
      .name =
          "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA).Capacity(kCapacity0, "1")})},
      .state = one_used,
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "1").MultiAlloc(),
                        Device(kDevice2).Capacity(kCapacity0, "1").MultiAlloc()})},
  });
  cases.push_back({
      .name = "consumable-capacity-dedicated-device-with-consumable-capacity-request",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")})},
      .classes = {dedicated},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "1")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")}),
                 Claim(kClaim1, {CapRequest(kReq0, "1")})},
      .classes = {dedicated},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).RangePolicy(kCapacity0, "2")})},
  });
  api::CapacityRequestPolicy huge_default;
  huge_default.default_value = Q("1000000000000000000000");
  huge_default.valid_range = api::CapacityRequestPolicyRange{Q("2"), std::nullopt, std::nullopt};
  cases.push_back({
      .name = "consumable-capacity-requests-are-not-modified",
      .claims = {Claim(kClaim0,
                       {CapRequest(kReq0, "2"), CapRequest(kReq1, "1000000000000000000000")})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1)
                            .Policy(kCapacity0, "1000000000000000000002", huge_default)
                            .MultiAlloc()})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}}),
           DeviceResult(kReq1, kDriverA, kPool1, kDevice1)
               .Share({{kCapacity0, "1000000000000000000000"}})})},
  });
  cases.push_back({
      .name = "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")})},
      .classes = {dedicated},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity(kCapacity0, "1").MultiAlloc()})},
  });
  cases.push_back({
      .name = "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-"
              "dedicated",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")})},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().RangePolicy(kCapacity0, "2")})},
  });
  AllocatedState one_shared;
  one_shared.aggregated_capacity[{kDriverA, kPool1, kDevice1}] = Consumed("1");
  cases.push_back({
      .name = "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-"
              "allocatable",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1")})},
      .state = one_shared,
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).RangePolicy(kCapacity0, "2")})},
  });
  cases.push_back({
      .name = "allow-multiple-allocations-with-partitionable-device",
      .claims = {Claim(
          kClaim0,
          {Request(kReq0, kClassA),
           FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("6Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("4Gi")})})})},
      .classes = {multi},
      .slices =
          {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                 {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "4Gi"}}, true).MultiAlloc(),
                  Device(kDevice2).Consumes(kCounterSet1, {{"memory", "6Gi"}}, true).MultiAlloc(),
                  Device(kDevice3).Consumes(kCounterSet1, {{"memory", "4Gi"}}, true).MultiAlloc()}),
           SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                             {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{"memory", "4Gi"}}),
           DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice3)
               .Share({{"memory", "4Gi"}})})},
  });
  AllocatedState shared_with_capacity = one_shared;
  shared_with_capacity.shared_devices.insert(
      SharedDeviceId{{kDriverA, kPool1, kDevice1}, "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"});
  cases.push_back({
      .name = "allow-multiple-allocations-with-shared-device-counter-cross-cycle",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1").Selectors({Attribute("mode", "b")})})},
      .state = shared_with_capacity,
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1)
                            .Attr("mode", StringAttr("a"))
                            .Consumes(kCounterSet1, {{kCapacity0, "1"}}, true)
                            .MultiAlloc(),
                        Device(kDevice2)
                            .Attr("mode", StringAttr("b"))
                            .Consumes(kCounterSet1, {{kCapacity0, "1"}}, true)
                            .MultiAlloc()}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{kCapacity0, "1"}})})},
  });
  AllocatedState share_only;
  share_only.shared_devices.insert(
      SharedDeviceId{{kDriverA, kPool1, kDevice1}, "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"});
  cases.push_back({
      .name = "partitionable-consumable-capacity-shared-device-counter-not-recharged",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .state = share_only,
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).MultiAlloc().Consumes(kCounterSet1, {{"c", "1"}})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"c", "1"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({})})},
  });
  auto two_set_device = [](const std::string& name, const char* c0) {
    return Device(name)
        .Consumes(kCounterSet1, {{kCapacity0, c0}}, true)
        .Consumes(kCounterSet2, {{kCapacity1, "4"}}, true)
        .MultiAlloc()
        .RangePolicy(kCapacity1, "4");
  };
  cases.push_back({
      .name = "consumable-capacity-with-partitionable-device-multiple-capacity-pools",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1"), CapRequest(kReq2, "2"),
                                 FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 1)
                                                            .Selectors({Capacity0AtLeast("4")})
                                                            .Capacity(kCapacity0, "1"),
                                                        SubRequest(kSubReq1, kClassA, 1)
                                                            .Selectors({Capacity0AtLeast("2")})
                                                            .Capacity(kCapacity0, "1")})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {two_set_device(kDevice1, "2"), two_set_device(kDevice2, "4"),
                        two_set_device(kDevice3, "2")}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{kCapacity0, "4"}}),
                                    CounterSet(kCounterSet2, {{kCapacity1, "8"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Share({{kCapacity0, "1"}, {kCapacity1, "2"}}),
                             DeviceResult(kReq2, kDriverA, kPool1, kDevice3)
                                 .Share({{kCapacity0, "2"}, {kCapacity1, "2"}}),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice1)
                                 .Share({{kCapacity0, "1"}, {kCapacity1, "2"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-fractional-range-gate-enabled-round-up",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "250m")})},
      .classes = {multi},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).MultiAlloc().FractionalRangePolicy(kCapacity0, "1")})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "300m"}})})},
  });
  cases.push_back({
      .name = "consumable-capacity-rejection-rolls-back-constraints",
      .claims = {Claim(kClaim0,
                       {CapRequest(kReq0, "2").Selectors({Attribute("stringAttribute", "cap")})}),
                 Claim(kClaim1, {FirstAvailable(
                                    kReq0, {SubRequest(kSubReq0, kClassA, 1)
                                                .Selectors({Attribute("stringAttribute", "cap")})
                                                .All()
                                                .Capacity(kCapacity0, "2"),
                                            SubRequest(kSubReq1, kClassA, 1)
                                                .Selectors({Attribute("stringAttribute", "fb")})})})
                     .Constraints({MatchAttribute(kDriverA + "/stringAttribute")})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1)
                            .Capacity(kCapacity0, "2")
                            .Attr("stringAttribute", StringAttr("cap"))
                            .MultiAlloc(),
                        Device(kDevice2).Attr("stringAttribute", StringAttr("fb"))})},
      .expect = {Allocation(LocalSelector(kNode1), {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                                        .Share({{kCapacity0, "2"}})}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice2)})},
  });
  return cases;
}

std::vector<AllocatorCase> DistinctAttributeCases() {
  std::vector<AllocatorCase> cases;
  const std::string bool_attribute = kDriverA + "/boolAttribute";
  const std::string version_attribute = kDriverA + "/driverVersion";
  const std::string int_attribute = kDriverA + "/numa";
  const std::string string_attribute = kDriverA + "/stringAttribute";
  auto three = [](const std::string& name, const char* version, int64_t numa, bool flag) {
    return Device(name)
        .Attr("driverVersion", VersionAttr(version))
        .Attr("numa", IntAttr(numa))
        .Attr("boolAttribute", BoolAttr(flag))
        .MultiAlloc();
  };
  cases.push_back({
      .name = "with-distinct-constraints",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA),
                                 Request(kReq2, kClassA), Request("req-3", kClassA)})
                     .Constraints(
                         {DistinctAttribute(bool_attribute, {kReq0, kReq1}),
                          DistinctAttribute(version_attribute, {kReq0, kReq1, kReq2}),
                          DistinctAttribute(int_attribute, {kReq0, kReq1, kReq2, "req-3"})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {three(kDevice1, "1.0.0", 0, true), three(kDevice2, "1.0.1", 1, false),
                        three(kDevice3, "1.0.2", 2, true), three("device-4", "1.0.0", 3, true)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({}),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice2).Share({}),
                             DeviceResult(kReq2, kDriverA, kPool1, kDevice3).Share({}),
                             DeviceResult("req-3", kDriverA, kPool1, "device-4").Share({})})},
  });
  auto strings = [](std::vector<const char*> values) {
    std::vector<Dev> devices;
    for (size_t i = 0; i < values.size(); ++i) {
      devices.push_back(
          Device("device-" + std::to_string(i + 1)).Attr("stringAttribute", StringAttr(values[i])));
    }
    return devices;
  };
  cases.push_back({
      .name = "distinct-constraint-single-request-count-3-not-distinct",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 3)})
                     .Constraints({DistinctAttribute(string_attribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       strings({"value1", "value2", "value1"}))},
  });
  cases.push_back({
      .name = "distinct-constraint-single-request-count-3-all-distinct",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 3)})
                     .Constraints({DistinctAttribute(string_attribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       strings({"value1", "value2", "value3"}))},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "distinct-constraint-two-requests-with-count-not-distinct",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2), Request(kReq1, kClassA)})
                     .Constraints({DistinctAttribute(string_attribute, {kReq0, kReq1})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       strings({"value1", "value2", "value1"}))},
  });
  cases.push_back({
      .name = "with-distinct-constraints-attribute-not-set",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)
                     .Constraints({DistinctAttribute(bool_attribute, {kReq0})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {Device(kDevice1).MultiAlloc()})},
  });
  const std::string bool_selector = "device.attributes[\"" + kDriverA + "\"].boolAttribute";
  auto prefer_bool = [&](const std::string& name) {
    return FirstAvailable(name, {SubRequest(kSubReq0, kClassA, 1).Selectors({bool_selector}),
                                 SubRequest(kSubReq1, kClassA, 1)});
  };
  cases.push_back({
      .name = "with-distinct-constraints-with-subrequests",
      .claims = {Claim(kClaim0, {prefer_bool(kReq0), prefer_bool(kReq1), prefer_bool(kReq2)})
                     .Constraints({DistinctAttribute(bool_attribute, {kReq0, kReq1})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Attr("boolAttribute", BoolAttr(true)).MultiAlloc(),
                        Device(kDevice2).Attr("boolAttribute", BoolAttr(false)).MultiAlloc()})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(Join(kReq0, kSubReq0), kDriverA, kPool1, kDevice1).Share({}),
           DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice2).Share({}),
           DeviceResult(Join(kReq2, kSubReq0), kDriverA, kPool1, kDevice1).Share({})})},
  });
  cases.push_back({
      .name = "distinct-constraint-single-request-multiple-devices-attribute-not-set",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 3)})
                     .Constraints({DistinctAttribute(int_attribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2), Device(kDevice3)})},
  });
  auto numas = [](std::vector<int64_t> values) {
    std::vector<Dev> devices;
    for (size_t i = 0; i < values.size(); ++i) {
      devices.push_back(Device("device-" + std::to_string(i + 1)).Attr("numa", IntAttr(values[i])));
    }
    return devices;
  };
  cases.push_back({
      .name = "distinct-constraint-single-request-not-enough-distinct-values",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 3)})
                     .Constraints({DistinctAttribute(int_attribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, numas({1, 2, 2, 2}))},
  });
  cases.push_back({
      .name = "distinct-constraint-single-request-multiple-devices-attribute-set",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 3)})
                     .Constraints({DistinctAttribute(int_attribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, numas({1, 2, 1, 3}))},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, "device-4")})},
  });
  cases.push_back({
      .name = "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "1"), CapRequest(kReq1, "1")})
                     .Constraints({DistinctAttribute(string_attribute)})},
      .classes = {ClassWithMultiAlloc(kClassA, kDriverA, true)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1)
                            .Attr("stringAttribute", StringAttr("stringAttributeValue"))
                            .MultiAlloc()
                            .RangePolicy(kCapacity0, "2")})},
  });
  cases.push_back({
      .name = "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint",
      .claims = {Claim(kClaim0, {CapRequest(kReq0, "2"), CapRequest(kReq1, "2")})
                     .Constraints({DistinctAttribute(string_attribute)})},
      .classes = {ClassWithMultiAlloc(kClassA, kDriverA, true)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1)
                            .Attr("stringAttribute", StringAttr("stringAttributeValue1"))
                            .MultiAlloc()
                            .RangePolicy(kCapacity0, "4")}),
                 Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice2)
                            .Attr("stringAttribute", StringAttr("stringAttributeValue2"))
                            .MultiAlloc()
                            .RangePolicy(kCapacity0, "4")})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{kCapacity0, "2"}}),
           DeviceResult(kReq1, kDriverA, kPool1, kDevice2).Share({{kCapacity0, "2"}})})},
  });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(ConsumableCapacity, AllocatorTable, ::testing::ValuesIn(CapacityCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(DistinctAttribute, AllocatorTable,
                         ::testing::ValuesIn(DistinctAttributeCases()), CaseName);

}  // namespace
}  // namespace berth::plugins::dynamicresources
