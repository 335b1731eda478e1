// Upstream allocator table cases for pool gathering (generations, slice counts, pools spanning
// nodes, invalid pools) and for the search order (combinations, backtracking; the number of
// search steps pinned as upstream pins it).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "test/testing/dra_allocator_case.h"
#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using namespace berth::testing::dra;  // NOLINT(google-build-using-namespace): test vocabulary.

std::string Type(const char* value) {
  return "device.attributes[\"" + kDriverA + "\"].type == \"" + value + "\"";
}

std::string Memory(const char* amount) {
  return "device.capacity[\"" + kDriverA + "\"].memory.compareTo(quantity(\"" + amount +
         "\")) >= 0";
}

// One-device slice of pool-1 with the given generation and two slices in the pool.
api::ResourceSlicePtr GenSlice(const std::string& name, const std::string& node,
                               const std::string& device, int64_t generation) {
  return Slice(name, node, Pool(kPool1, 2, generation), kDriverA, {Device(device)});
}

std::vector<AllocatorCase> PoolCases() {
  std::vector<AllocatorCase> cases;
  cases.push_back({
      .name = "allocation-mode-all-with-multi-host-resource-pool",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice1)}),
                 Slice(kSlice2, kNode2, Pool(kPool1, 2), kDriverA, {Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "multi-host-resource-pool-with-stale-slice-for-current-node",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {GenSlice(kSlice1, kNode1, kDevice1, 1), GenSlice(kSlice2, kNode2, kDevice2, 2)},
  });
  cases.push_back({
      .name = "multi-host-resource-pool-complete-update-from-node-1-to-node-2",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {GenSlice(kSlice1, kNode1, kDevice1, 1), GenSlice(kSlice1, kNode1, kDevice2, 1),
                 GenSlice(kSlice2, kNode2, kDevice1, 2), GenSlice(kSlice2, kNode2, kDevice2, 2)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "multi-host-resource-pool-complete-update-from-node-2-to-node-1",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {GenSlice(kSlice1, kNode2, kDevice1, 1), GenSlice(kSlice1, kNode2, kDevice2, 1),
                 GenSlice(kSlice2, kNode1, kDevice1, 2), GenSlice(kSlice2, kNode1, kDevice2, 2)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {GenSlice(kSlice1, kNode1, kDevice1, 1), GenSlice(kSlice1, kNode1, kDevice2, 1),
                 GenSlice(kSlice2, kNode2, kDevice1, 2)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {GenSlice(kSlice1, kNode2, kDevice1, 1), GenSlice(kSlice1, kNode2, kDevice2, 1),
                 GenSlice(kSlice2, kNode1, kDevice1, 2)},
  });
  cases.push_back({
      .name = "partitionable-devices-same-counter-set-name-in-different-resource-slices",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 4), kDriverA, {Device(kDevice1)}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 4), kDriverA,
                                   {CounterSet(kCounterSet1, {})}),
                 Slice(kSlice3, kNode1, Pool(kPool1, 4), kDriverA, {Device(kDevice2)}),
                 SliceWithCounters(kSlice4, kNode1, Pool(kPool1, 4), kDriverA,
                                   {CounterSet(kCounterSet1, {})})},
      .expect_unschedulable = "invalid resource pools were encountered",
  });
  cases.push_back({
      .name = "partitionable-devices-device-counter-consumption-references-unknown-counter-set",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet2, {})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {})})},
      .expect_unschedulable = "invalid resource pools were encountered",
  });
  cases.push_back({
      .name = "partitionable-devices-device-counter-consumption-references-unknown-counter-in-"
              "counter-set",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "8Gi"}})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"other-memory", "8Gi"}})})},
      .expect_unschedulable = "invalid resource pools were encountered",
  });
  cases.push_back({
      .name = "partitionable-devices-device-counter-consumption-references-counter-set-in-other-"
              "pool",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "8Gi"}})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
      .expect_unschedulable = "invalid resource pools were encountered",
  });
  cases.push_back({
      .name = "partitionable-devices-devices-on-different-nodes-consume-same-counter-set",
      .claims = {Claim(
          kClaim0,
          {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("6Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("2Gi")})})})},
      .allocated = {{kDriverA, kPool1, kDevice3}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithCounters(kSlice1, kNode1, Pool(kPool1, 3), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "6Gi"}}, true),
                        Device(kDevice2).Consumes(kCounterSet1, {{"memory", "2Gi"}}, true)}),
                 Slice(kSlice3, kNode2, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice3).Consumes(kCounterSet1, {{"memory", "6Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "partitionable-devices-devices-consume-counter-set-in-different-nodes",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithCounters(kSlice1, kNode1, Pool(kPool1, 3), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "6Gi"}}, true)}),
                 Slice(kSlice3, kNode2, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice2).Consumes(kCounterSet1, {{"memory", "6Gi"}}, true),
                        Device(kDevice3).Consumes(kCounterSet1, {{"memory", "2Gi"}}, true)})},
      .node = MakeNode(kNode2, kRegion1),
      .expect = {Allocation(LocalSelector(kNode2),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "partitionable-devices-validation-error-on-non-targeting-slice",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithCounters(kSlice1, kNode1, Pool(kPool1, 3), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "6Gi"}}, true)}),
                 Slice(kSlice3, kNode2, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice3).Consumes(kCounterSet2, {{"memory", "6Gi"}})})},
      .expect_unschedulable = "invalid resource pools were encountered",
  });
  cases.push_back({
      .name = "different-resourceslices-in-pool-can-target-different-nodes",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode2, Pool(kPool1, 2), kDriverA, {Device(kDevice1)}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2)})},
  });
  const std::vector<api::ResourceSlicePtr> invalid_and_valid = {
      Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice1)}),
      Slice(kSlice2, kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice1)}),
      Slice(kSlice3, kNode1, Pool(kPool2, 1), kDriverA, {Device(kDevice2)})};
  cases.push_back({
      .name = "invalid-pool-is-ok-if-devices-can-be-allocated-from-other",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = invalid_and_valid,
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool2, kDevice2)})},
  });
  cases.push_back({
      .name = "invalid-pool-is-error-if-no-other-device-can-be-allocated",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .allocated = {{kDriverA, kPool2, kDevice2}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = invalid_and_valid,
      .expect_unschedulable = "invalid resource pools were encountered",
  });
  cases.push_back({
      .name = "no-allocation-from-incomplete-pools",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice1)})},
  });
  // Upstream's compatibility groups (alpha in v1.37) are unsupported fields here: a slice using
  // them is left out as upstream does with the gate off, which leaves its pool incomplete.
  const std::string groups = "spec.devices[0].consumesCounters[0].compatibilityGroups";
  cases.push_back({
      .name = "compatibility-groups-disabled-skips-grouped-pool",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{kCapacity0, "2"}})})
                     .Unsupported(groups),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{kCapacity0, "4"}})}),
                 Slice(kSlice3, kNode1, Pool(kPool2, 2), kDriverA,
                       {Device(kDevice2).Consumes(kCounterSet2, {{kCapacity0, "2"}})}),
                 SliceWithCounters(kSlice4, kNode1, Pool(kPool2, 2), kDriverA,
                                   {CounterSet(kCounterSet2, {{kCapacity0, "4"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool2, kDevice2)})},
  });
  cases.push_back({
      .name = "compatibility-groups-disabled-skips-ungrouped-device-in-grouped-pool",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{kCapacity0, "1"}})})
                     .Unsupported(groups),
                 Slice(kSlice2, kNode1, Pool(kPool1, 3), kDriverA,
                       {Device(kDevice2).Consumes(kCounterSet1, {{kCapacity0, "1"}})}),
                 SliceWithCounters(kSlice3, kNode1, Pool(kPool1, 3), kDriverA,
                                   {CounterSet(kCounterSet1, {{kCapacity0, "4"}})})},
  });
  return cases;
}

