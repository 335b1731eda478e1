// The basic cases of kube-scheduler's allocator table: pools and slices, classes and requests,
// counts and "All", errors. Feature-specific cases are in allocator_*_test.cc.

#include "pkg/plugins/dynamicresources/allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test/testing/dra_allocator_case.h"
#include "test/testing/dra_builders.h"
#include "test/testing/fake_device_selector.h"

namespace berth::plugins::dynamicresources {
namespace {

using namespace berth::testing::dra;  // NOLINT(google-build-using-namespace): test vocabulary.

std::vector<AllocatorCase> BasicCases() {
  std::vector<AllocatorCase> cases;
  cases.push_back({.name = "empty"});
  cases.push_back({
      .name = "simple",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "other-node",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverB),
                 SliceWithOneDevice(kSlice2, kNode2, Pool(kPool2), kDriverA)},
      .node = MakeNode(kNode2, kRegion2),
      .expect = {Allocation(LocalSelector(kNode2),
                            {DeviceResult(kReq0, kDriverA, kPool2, kDevice1)})},
  });
  const std::string one_gi =
      "device.capacity[\"" + kDriverA + "\"].memory.compareTo(quantity(\"1Gi\")) >= 0";
  const std::string two_gi =
      "device.capacity[\"" + kDriverA + "\"].memory.compareTo(quantity(\"2Gi\")) >= 0";
  cases.push_back({
      .name = "small-and-large",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).Selectors({one_gi}),
                                 Request(kReq1, kClassA).Selectors({two_gi})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Capacity("memory", "1Gi"),
                        Device(kDevice2).Capacity("memory", "2Gi")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "small-and-large-backtrack-requests",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).Selectors({one_gi}),
                                 Request(kReq1, kClassA).Selectors({two_gi})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice2).Capacity("memory", "2Gi"),
                        Device(kDevice1).Capacity("memory", "1Gi")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "small-and-large-backtrack-claims",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).Selectors({one_gi})}),
                 Claim(kClaim1, {Request(kReq1, kClassA).Selectors({two_gi})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice2).Capacity("memory", "2Gi"),
                        Device(kDevice1).Capacity("memory", "1Gi")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq1, kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "devices-split-across-different-slices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA),
                 SliceWithOneDevice(kSlice2, kNode1, Pool(kPool2), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool2, kDevice1)})},
  });
  cases.push_back({
      .name = "obsolete-slice",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice("slice-1-obsolete", kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice1)}),
                 Slice("slice-1-obsolete", kNode1, Pool(kPool1, 2), kDriverA, {Device(kDevice2)})
                     .Generation(2)},
  });
  cases.push_back({
      .name = "duplicate-slice",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA),
                 SliceWithOneDevice(kSlice1 + "-2", kNode1, Pool(kPool1, 2), kDriverA)},
      .expect_unschedulable = "invalid resource pools were encountered",
  });
  cases.push_back({
      .name = "no-slices",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
  });
  cases.push_back({
      .name = "not-enough-suitable-devices",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim0, kReq1, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
  });
  cases.push_back({
      .name = "no-classes",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect_error = "could not retrieve device class class-a",
  });
  cases.push_back({
      .name = "unknown-class",
      .claims = {SimpleClaim(kClaim0, kReq0, "unknown-class")},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect_error = "could not retrieve device class unknown-class",
  });
  cases.push_back({
      .name = "empty-class",
      .claims = {SimpleClaim(kClaim0, kReq0, "")},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect_error =
          "claim claim-0, request req-0: missing device class name (unsupported request type?)",
  });
  cases.push_back({
      .name = "no-claims-to-allocate",
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
  });
  return cases;
}

