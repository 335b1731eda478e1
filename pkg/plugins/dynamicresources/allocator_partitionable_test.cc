// Upstream allocator table cases for partitionable devices (shared counters) and per-device
// node selection.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "test/testing/dra_allocator_case.h"
#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using namespace berth::testing::dra;  // NOLINT(google-build-using-namespace): test vocabulary.

std::string Memory(const char* amount) {
  return "device.capacity[\"" + kDriverA + "\"].memory.compareTo(quantity(\"" + amount +
         "\")) >= 0";
}

std::string Kind(const char* kind) {
  return "device.attributes[\"" + kDriverA + "\"].kind == \"" + kind + "\"";
}

// A device whose capacities are the counters it consumes from one counter set.
Dev FromCounters(const std::string& name, const std::string& set, const Counters& counters) {
  return Device(name).Consumes(set, counters, true);
}

api::ResourceSlicePtr Counters1(const std::string& name, const Placement& placement,
                                const PoolSpec& pool, const Counters& counters) {
  return SliceWithCounters(name, placement, pool, kDriverA, {CounterSet(kCounterSet1, counters)});
}

std::vector<AllocatorCase> PartitionableCases() {
  std::vector<AllocatorCase> cases;
  const std::string string_attribute = kDriverA + "/stringAttribute";
  cases.push_back({
      .name = "partitionable-devices-single-device",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "4Gi"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"memory", "8Gi"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "partitionable-devices-counter-quantities-are-not-modified",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"c", "9000000000000000000"}}),
                        Device(kDevice2).Consumes(kCounterSet1, {{"c", "1"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"c", "10000000000000000000"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2)})},
  });
  const std::vector<api::DeviceClassPtr> classes_ab = {Class(kClassA, kDriverA),
                                                       Class(kClassB, kDriverB)};
  cases.push_back({
      .name = "partitionable-devices-counter-cache-scoped-by-pool-ID",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim1, kReq1, kClassB)},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"c", "1"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"c", "1"}}),
                 Slice(kSlice3, kNode1, Pool(kPool1, 2), kDriverB,
                       {Device(kDevice2).Consumes(kCounterSet1, {{"c", "2"}})}),
                 SliceWithCounters(kSlice4, kNode1, Pool(kPool1, 2), kDriverB,
                                   {CounterSet(kCounterSet1, {{"c", "2"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq1, kDriverB, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "partitionable-devices-counter-cache-not-crossed-between-driver-schemas",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim1, kReq1, kClassB)},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"c", "1"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"c", "1"}}),
                 Slice(kSlice3, kNode1, Pool(kPool1, 2), kDriverB,
                       {Device(kDevice2).Consumes(kCounterSet2, {{"d", "2"}})}),
                 SliceWithCounters(kSlice4, kNode1, Pool(kPool1, 2), kDriverB,
                                   {CounterSet(kCounterSet2, {{"d", "1"}})})},
  });
  cases.push_back({
      .name = "partitionable-devices-taint-releases-counter",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1)
                            .Taints({{"taint-key", "taint-value",
                                      api::DeviceTaint::Effect::kNoSchedule, std::nullopt}})
                            .Consumes(kCounterSet1, {{"c", "1"}}),
                        Device(kDevice2).Consumes(kCounterSet1, {{"c", "1"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"c", "1"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "partitionable-devices-constraint-releases-counter",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})
                     .Constraints({MatchAttribute(string_attribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1)
                            .Attr("stringAttribute", StringAttr("red"))
                            .Consumes(kCounterSet1, {{"c", "1"}}),
                        Device(kDevice2)
                            .Attr("stringAttribute", StringAttr("blue"))
                            .Consumes(kCounterSet1, {{"c", "1"}}),
                        Device(kDevice3)
                            .Attr("stringAttribute", StringAttr("blue"))
                            .Consumes(kCounterSet1, {{"c", "1"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"c", "2"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "partitionable-consumable-capacity-backtrack-releases-counter",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).Selectors({Kind("shared")}),
                                 Request(kReq1, kClassA).Selectors({Kind("counteronly")})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1)
                            .Attr("kind", StringAttr("shared"))
                            .MultiAlloc()
                            .Consumes(kCounterSet1, {{"c", "1"}}),
                        Device(kDevice2).Attr("kind", StringAttr("shared")),
                        Device(kDevice3)
                            .Attr("kind", StringAttr("counteronly"))
                            .Consumes(kCounterSet1, {{"c", "1"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"c", "1"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "partitionable-empty-capacity-multiple-share-backtrack-keeps-counter-ownership",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).Selectors({Kind("shared")})}),
                 Claim(kClaim1, {Request(kReq1, kClassA)
                                     .Selectors({Kind("shared") + " || " + Kind("fallback")}),
                                 Request(kReq2, kClassA).Selectors({Kind("gate")}),
                                 Request("req-3", kClassA).Selectors({Kind("shared")})})
                     .Constraints({MatchAttribute(string_attribute, {kReq1, kReq2})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1)
                            .Attr("kind", StringAttr("shared"))
                            .Attr("stringAttribute", StringAttr("red"))
                            .MultiAlloc()
                            .Consumes(kCounterSet1, {{"c", "1"}}),
                        Device(kDevice2)
                            .Attr("kind", StringAttr("fallback"))
                            .Attr("stringAttribute", StringAttr("blue")),
                        Device(kDevice3)
                            .Attr("kind", StringAttr("gate"))
                            .Attr("stringAttribute", StringAttr("blue"))}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"c", "1"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({})}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq1, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq2, kDriverA, kPool1, kDevice3),
                             DeviceResult("req-3", kDriverA, kPool1, kDevice1).Share({})})},
  });
  const std::vector<Dev> three_partitions = {
      FromCounters(kDevice1, kCounterSet1, {{"memory", "4Gi"}}),
      FromCounters(kDevice2, kCounterSet1, {{"memory", "6Gi"}}),
      FromCounters(kDevice3, kCounterSet1, {{"memory", "4Gi"}})};
  cases.push_back({
      .name = "partitionable-devices-prioritized-list",
      .claims = {Claim(
          kClaim0,
          {Request(kReq0, kClassA),
           FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("6Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("4Gi")})})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA, three_partitions),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"memory", "8Gi"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "partitionable-devices-multiple-devices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA, three_partitions),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"memory", "8Gi"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice3)})},
  });
  auto two_sets = [](const std::string& name, const char* memory, const char* cpus) {
    return Device(name)
        .Consumes(kCounterSet1, {{"memory", memory}}, true)
        .Consumes(kCounterSet2, {{"cpus", cpus}}, true);
  };
  cases.push_back({
      .name = "partitionable-devices-multiple-capacity-pools",
      .claims = {Claim(
          kClaim0,
          {Request(kReq0, kClassA),
           FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("6Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("4Gi")})})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {two_sets(kDevice1, "4Gi", "4"), two_sets(kDevice2, "6Gi", "6"),
                        two_sets(kDevice3, "4Gi", "4")}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "18Gi"}}),
                                    CounterSet(kCounterSet2, {{"cpus", "8"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice3)})},
  });
  auto two_counters = [](const std::string& name, const char* m1, const char* c1, const char* m2,
                         const char* c2) {
    return Device(name)
        .Consumes(kCounterSet1, {{"memory", m1}, {"cpus", c1}}, true)
        .Consumes(kCounterSet2, {{"memory", m2}, {"cpus", c2}}, true);
  };
  cases.push_back({
      .name = "partitionable-devices-multiple-counters",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {two_counters(kDevice1, "4Gi", "6", "2Gi", "4"),
                        two_counters(kDevice2, "6Gi", "4", "6Gi", "6"),
                        two_counters(kDevice3, "4Gi", "4", "4Gi", "4")}),
                 SliceWithCounters(
                     kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                     {CounterSet(kCounterSet1, {{"cpus", "8"}, {"memory", "18Gi"}}),
                      CounterSet(kCounterSet2, {{"cpus", "12"}, {"memory", "18Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "partitionable-devices-multiple-pools",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})},
      .allocated = {{kDriverA, kPool1, kDevice2},
                    {kDriverA, kPool1, kDevice3},
                    {kDriverA, kPool2, kDevice1}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, {{"cpus", "6"}, {"memory", "4Gi"}}),
                        FromCounters(kDevice2, kCounterSet1, {{"cpus", "4"}, {"memory", "6Gi"}}),
                        FromCounters(kDevice3, kCounterSet1, {{"cpus", "4"}, {"memory", "4Gi"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2), {{"cpus", "8"}, {"memory", "18Gi"}}),
                 Slice(kSlice3, kNode1, Pool(kPool2, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, {{"cpus", "6"}, {"memory", "4Gi"}}),
                        FromCounters(kDevice2, kCounterSet1, {{"cpus", "1"}, {"memory", "7Gi"}}),
                        FromCounters(kDevice3, kCounterSet1, {{"cpus", "1"}, {"memory", "7Gi"}})}),
                 Counters1(kSlice4, kNode1, Pool(kPool2, 2), {{"cpus", "8"}, {"memory", "18Gi"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool2, kDevice2),
                             DeviceResult(kReq1, kDriverA, kPool2, kDevice3)})},
  });
  cases.push_back({
      .name = "partitionable-devices-unused-counters-in-counter-set",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "5Gi"}}),
                        Device(kDevice2).Consumes(kCounterSet1, {{"memory", "4Gi"}}),
                        Device(kDevice3).Consumes(kCounterSet1, {{"memory", "4Gi"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1, 2),
                           {{"memory", "8Gi"}, {"unused", "1Gi"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "partitionable-devices-no-capacity-available",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .allocated = {{kDriverA, kPool1, kDevice2}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, {{"memory", "4Gi"}}),
                        FromCounters(kDevice2, kCounterSet1, {{"memory", "16Gi"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1), {{"memory", "18Gi"}})},
  });
  cases.push_back({
      .name = "partitionable-devices-overallocated-capacity-pool",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .allocated = {{kDriverA, kPool1, kDevice2}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, {{"memory", "4Gi"}}),
                        FromCounters(kDevice2, kCounterSet1, {{"memory", "20Gi"}})}),
                 Counters1(kSlice2, kNode1, Pool(kPool1), {{"memory", "18Gi"}})},
  });
  cases.push_back({
      .name = "partitionable-devices-per-device-node-selection-nodename",
      .claims = {Claim(
          kClaim0,
          {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("6Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("4Gi")})})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, PerDevice{}, Pool(kPool1, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, {{"memory", "4Gi"}}).OnNode(kNode1),
                        FromCounters(kDevice2, kCounterSet1, {{"memory", "6Gi"}}).OnNode(kNode2)}),
                 Counters1(kSlice2, PerDevice{}, Pool(kPool1, 2), {{"memory", "18Gi"}})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1)})},
  });
  const api::NodeSelector region1 = LabelSelector("region", {kRegion1});
  cases.push_back({
      .name = "partitionable-devices-per-device-node-selection-node-selector",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(
                     kSlice1, PerDevice{}, Pool(kPool1, 2), kDriverA,
                     {FromCounters(kDevice1, kCounterSet1, {{"memory", "4Gi"}}).OnNodes(region1)}),
                 Counters1(kSlice2, PerDevice{}, Pool(kPool1, 2), {{"memory", "18Gi"}})},
      .expect = {Allocation(region1, {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "partitionable-devices-per-device-node-selection-node-selector-multiple-devices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 3), Request(kReq1, kClassB, 3)})},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, PerDevice{}, Pool(kPool1, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, {{"memory", "4Gi"}}).OnNodes(region1),
                        FromCounters(kDevice2, kCounterSet1, {{"memory", "4Gi"}}).OnNode(kNode1),
                        FromCounters(kDevice3, kCounterSet1, {{"memory", "4Gi"}}).OnAllNodes()}),
                 Counters1(kSlice2, PerDevice{}, Pool(kPool1, 2), {{"memory", "18Gi"}}),
                 Slice(kSlice3, kNode1, Pool(kPool2, 2), kDriverB,
                       {FromCounters(kDevice1, kCounterSet2, {{"memory", "4Gi"}}),
                        FromCounters(kDevice2, kCounterSet2, {{"memory", "4Gi"}}),
                        FromCounters(kDevice3, kCounterSet2, {{"memory", "4Gi"}})}),
                 SliceWithCounters(kSlice4, kNode1, Pool(kPool2, 2), kDriverB,
                                   {CounterSet(kCounterSet2, {{"memory", "12Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice3),
                             DeviceResult(kReq1, kDriverB, kPool2, kDevice1),
                             DeviceResult(kReq1, kDriverB, kPool2, kDevice2),
                             DeviceResult(kReq1, kDriverB, kPool2, kDevice3)})},
  });
  const std::string special = "device.attributes[\"" + kDriverA + "\"].special";
  auto special_device = [](const std::string& name, bool flag, const char* cpu) {
    return Device(name)
        .Attr("special", BoolAttr(flag))
        .Consumes(kCounterSet1, {{cpu, "1"}})
        .Consumes(kCounterSet2, {{"mem", "10Gi"}});
  };
  cases.push_back({
      .name = "partitionable-devices-with-attribute-selector",
      .claims = {Claim(kClaim0,
                       {Request(kReq0, kClassA, 2), Request(kReq1, kClassA).Selectors({special})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {special_device(kDevice1, true, "cpu1"),
                        special_device(kDevice2, false, "cpu2"),
                        special_device(kDevice3, false, "cpu3")}),
                 SliceWithCounters(
                     kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                     {CounterSet(kCounterSet1, {{"cpu1", "1"}, {"cpu2", "1"}, {"cpu3", "1"}}),
                      CounterSet(kCounterSet2, {{"mem", "30Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice3),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice1)})},
  });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Partitionable, AllocatorTable, ::testing::ValuesIn(PartitionableCases()),
                         CaseName);

}  // namespace
}  // namespace berth::plugins::dynamicresources
