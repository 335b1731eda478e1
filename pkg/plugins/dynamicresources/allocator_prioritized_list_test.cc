// Upstream allocator table cases for prioritized lists (firstAvailable subrequests).

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
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

std::vector<AllocatorCase> PrioritizedListCases() {
  std::vector<AllocatorCase> cases;
  const std::vector<api::DeviceClassPtr> classes_ab = {Class(kClassA, kDriverA),
                                                       Class(kClassB, kDriverB)};
  const std::string versions = kDriverA + "/driverVersion";
  cases.push_back({
      .name = "prioritized-list-first-unavailable",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassB, 1),
                                                        SubRequest(kSubReq1, kClassA, 1)})})},
      .classes = classes_ab,
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "prioritized-list-non-available",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassB, 2),
                                                        SubRequest(kSubReq1, kClassA, 2)})})},
      .classes = classes_ab,
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA),
                 SliceWithOneDevice(kSlice2, kNode1, Pool(kPool2), kDriverB)},
  });
  cases.push_back({
      .name = "prioritized-list-device-config",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1),
                                                        SubRequest(kSubReq1, kClassB, 2)})})
                     .Config({Join(kReq0, kSubReq0)}, kDriverA, "foo")
                     .Config({Join(kReq0, kSubReq1)}, kDriverB, "bar")},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverB,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverB, kPool1, kDevice1),
                             DeviceResult(Join(kReq0, kSubReq1), kDriverB, kPool1, kDevice2)})
                     .Config(false, {}, kDriverB, "bar")},
  });
  cases.push_back({
      .name = "prioritized-list-class-config",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 2),
                                                        SubRequest(kSubReq1, kClassB, 2)})})},
      .classes = {ClassWithConfig(kClassA, kDriverA, "foo"),
                  ClassWithConfig(kClassB, kDriverB, "bar")},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverB,
                       {Device(kDevice1), Device(kDevice2)}),
                 Slice(kSlice2, kNode1, Pool(kPool2), kDriverA, {Device(kDevice3)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverB, kPool1, kDevice1),
                             DeviceResult(Join(kReq0, kSubReq1), kDriverB, kPool1, kDevice2)})
                     .Config(true, {}, kDriverB, "bar")},
  });
  cases.push_back({
      .name = "claim-config-scoped-to-subrequests-of-one-request",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1),
                                                        SubRequest(kSubReq1, kClassB, 1)}),
                                 Request(kReq1, kClassA)})
                     .Config({Join(kReq0, kSubReq0), Join(kReq0, kSubReq1)}, kDriverA, "scoped")},
      .classes = classes_ab,
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 2)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq0), kDriverA, kPool1, kDevice0),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice1)})
                     .Config(false, {Join(kReq0, kSubReq0), Join(kReq0, kSubReq1)}, kDriverA,
                             "scoped")},
  });
  cases.push_back({
      .name = "claim-config-covering-all-requests-is-cleared",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1),
                                                        SubRequest(kSubReq1, kClassB, 1)}),
                                 Request(kReq1, kClassA)})
                     .Config({Join(kReq0, kSubReq0), kReq1}, kDriverA, "all")},
      .classes = classes_ab,
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 2)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq0), kDriverA, kPool1, kDevice0),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice1)})
                     .Config(false, {}, kDriverA, "all")},
  });
  cases.push_back({
      .name = "prioritized-list-subrequests-with-expressions",
      .claims = {Claim(
          kClaim0,
          {Request(kReq0, kClassA).Selectors({Memory("1Gi")}),
           FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("4Gi")}),
                                  SubRequest(kSubReq1, kClassA, 2).Selectors({Memory("2Gi")})})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(
          kSlice1, kNode1, Pool(kPool1), kDriverA,
          {Device(kDevice1).Capacity("memory", "2Gi"), Device(kDevice2).Capacity("memory", "2Gi"),
           Device(kDevice3).Capacity("memory", "1Gi")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice3),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice2)})},
  });
  auto versioned = [&](const std::string& name, const char* memory, const char* version) {
    return Device(name).Capacity("memory", memory).Attr("driverVersion", VersionAttr(version));
  };
  auto two_step_claim = [&](std::vector<std::string> constrained) {
    return Claim(kClaim0,
                 {Request(kReq0, kClassA).Selectors({Memory("8Gi")}),
                  FirstAvailable(kReq1,
                                 {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("2Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("1Gi")})})})
        .Constraints({MatchAttribute(versions, std::move(constrained))});
  };
  cases.push_back({
      .name = "prioritized-list-subrequests-with-constraints-ref-parent-request",
      .claims = {two_step_claim({kReq0, kReq1})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {versioned(kDevice1, "8Gi", "1.0.0")}),
                 Slice(kSlice2, kNode1, Pool(kPool2), kDriverA,
                       {versioned(kDevice2, "2Gi", "2.0.0"), versioned(kDevice3, "1Gi", "1.0.0")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool2, kDevice3)})},
  });
  cases.push_back({
      .name = "prioritized-list-subrequests-with-constraints-ref-sub-request",
      .claims = {two_step_claim({kReq0, Join(kReq1, kSubReq0)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {versioned(kDevice1, "8Gi", "1.0.0")}),
                 Slice(kSlice2, kNode1, Pool(kPool2), kDriverA,
                       {versioned(kDevice2, "2Gi", "2.0.0")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool2, kDevice2)})},
  });
  cases.push_back({
      .name = "prioritized-list-subrequests-with-allocation-mode-all",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 0).All(),
                                                        SubRequest(kSubReq1, kClassA, 1)})})},
      .allocated = {{kDriverA, kPool1, kDevice1}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice2)})},
  });
  cases.push_back({
      .name = "prioritized-list-allocation-mode-all-multiple-requests",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA),
                                 FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 0).All(),
                                                        SubRequest(kSubReq1, kClassA, 1)})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice2)})},
  });
  const std::vector<Dev> big_and_small = {Device(kDevice1).Capacity("memory", "8Gi")};
  cases.push_back({
      .name = "prioritized-list-multi-request",
      .claims = {Claim(
          kClaim0,
          {Request(kReq1, kClassA).Selectors({Memory("8Gi")}),
           FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("8Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("4Gi")})})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, big_and_small),
                 Slice(kSlice2, kNode1, Pool(kPool2), kDriverA,
                       {Device(kDevice2).Capacity("memory", "4Gi")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq1, kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool2, kDevice2)})},
  });
  cases.push_back({
      .name = "prioritized-list-with-backtracking",
      .claims = {Claim(
          kClaim0,
          {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1).Selectors({Memory("8Gi")}),
                                  SubRequest(kSubReq1, kClassA, 1).Selectors({Memory("4Gi")})}),
           Request(kReq1, kClassA).Selectors({Memory("8Gi")})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, big_and_small),
                 Slice(kSlice2, kNode1, Pool(kPool2), kDriverA,
                       {Device(kDevice2).Capacity("memory", "4Gi")})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool2, kDevice2),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "prioritized-list-too-many-in-first-subrequest",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassB, 500),
                                                        SubRequest(kSubReq1, kClassA, 1)})})},
      .classes = classes_ab,
      .slices = {SliceWithOneDevice(kSlice1, kNode1, Pool(kPool1), kDriverA)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "prioritized-list-minimum-sum-exceeds-claim-limit",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 20),
                                 FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 20),
                                                        SubRequest(kSubReq1, kClassA, 24)})})},
      .classes = {Class(kClassA, kDriverA)},
      .expect_error = "claim claim-0, request req-1: adding 20 devices exceeds the claim limit",
  });
  cases.push_back({
      .name = "prioritized-list-overflowing-first-subrequest-is-pruned",
      .claims = {Claim(
          kClaim0, {Request(kReq0, kClassA),
                    FirstAvailable(
                        kReq1, {SubRequest(kSubReq0, kClassA, std::numeric_limits<int64_t>::max()),
                                SubRequest(kSubReq1, kClassA, 1)})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq1, kSubReq1), kDriverA, kPool1, kDevice2)})},
      .expect_steps = 8,
  });
  cases.push_back({
      .name = "prioritized-list-allocation-mode-all",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 0).All(),
                                                        SubRequest(kSubReq1, kClassA, 1)})})},
      .allocated = {{kDriverA, kPool1, kDevice2}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1), Device(kDevice2)})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1)})},
  });
  auto generation = [](const char* value) {
    return "device.attributes[\"" + kDriverA + "\"].generation == \"" + value + "\"";
  };
  auto v6_or_v5 = [&] {
    return Claim(
        kClaim0,
        {FirstAvailable(kReq0,
                        {SubRequest(kSubReq0, kClassA, 0).Selectors({generation("v6")}).All(),
                         SubRequest(kSubReq1, kClassA, 0).Selectors({generation("v5")}).All()})});
  };
  cases.push_back({
      .name = "prioritized-list-allocation-mode-all-with-selectors",
      .claims = {v6_or_v5()},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Attr("generation", StringAttr("v5"))})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "prioritized-list-allocation-mode-all-with-selectors-multiple-pools",
      .claims = {v6_or_v5()},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Attr("generation", StringAttr("v5"))}),
                 Slice(kSlice2, kNode1, Pool(kPool2), kDriverA,
                       {Device(kDevice1).Attr("generation", StringAttr("v5"))})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1),
                             DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool2, kDevice1)})},
  });
  cases.push_back({
      .name = "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes",
      .claims = {v6_or_v5()},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Attr("generation", StringAttr("v5"))}),
                 Slice(kSlice2, kNode2, Pool(kPool2), kDriverA,
                       {Device(kDevice1).Attr("generation", StringAttr("v5")),
                        Device(kDevice2).Attr("generation", StringAttr("v6"))})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset",
      .claims = {v6_or_v5()},
      .classes = {ClassWithSelectors(
          kClassA, {"device.driver == \"" + kDriverA + "\" && device.attributes[\"" + kDriverA +
                    "\"].selected"})},
      .slices = {Slice(
          kSlice1, kNode1, Pool(kPool1), kDriverA,
          {Device(kDevice1).Attr("generation", StringAttr("v6")).Attr("selected", BoolAttr(false)),
           Device(kDevice2).Attr("generation", StringAttr("v5")).Attr("selected", BoolAttr(false)),
           Device(kDevice3)
               .Attr("generation", StringAttr("v5"))
               .Attr("selected", BoolAttr(true))})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice3)})},
  });
  cases.push_back({
      .name = "prioritized-list-max-allocation-limit-request",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 32),
                                                        SubRequest(kSubReq1, kClassA, 16)}),
                                 FirstAvailable(kReq1, {SubRequest(kSubReq0, kClassA, 32),
                                                        SubRequest(kSubReq1, kClassA, 16)})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 64)},
      .expect = {Allocation(
          LocalSelector(kNode1),
          Concat(DeviceResults(Join(kReq0, kSubReq1), kDriverA, kPool1, 16, 0),
                 DeviceResults(Join(kReq1, kSubReq1), kDriverA, kPool1, 16, 16)))},
      .expect_steps = 75,
  });
  cases.push_back({
      .name = "prioritized-list-max-allocation-allocation-mode-all",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 0).All(),
                                                        SubRequest(kSubReq1, kClassA, 2)}),
                                 Request(kReq1, kClassB, 2)})},
      .classes = classes_ab,
      .slices = {SliceWithDevices(kSlice1, kNode1, Pool(kPool1), kDriverA, 31),
                 SliceWithDevices(kSlice2, kNode1, Pool(kPool2), kDriverB, 2)},
      .expect = {Allocation(LocalSelector(kNode1),
                            Concat(DeviceResults(Join(kReq0, kSubReq1), kDriverA, kPool1, 2, 0),
                                   DeviceResults(kReq1, kDriverB, kPool2, 2, 0)))},
      .expect_steps = 42,
  });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(PrioritizedList, AllocatorTable,
                         ::testing::ValuesIn(PrioritizedListCases()), CaseName);

}  // namespace
}  // namespace berth::plugins::dynamicresources