std::vector<AllocatorCase> AllModeCases() {
  std::vector<AllocatorCase> cases;
  cases.push_back({
      .name = "all-devices-single",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-with-consumed-counters",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {Device(kDevice1).Consumes(kCounterSet1, {{"memory", "4Gi"}})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-many",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA),
                 SliceWithOneDevice(kSlice1, kNode1, Pool(kPool2), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool2, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-of-the-incomplete-pool",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA)},
      .expect_error = "claim claim-0, request req-0: asks for all devices, but resource pool "
                      "driver-a/pool-1 is currently being updated",
  });
  const std::vector<api::DeviceClassPtr> classes_ab = {Class(kClassA, kDriverA),
                                                       Class(kClassB, kDriverB)};
  cases.push_back({
      .name = "all-devices-plus-another",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)}),
                 SimpleClaim(kClaim1, kReq0, kClassB)},
      .classes = classes_ab,
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA),
                 SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverB, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-plus-another-reversed",
      .claims = {SimpleClaim(kClaim1, kReq0, kClassB),
                 Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = classes_ab,
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA),
                 SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverB, kPool1, kDevice1)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-many-plus-another",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)}),
                 SimpleClaim(kClaim1, kReq0, kClassB)},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)}),
                 SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverB, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-many-plus-another-reversed",
      .claims = {SimpleClaim(kClaim1, kReq0, kClassB),
                 Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)}),
                 SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverB, kPool1, kDevice1)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "all-devices-no-solution",
      .claims = {SimpleClaim(kClaim1, kReq0, kClassA),
                 Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
  });
  cases.push_back({
      .name = "all-devices-no-solution-reversed",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)}),
                 SimpleClaim(kClaim1, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
  });
  cases.push_back({
      .name = "all-devices-slice-without-devices",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {})},
  });
  cases.push_back({
      .name = "all-devices-no-slices",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
  });
  cases.push_back({
      .name = "all-devices-some-allocated",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
  });
  cases.push_back({
      .name = "all-devices-some-allocated-admin-access",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA).AdminAccess()})},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Admin(),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Admin()})},
  });
  cases.push_back({
      .name = "all-devices-some-allocating-admin-access",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).AdminAccess(),
                                 AllRequest(kReq1, kClassA).AdminAccess()})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
  });
  cases.push_back({
      .name = "count-devices-some-allocated-admin-access",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2).AdminAccess()})},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Admin(),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Admin()})},
  });
  cases.push_back({
      .name = "separate-claims-share-device-admin-access",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).AdminAccess()}),
                 Claim(kClaim1, {Request(kReq0, kClassA).AdminAccess()})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Admin()}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Admin()})},
  });
  cases.push_back({
      .name = "admin-access-claims-device-allocating-for-non-admin-access",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA),
                 Claim(kClaim1, {Request(kReq0, kClassA).AdminAccess()})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Admin()})},
  });
  cases.push_back({
      .name = "all-devices-slice-without-devices-prioritized-list",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 0).All(),
                                                        SubRequest(kSubReq1, kClassB, 1)})})},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {}),
                 SliceWithOneDevice(kSlice2, kNode1, Pool(kPool2), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverB, kPool2, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-no-slices-prioritized-list",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 0).All(),
                                                        SubRequest(kSubReq1, kClassB, 1)})})},
      .classes = classes_ab,
      .slices = {SliceWithOneDevice(kSlice2, kNode1, Pool(kPool2), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverB, kPool2, kDevice1)})},
  });
  cases.push_back({
      .name = "all-devices-some-allocated-prioritized-list",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 0).All(),
                                                        SubRequest(kSubReq1, kClassB, 1)})})},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)}),
                 SliceWithOneDevice(kSlice2, kNode1, Pool(kPool2), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverB, kPool2, kDevice1)})},
  });
  return cases;
}