std::vector<AllocatorCase> SearchOrderCases() {
  std::vector<AllocatorCase> cases;
  const std::vector<Dev> four = {Device(kDevice1), Device(kDevice2), Device(kDevice3),
                                 Device("device-4")};
  cases.push_back({
      .name = "check-combinations-within-single-request-single-pool-single-slice",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 5)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, four)},
      .expect_steps = 16,
  });
  cases.push_back({
      .name = "check-combinations-within-single-request-single-pool-multiple-slices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 5)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1), Device(kDevice2)}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice3), Device("device-4")})},
      .expect_steps = 16,
  });
  cases.push_back({
      .name = "check-combinations-within-single-request-multiple-pools-multiple-slices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 5)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice1)}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice2)}),
                 Slice(kSlice3, kNode1, Pool(kPool2), kDriverA,
                       {Device(kDevice3), Device("device-4")})},
      .expect_steps = 16,
  });
  cases.push_back({
      .name = "check-combinations-within-single-request-many-pools",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 5)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {Device(kDevice1)}),
                 Slice(kSlice2, kNode1, Pool(kPool2), kDriverA, {Device(kDevice2)}),
                 Slice(kSlice3, kNode1, Pool(kPool3), kDriverA, {Device(kDevice3)}),
                 Slice(kSlice4, kNode1, Pool("pool-4"), kDriverA, {Device("device-4")})},
      .expect_steps = 16,
  });
  auto typed = [](const std::string& name, const char* type) {
    return Device(name).Attr("type", StringAttr(type));
  };
  cases.push_back({
      .name = "check-combinations-with-backtracking",
      .claims = {Claim(
          kClaim0, {Request(kReq1, kClassA, 2), Request(kReq2, kClassA).Selectors({Type("X")})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {typed(kDevice1, "X"), typed(kDevice2, "Y"), typed(kDevice3, "Y")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq1, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice3),
                             DeviceResult(kReq2, kDriverA, kPool1, kDevice1)})},
      .expect_steps = 12,
  });
  cases.push_back({
      .name = "check-combinations-with-backtracking-across-slices-and-pools",
      .claims = {Claim(
          kClaim0, {Request(kReq1, kClassA, 2), Request(kReq2, kClassA).Selectors({Type("X")})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA, {typed(kDevice1, "X")}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 2), kDriverA, {typed(kDevice2, "Y")}),
                 Slice(kSlice3, kNode1, Pool(kPool2), kDriverA,
                       {typed(kDevice3, "Y").BindingConditions({"IsPrepare"}, {})})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq1, kDriverA, kPool1, kDevice2),
           DeviceResult(kReq1, kDriverA, kPool2, kDevice3).Binding({"IsPrepare"}, {}),
           DeviceResult(kReq2, kDriverA, kPool1, kDevice1)})},
      .expect_steps = 12,
  });
  cases.push_back({
      .name = "check-combinations-with-prioritized-list",
      .claims = {Claim(
          kClaim0,
          {FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 3).Selectors({Type("Y")}),
                                  SubRequest(kSubReq1, kClassA, 2)}),
           FirstAvailable(kReq2, {SubRequest(kSubReq0, kClassA, 2),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Type("X")})})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {typed(kDevice1, "X"), typed(kDevice2, "Y"), typed(kDevice3, "Y")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice2),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice3),
                             DeviceResult(Join(kReq2, kSubReq1), kDriverA, kPool1, kDevice1)})},
      .expect_steps = 26,
  });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Pools, AllocatorTable, ::testing::ValuesIn(PoolCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(SearchOrder, AllocatorTable, ::testing::ValuesIn(SearchOrderCases()),
                         CaseName);

}  // namespace
}  // namespace berth::plugins::dynamicresources