std::vector<AllocatorCase> PlacementCases() {
  std::vector<AllocatorCase> cases;
  const api::NodeSelector region1 = LabelSelector("region", {kRegion1});
  cases.push_back({
      .name = "network-attached-device",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, region1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(region1, {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "unsuccessful-allocation-network-attached-device",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, region1, Pool(kPool1), kDriverA)},
      .node = MakeNode(kNode2, kRegion2),
  });
  api::NodeSelector union_selector = LabelSelector("region", {kRegion1});
  union_selector.terms[0].match_expressions.push_back(
      api::Requirement{"planet", api::SelectorOperator::kIn, {"earth"}, 0});
  union_selector.terms[0].match_fields.push_back(
      api::Requirement{"metadata.name", api::SelectorOperator::kIn, {kNode1}, 0});
  cases.push_back({
      .name = "many-network-attached-devices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 4)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, region1, Pool(kPool1), kDriverA),
                 SliceWithOneDevice(kSlice1, AllNodes{}, Pool(kPool2), kDriverA),
                 SliceWithOneDevice(kSlice1, LabelSelector("planet", {"earth"}), Pool(kPool3),
                                    kDriverA),
                 SliceWithOneDevice(kSlice1, LocalSelector(kNode1), Pool("pool-4"), kDriverA)},
      .expect = {Allocation(union_selector, {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                                             DeviceResult(kReq0, kDriverA, kPool2, kDevice1),
                                             DeviceResult(kReq0, kDriverA, kPool3, kDevice1),
                                             DeviceResult(kReq0, kDriverA, "pool-4", kDevice1)})},
  });
  cases.push_back({
      .name = "local-and-network-attached-devices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, region1, Pool(kPool1), kDriverA),
                 SliceWithOneDevice(kSlice1, kNode1, Pool(kPool2), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq0, kDriverA, kPool2, kDevice1)})},
  });
  cases.push_back({
      .name = "several-different-drivers",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA), SimpleClaim(kClaim0, kReq0, kClassB)},
      .classes = {Class(kClassA, kDriverA), Class(kClassB, kDriverB)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)}),
                 SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)}),
                 Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverB, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "already-allocated-devices",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .allocated = {{kDriverA, kPool1, kDevice1}, {kDriverA, kPool1, kDevice2}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
  });
  cases.push_back({
      .name = "admin-access-enabled",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).AdminAccess()})},
      .allocated = {{kDriverA, kPool1, kDevice1}, {kDriverA, kPool1, kDevice2}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Admin()})},
  });
  return cases;
}

const std::string kIntAttribute = kDriverA + "/numa";
const std::string kVersionAttribute = kDriverA + "/driverVersion";
const std::string kStringAttribute = kDriverA + "/stringAttribute";
const std::string kBoolAttribute = kDriverA + "/boolAttribute";

std::vector<AllocatorCase> ConstraintCases() {
  std::vector<AllocatorCase> cases;
  const std::vector<api::DeviceClassPtr> classes_ab = {Class(kClassA, kDriverA),
                                                       Class(kClassB, kDriverB)};
  auto full = [](const std::string& name) {
    return Device(name)
        .Attr("driverVersion", VersionAttr("1.0.0"))
        .Attr("numa", IntAttr(1))
        .Attr("stringAttribute", StringAttr("stringAttributeValue"))
        .Attr("boolAttribute", BoolAttr(true));
  };
  cases.push_back({
      .name = "with-constraint",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})
                     .Constraints({MatchAttribute(kIntAttribute), MatchAttribute(kVersionAttribute),
                                   MatchAttribute(kStringAttribute),
                                   MatchAttribute(kBoolAttribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {full(kDevice1), full(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "with-constraint-non-existent-attribute",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)
                     .Constraints({MatchAttribute(kDriverA + "/NonExistentAttribute")})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
  });
  struct Mismatch {
    const char* name;
    std::string attribute;
    std::string key;
    api::DeviceAttribute first;
    api::DeviceAttribute second;
  };
  for (const Mismatch& m :
       {Mismatch{"with-constraint-not-matching-int-attribute", kIntAttribute, "numa", IntAttr(1),
                 IntAttr(2)},
        Mismatch{"with-constraint-not-matching-string-attribute", kStringAttribute,
                 "stringAttribute", StringAttr("stringAttributeValue"),
                 StringAttr("stringAttributeValue2")},
        Mismatch{"with-constraint-not-matching-bool-attribute", kBoolAttribute, "boolAttribute",
                 BoolAttr(true), BoolAttr(false)},
        Mismatch{"with-constraint-not-matching-version-attribute", kVersionAttribute,
                 "driverVersion", VersionAttr("1.0.0"), VersionAttr("2.0.0")}}) {
    cases.push_back({
        .name = m.name,
        .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})
                       .Constraints({MatchAttribute(m.attribute)})},
        .classes = classes_ab,
        .slices = {Slice(
            kSlice1, kNode1, Pool(kPool1), kDriverA,
            {Device(kDevice1).Attr(m.key, m.first), Device(kDevice2).Attr(m.key, m.second)})},
    });
  }
  cases.push_back({
      .name = "with-constraint-not-matching-int-attribute-all-devices",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})
                     .Constraints({MatchAttribute(kIntAttribute)})},
      .classes = classes_ab,
      .slices = {Slice(
          kSlice1, kNode1, Pool(kPool1), kDriverA,
          {Device(kDevice1).Attr("numa", IntAttr(1)), Device(kDevice2).Attr("numa", IntAttr(2))})},
      .expect_error = "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
                      "because a claim constraint would not be satisfied",
  });
  cases.push_back({
      .name = "partitionable-all-mode-constraint-must-error-with-reserved-counter",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})
                     .Constraints({MatchAttribute(kIntAttribute)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices =
          {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                 {Device(kDevice1).Attr("numa", IntAttr(1)),
                  Device(kDevice2).Attr("numa", IntAttr(2)).Consumes(kCounterSet1, {{"c", "1"}})}),
           SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                             {CounterSet(kCounterSet1, {{"c", "1"}})})},
      .expect_error = "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
                      "because a claim constraint would not be satisfied",
  });
  cases.push_back({
      .name = "with-constraint-for-request",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})
                     .Constraints({MatchAttribute(kVersionAttribute, {kReq0})})},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Attr("driverVersion", VersionAttr("1.0.0")),
                        Device(kDevice2).Attr("driverVersion", VersionAttr("2.0.0"))})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "with-constraint-for-request-retry",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})
                     .Constraints({MatchAttribute(kVersionAttribute, {kReq0}),
                                   MatchAttribute(kStringAttribute)})},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1)
                            .Attr("driverVersion", VersionAttr("1.0.0"))
                            .Attr("stringAttribute", StringAttr("a")),
                        Device(kDevice2)
                            .Attr("driverVersion", VersionAttr("2.0.0"))
                            .Attr("stringAttribute", StringAttr("b")),
                        Device(kDevice3)
                            .Attr("driverVersion", VersionAttr("3.0.0"))
                            .Attr("stringAttribute", StringAttr("b"))})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "unknown-constraint",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA).Constraints({api::DeviceConstraint{}})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect_error = "empty constraint (unsupported constraint type?)",
  });
  return cases;
}

std::vector<AllocatorCase> ConfigCases() {
  std::vector<AllocatorCase> cases;
  cases.push_back({
      .name = "with-class-device-config",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {ClassWithConfig(kClassA, kDriverA, "classAttribute")},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})
                     .Config(true, {}, kDriverA, "classAttribute")},
  });
  cases.push_back({
      .name = "with-class-device-config-with-multiple-request-and-configs",
      .claims = {Claim(
          kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA), Request(kReq2, kClassB)})},
      .classes = {ClassWithConfig(kClassA, kDriverA, "classAttribute-A"),
                  ClassWithConfig(kClassB, kDriverB, "classAttribute-B")},
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 2),
                 SliceWithOneDevice(kSlice2, kNode1, Pool(kPool1), kDriverB)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice0),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq2, kDriverB, kPool1, kDevice1)})
                     .Config(true, {kReq0, kReq1}, kDriverA, "classAttribute-A")
                     .Config(true, {kReq2}, kDriverB, "classAttribute-B")},
  });
  cases.push_back({
      .name = "with-claim-config-for-two-requests",
      .claims = {Claim(kClaim0,
                       {Request(kReq0, kClassA), Request(kReq1, kClassA), Request(kReq2, kClassA)})
                     .Config({kReq0, kReq1}, kDriverA, "deviceAttribute")},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 3)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice0),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq2, kDriverA, kPool1, kDevice2)})
                     .Config(false, {kReq0, kReq1}, kDriverA, "deviceAttribute")},
  });
  cases.push_back({
      .name = "claim-with-device-config",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA).Config({}, kDriverA, "deviceAttribute")},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})
                     .Config(false, {}, kDriverA, "deviceAttribute")},
  });
  return cases;
}

std::vector<AllocatorCase> ErrorCases() {
  std::vector<AllocatorCase> cases;
  cases.push_back({
      .name = "invalid-CEL-one-device",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).Selectors({"noSuchVar"})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect_error = "claim claim-0: selector #0: CEL compile error: compilation failed: ERROR: "
                      "<input>:1:1: undeclared reference to 'noSuchVar' (in container '')",
  });
  cases.push_back({
      .name = "invalid-CEL-one-device-class",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {ClassWithSelectors(kClassA, {"noSuchVar"})},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect_error = "class class-a: selector #0: CEL compile error: compilation failed: ERROR: "
                      "<input>:1:1: undeclared reference to 'noSuchVar' (in container '')",
  });
  cases.push_back({
      .name = "invalid-CEL-all-devices",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA).Selectors({"noSuchVar"})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect_error = "undeclared reference",
  });
  cases.push_back({
      .name = "too-many-devices-single-request",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 500)})},
      .classes = {Class(kClassA, kDriverA)},
      .expect_error = "exceeds the claim limit",
  });
  cases.push_back({
      .name = "many-devices-okay",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 32)})},
      .classes = {Class(kClassA, kDriverA)},
  });
  cases.push_back({
      .name = "too-many-devices-total",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 32), Request(kReq1, kClassA, 1)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 33)},
      .expect_error = "exceeds the claim limit",
  });
  const int64_t half_max = std::numeric_limits<int64_t>::max() / 2 + 1;
  cases.push_back({
      .name = "exact-count-total-overflows-claim-limit",
      .claims = {Claim(kClaim0,
                       {Request(kReq0, kClassA, half_max), Request(kReq1, kClassA, half_max)})},
      .classes = {Class(kClassA, kDriverA)},
      .expect_error = "exceeds the claim limit",
  });
  cases.push_back({
      .name = "exact-count-total-would-wrap-to-zero",
      .claims = {Claim(kClaim0,
                       {Request(kReq0, kClassA, half_max), Request(kReq1, kClassA, half_max),
                        Request(kReq2, kClassA, half_max), Request("req-3", kClassA, half_max)})},
      .classes = {Class(kClassA, kDriverA)},
      .expect_error = "exceeds the claim limit",
  });
  cases.push_back({
      .name = "exact-count-sum-exceeds-claim-limit",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 20), Request(kReq1, kClassA, 20)})},
      .classes = {Class(kClassA, kDriverA)},
      .expect_error = "claim claim-0, request req-1: adding 20 devices exceeds the claim limit of "
                      "32, with 20 already accounted for",
  });
  cases.push_back({
      .name = "exact-count-sum-exactly-fills-claim-limit",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 16), Request(kReq1, kClassA, 16)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 32)},
      .expect = {Allocation(LocalSelector(kNode1),
                            Concat(DeviceResults(kReq0, kDriverA, kPool1, 16, 0),
                                   DeviceResults(kReq1, kDriverA, kPool1, 16, 16)))},
  });
  cases.push_back({
      .name = "max-number-devices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 32)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 32)},
      .expect = {Allocation(LocalSelector(kNode1), DeviceResults(kReq0, kDriverA, kPool1, 32, 0))},
  });
  cases.push_back({
      .name = "all-devices-invalid-CEL",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 500)})},
      .classes = {Class(kClassA, kDriverA)},
      .expect_error = "exceeds the claim limit",
  });
  return cases;
}

TEST_P(AllocatorTable, Case) { RunAllocatorCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Basic, AllocatorTable, ::testing::ValuesIn(BasicCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(AllMode, AllocatorTable, ::testing::ValuesIn(AllModeCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Constraints, AllocatorTable, ::testing::ValuesIn(ConstraintCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Config, AllocatorTable, ::testing::ValuesIn(ConfigCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Errors, AllocatorTable, ::testing::ValuesIn(ErrorCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Placement, AllocatorTable, ::testing::ValuesIn(PlacementCases()),
                         CaseName);

// ---- Berth's own cases: what upstream's table does not cover ----

AllocateOutcome RunAllocator(
    const std::vector<api::ResourceClaimPtr>& claims,
    const std::vector<api::ResourceSlicePtr>& slices, const AllocatedState& state = {},
    const std::vector<api::DeviceTaintRule>& rules = {}, const AllocateOptions& options = {},
    const std::vector<api::DeviceClassPtr>& classes = {Class(kClassA, kDriverA)}) {
  testing::FakeDeviceSelectorEvaluator evaluator;
  Allocator allocator(state, classes, slices, rules, evaluator,
                      [] { return std::string("share"); });
  return allocator.Allocate(MakeNode(kNode1, kRegion1), claims, options);
}

TEST(AllocatorTest, DeviceTaintRulesTaintDevicesAndTolerationsAllowThem) {
  api::DeviceTaintRule rule;
  rule.device_selector = api::DeviceTaintSelector{kDriverA, kPool1, kDevice1};
  rule.taint = {"maintenance", "", api::DeviceTaint::Effect::kNoSchedule, std::nullopt};
  const std::vector<api::ResourceSlicePtr> slices = {
      SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)};

  AllocateOutcome blocked =
      RunAllocator({SimpleClaim(kClaim0, kReq0, kClassA)}, slices, {}, {rule});
  EXPECT_EQ(blocked.kind, AllocateOutcome::Kind::kUnschedulable);
  EXPECT_EQ(blocked.message, "cannot allocate all claims");

  api::DeviceToleration toleration{"maintenance", api::DeviceToleration::Operator::kExists, "",
                                   std::nullopt, std::nullopt};
  AllocateOutcome allowed = RunAllocator(
      {SimpleClaim(kClaim0, kReq0, kClassA).Tolerations({toleration})}, slices, {}, {rule});
  ASSERT_EQ(allowed.kind, AllocateOutcome::Kind::kAllocated) << allowed.message;
  ASSERT_EQ(allowed.results.size(), 1u);
  EXPECT_EQ(allowed.results[0].results[0].tolerations,
            std::vector<api::DeviceToleration>{toleration});

  // A rule with the None effect is informational.
  rule.taint.effect = api::DeviceTaint::Effect::kNone;
  EXPECT_EQ(RunAllocator({SimpleClaim(kClaim0, kReq0, kClassA)}, slices, {}, {rule}).kind,
            AllocateOutcome::Kind::kAllocated);
}

TEST(AllocatorTest, InFlightAllocationsAreNotHandedOutAgain) {
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {Device(kDevice1), Device(kDevice2)})};
  AllocatedState state;
  api::AllocationResult in_flight;
  in_flight.results.push_back(DeviceResult(kReq0, kDriverA, kPool1, kDevice1).result);
  ASSERT_TRUE(state.AddAllocation(in_flight));
  AllocateOutcome outcome = RunAllocator({SimpleClaim(kClaim0, kReq0, kClassA)}, slices, state);
  ASSERT_EQ(outcome.kind, AllocateOutcome::Kind::kAllocated) << outcome.message;
  EXPECT_EQ(outcome.results[0].results[0].device, kDevice2);

  // An in-flight share uses up capacity of a multi-allocatable device.
  const std::vector<api::ResourceSlicePtr> shared = {
      Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
            {Device(kDevice1).Capacity("mem", "2").MultiAlloc()})};
  AllocatedState share_state;
  api::AllocationResult share;
  share.results.push_back(
      DeviceResult(kReq0, kDriverA, kPool1, kDevice1).Share({{"mem", "2"}}).result);
  ASSERT_TRUE(share_state.AddAllocation(share));
  EXPECT_EQ(RunAllocator({Claim(kClaim0, {Request(kReq0, kClassA).Capacity("mem", "1")})}, shared,
                         share_state)
                .kind,
            AllocateOutcome::Kind::kUnschedulable);
  EXPECT_EQ(
      RunAllocator({Claim(kClaim0, {Request(kReq0, kClassA).Capacity("mem", "1")})}, shared).kind,
      AllocateOutcome::Kind::kAllocated);
}

TEST(AllocatorTest, StepBudgetStopsTheSearchWithAClearError) {
  // Five devices wanted from four: the search tries every combination before giving up.
  const std::vector<api::ResourceSlicePtr> slices = {
      SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 4)};
  const std::vector<api::ResourceClaimPtr> claims = {Claim(kClaim0, {Request(kReq0, kClassA, 5)})};
  AllocateOutcome unbounded = RunAllocator(claims, slices);
  EXPECT_EQ(unbounded.kind, AllocateOutcome::Kind::kUnschedulable);
  EXPECT_EQ(unbounded.steps, 16);

  AllocateOptions options;
  options.max_steps = 10;
  AllocateOutcome bounded = RunAllocator(claims, slices, {}, {}, options);
  EXPECT_EQ(bounded.kind, AllocateOutcome::Kind::kAborted);
  EXPECT_EQ(bounded.message, "filter operation aborted: search step budget of 10 exceeded");
  EXPECT_TRUE(bounded.results.empty());

  options.max_steps = 16;
  EXPECT_EQ(RunAllocator(claims, slices, {}, {}, options).kind,
            AllocateOutcome::Kind::kUnschedulable);
}

TEST(AllocatorTest, CancellationAndPastDeadlineStopTheSearch) {
  const std::vector<api::ResourceSlicePtr> slices = {
      SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)};
  const std::vector<api::ResourceClaimPtr> claims = {SimpleClaim(kClaim0, kReq0, kClassA)};
  std::atomic<bool> cancelled{true};
  AllocateOptions options;
  options.cancelled = &cancelled;
  AllocateOutcome outcome = RunAllocator(claims, slices, {}, {}, options);
  EXPECT_EQ(outcome.kind, AllocateOutcome::Kind::kAborted);
  EXPECT_EQ(outcome.message, "filter operation aborted: canceled");

  AllocateOptions past;
  past.deadline = std::chrono::steady_clock::time_point{};
  outcome = RunAllocator(claims, slices, {}, {}, past);
  EXPECT_EQ(outcome.kind, AllocateOutcome::Kind::kAborted);
  EXPECT_EQ(outcome.message, "filter operation aborted: deadline exceeded");

  AllocateOptions far;
  far.deadline = std::chrono::steady_clock::time_point::max();
  EXPECT_EQ(RunAllocator(claims, slices, {}, {}, far).kind, AllocateOutcome::Kind::kAllocated);
}

TEST(AllocatorTest, CelErrorsNameTheSelectorAndDevice) {
  const std::vector<api::ResourceSlicePtr> slices = {
      SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)};
  const std::string missing = "device.attributes[\"" + kDriverA + "\"][\"missingAttr\"]";
  AllocateOutcome claim_error = RunAllocator(
      {Claim(kClaim0, {Request(kReq0, kClassA).Selectors({"true", missing})})}, slices);
  EXPECT_EQ(claim_error.kind, AllocateOutcome::Kind::kError);
  EXPECT_EQ(claim_error.message,
            "claim claim-0: selector #1 on device driver-a/pool-1/device-1: CEL runtime error: no "
            "such key: missingAttr");

  AllocateOutcome class_error = RunAllocator({SimpleClaim(kClaim0, kReq0, kClassA)}, slices, {}, {},
                                             {}, {ClassWithSelectors(kClassA, {missing})});
  EXPECT_EQ(class_error.kind, AllocateOutcome::Kind::kError);
  EXPECT_EQ(class_error.message,
            "class class-a: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: no "
            "such key: missingAttr");

  // A namespaced claim is named namespace/name.
  ClaimB namespaced = SimpleClaim(kClaim0, kReq0, kClassA);
  namespaced.claim.meta.namespace_ = "team";
  namespaced.claim.spec.requests[0].exactly->selectors.push_back(Cel("noSuchVar"));
  AllocateOutcome compile_error = RunAllocator({namespaced}, slices);
  EXPECT_EQ(compile_error.message,
            "claim team/claim-0: selector #0: CEL compile error: compilation failed: ERROR: "
            "<input>:1:1: undeclared reference to 'noSuchVar' (in container '')");
}

TEST(AllocatorTest, DefaultShareIdsAreDistinctUuids) {
  testing::FakeDeviceSelectorEvaluator evaluator;
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {Device(kDevice1).MultiAlloc()})};
  Allocator allocator({}, {Class(kClassA, kDriverA)}, slices, {}, evaluator);
  AllocateOutcome outcome =
      allocator.Allocate(MakeNode(kNode1, kRegion1),
                         {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})});
  ASSERT_EQ(outcome.kind, AllocateOutcome::Kind::kAllocated) << outcome.message;
  const auto& results = outcome.results[0].results;
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].share_id && results[1].share_id);
  EXPECT_NE(*results[0].share_id, *results[1].share_id);
  for (const auto& r : results) {
    const std::string& id = *r.share_id;
    ASSERT_EQ(id.size(), 36u) << id;
    EXPECT_EQ(id[8], '-');
    EXPECT_EQ(id[14], '4') << "version 4: " << id;
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << "RFC 4122 variant: " << id;
  }
}

TEST(AllocatorTest, AllocatorIsReusableAcrossNodesAndCalls) {
  testing::FakeDeviceSelectorEvaluator evaluator;
  const std::vector<api::ResourceSlicePtr> slices = {
      SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA),
      SliceWithOneDevice(kSlice2, kNode2, Pool(kPool2), kDriverA)};
  Allocator allocator({}, {Class(kClassA, kDriverA)}, slices, {}, evaluator);
  const std::vector<api::ResourceClaimPtr> claims = {SimpleClaim(kClaim0, kReq0, kClassA)};
  for (int i = 0; i < 2; ++i) {
    AllocateOutcome on_node1 = allocator.Allocate(MakeNode(kNode1, kRegion1), claims);
    ASSERT_EQ(on_node1.kind, AllocateOutcome::Kind::kAllocated);
    EXPECT_EQ(on_node1.results[0].results[0].pool, kPool1);
    AllocateOutcome on_node2 = allocator.Allocate(MakeNode(kNode2, kRegion2), claims);
    ASSERT_EQ(on_node2.kind, AllocateOutcome::Kind::kAllocated);
    EXPECT_EQ(on_node2.results[0].results[0].pool, kPool2);
    EXPECT_EQ(on_node2.results[0].node_selector, LocalSelector(kNode2));
  }
}

TEST(AllocatorTest, DecidingOnlyMakesNoShareIdsAndAgreesWithAllocating) {
  testing::FakeDeviceSelectorEvaluator evaluator;
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, {Device(kDevice1).MultiAlloc()})};
  int share_ids = 0;
  Allocator allocator({}, {Class(kClassA, kDriverA)}, slices, {}, evaluator, [&share_ids] {
    ++share_ids;
    return std::string("share");
  });
  const std::vector<api::ResourceClaimPtr> claims = {
      Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})};
  AllocateOptions decide;
  decide.decide_only = true;
  AllocateOutcome decided = allocator.Allocate(MakeNode(kNode1, kRegion1), claims, decide);
  EXPECT_EQ(decided.kind, AllocateOutcome::Kind::kAllocated) << decided.message;
  EXPECT_TRUE(decided.results.empty());
  EXPECT_EQ(share_ids, 0);
  EXPECT_EQ(allocator.Allocate(MakeNode(kNode2, kRegion2), claims, decide).kind,
            AllocateOutcome::Kind::kUnschedulable);

  AllocateOutcome allocated = allocator.Allocate(MakeNode(kNode1, kRegion1), claims);
  ASSERT_EQ(allocated.kind, AllocateOutcome::Kind::kAllocated) << allocated.message;
  EXPECT_EQ(allocated.results[0].results.size(), 2u);
  EXPECT_EQ(share_ids, 2);
}

TEST(AllocatorTest, CounterSumsBeyondExactArithmeticAreReportedNotRounded) {
  // 1e60 + 1 needs 61 significant digits, more than a Quantity holds: the allocator reports it
  // instead of rounding the sum (upstream's arbitrary-precision decimals would allocate both).
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
            {Device(kDevice1).Consumes(kCounterSet1, {{"c", "1e60"}}),
             Device(kDevice2).Consumes(kCounterSet1, {{"c", "1"}})}),
      SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                        {CounterSet(kCounterSet1, {{"c", "2e60"}})})};
  AllocateOutcome outcome = RunAllocator({Claim(kClaim0, {Request(kReq0, kClassA, 2)})}, slices);
  EXPECT_EQ(outcome.kind, AllocateOutcome::Kind::kError);
  EXPECT_EQ(outcome.message,
            "claim claim-0, request req-0: counters of device driver-a/pool-1/device-2 cannot be "
            "summed exactly");
  // Each alone is fine.
  EXPECT_EQ(RunAllocator({SimpleClaim(kClaim0, kReq0, kClassA)}, slices).kind,
            AllocateOutcome::Kind::kAllocated);
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
