// Upstream allocator table cases for device taints and tolerations, DeviceTaintRules, binding
// conditions and binds-to-node.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "test/testing/dra_allocator_case.h"
#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using namespace berth::testing::dra;  // NOLINT(google-build-using-namespace): test vocabulary.

using Effect = api::DeviceTaint::Effect;
using Op = api::DeviceToleration::Operator;

const api::DeviceTaint kTaintNone{"taint-key", "taint-value", Effect::kNone, std::nullopt};
const api::DeviceTaint kTaintNoSchedule{"taint-key", "taint-value", Effect::kNoSchedule,
                                        std::nullopt};
const api::DeviceTaint kTaintNoExecute{"taint-key", "taint-value-2", Effect::kNoExecute,
                                       std::nullopt};
const api::DeviceToleration kTolerateNoSchedule{"taint-key", Op::kExists, "", Effect::kNoSchedule,
                                                std::nullopt};
const api::DeviceToleration kTolerateNoExecute{"taint-key", Op::kEqual, "taint-value-2",
                                               Effect::kNoExecute, std::nullopt};
const api::DeviceToleration kTolerateKey1{"key1", Op::kExists, "", Effect::kNoSchedule,
                                          std::nullopt};

Dev FromCounters(const std::string& name, const std::string& set, const char* memory) {
  return Device(name).Consumes(set, {{"memory", memory}}, true);
}

std::vector<AllocatorCase> TaintCases() {
  std::vector<AllocatorCase> cases;
  const std::vector<api::DeviceClassPtr> classes_ab = {Class(kClassA, kDriverA),
                                                       Class(kClassB, kDriverB)};
  const std::vector<Dev> two_tainted = {Device(kDevice1).Taints({kTaintNoSchedule}),
                                        Device(kDevice2).Taints({kTaintNoExecute})};
  cases.push_back({
      .name = "tainted-two-devices",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, two_tainted)},
  });
  cases.push_back({
      .name = "tainted-one-device-two-taints",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Taints({kTaintNoSchedule, kTaintNoExecute})})},
  });
  cases.push_back({
      .name = "tainted-two-devices-tolerated",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA).Tolerations({kTolerateNoExecute})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, two_tainted)},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Tolerations({kTolerateNoExecute})})},
  });
  cases.push_back({
      .name = "tainted-two-devices-prioritized-list-tolerated",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassA, 1),
                                                        SubRequest(kSubReq1, kClassA, 1)
                                                            .Tolerations({kTolerateNoExecute})})})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA, two_tainted)},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(Join(kReq0, kSubReq1), kDriverA, kPool1, kDevice2)
                                 .Tolerations({kTolerateNoExecute})})},
  });
  cases.push_back({
      .name = "tainted-no-effect",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Taints({kTaintNone})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "tainted-one-device-two-taints-both-tolerated",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)
                     .Tolerations({kTolerateNoSchedule, kTolerateNoExecute})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Taints({kTaintNoSchedule, kTaintNoExecute})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Tolerations({kTolerateNoSchedule, kTolerateNoExecute})})},
  });
  cases.push_back({
      .name = "tainted-prioritized-list",
      .claims = {Claim(kClaim0, {FirstAvailable(kReq0, {SubRequest(kSubReq0, kClassB, 1),
                                                        SubRequest(kSubReq1, kClassA, 1)})})},
      .classes = classes_ab,
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Taints({kTaintNoSchedule})})},
  });
  cases.push_back({
      .name = "tainted-admin-access",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA).AdminAccess()})},
      .allocated = {{kDriverA, kPool1, kDevice1}, {kDriverA, kPool1, kDevice2}},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Taints({kTaintNoSchedule})})},
  });
  cases.push_back({
      .name = "tainted-all-devices-single",
      .claims = {Claim(kClaim0, {AllRequest(kReq0, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).Taints({kTaintNoSchedule})})},
  });
  cases.push_back({
      .name = "partitionable-devices-with-binding-conditions-and-taints",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, "4Gi")
                            .BindingConditions({"IsPrepare"}, {"BindingFailed"})
                            .Taints({{"key1", "value1", Effect::kNoSchedule, std::nullopt}}),
                        FromCounters(kDevice2, kCounterSet1, "4Gi")}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
  });
  cases.push_back({
      .name = "partitionable-devices-with-binding-conditions-and-taints-tolerated",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)}).Tolerations({kTolerateKey1})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, "4Gi")
                            .BindingConditions({"IsPrepare"}, {"BindingFailed"})
                            .Taints({{"key1", "value1", Effect::kNoSchedule, std::nullopt}}),
                        FromCounters(kDevice2, kCounterSet1, "4Gi")}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
      .expect = {Allocation(
          LocalSelector(kNode1),
          {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
               .Binding({"IsPrepare"}, {"BindingFailed"})
               .Tolerations({kTolerateKey1}),
           DeviceResult(kReq0, kDriverA, kPool1, kDevice2).Tolerations({kTolerateKey1})})},
  });
  return cases;
}

std::vector<AllocatorCase> BindingConditionCases() {
  std::vector<AllocatorCase> cases;
  cases.push_back({
      .name = "device-binding-conditions",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).BindingConditions({"IsPrepare"}, {"BindingFailed"})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Binding({"IsPrepare"}, {"BindingFailed"})})},
  });
  cases.push_back({
      .name = "binding-conditions-multiple-devices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2), Request(kReq1, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1).BindingConditions({"IsPrepare"}, {"BindingFailed"}),
                        Device(kDevice2).BindingConditions({"IsPrepare2"}, {"BindingFailed2"}),
                        Device(kDevice3).BindingConditions({"IsPrepare3"}, {"BindingFailed3"})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Binding({"IsPrepare"}, {"BindingFailed"}),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2)
                                 .Binding({"IsPrepare2"}, {"BindingFailed2"}),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice3)
                                 .Binding({"IsPrepare3"}, {"BindingFailed3"})})},
  });
  cases.push_back({
      .name = "binding-conditions-with-and-without",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA), Request(kReq1, kClassA)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1), kDriverA,
                       {Device(kDevice1),
                        Device(kDevice2).BindingConditions({"IsPrepare"}, {"BindingFailed"})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1),
                             DeviceResult(kReq1, kDriverA, kPool1, kDevice2)
                                 .Binding({"IsPrepare"}, {"BindingFailed"})})},
  });
  cases.push_back({
      .name = "node-restriction",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, LabelSelector("planet", {"earth"}), Pool(kPool1), kDriverA,
                       {Device(kDevice1).BindsToNode()})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)})},
  });
  cases.push_back({
      .name = "partitionable-devices-with-binding-conditions",
      .claims = {SimpleClaim(kClaim0, kReq0, kClassA)},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, "4Gi")
                            .BindingConditions({"IsPrepare"}, {"BindingFailed"})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Binding({"IsPrepare"}, {"BindingFailed"})})},
  });
  cases.push_back({
      .name = "partitionable-devices-with-binding-conditions-multiple",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, "4Gi")
                            .BindingConditions({"IsPrepare"}, {"BindingFailed"}),
                        FromCounters(kDevice2, kCounterSet1, "4Gi")
                            .BindingConditions({"IsPrepare2"}, {"BindingFailed2"})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Binding({"IsPrepare"}, {"BindingFailed"}),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2)
                                 .Binding({"IsPrepare2"}, {"BindingFailed2"})})},
  });
  cases.push_back({
      .name = "partitionable-devices-with-binding-conditions-some-devices-no-conditions",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 3)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice1, kNode1, Pool(kPool1, 2), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, "2Gi")
                            .BindingConditions({"IsPrepare"}, {"BindingFailed"}),
                        FromCounters(kDevice2, kCounterSet1, "2Gi"),
                        FromCounters(kDevice3, kCounterSet1, "4Gi")
                            .BindingConditions({"IsReady"}, {"BindingTimeout"})}),
                 SliceWithCounters(kSlice2, kNode1, Pool(kPool1, 2), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Binding({"IsPrepare"}, {"BindingFailed"}),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice3)
                                 .Binding({"IsReady"}, {"BindingTimeout"})})},
  });
  cases.push_back({
      .name = "partitionable-devices-with-binding-conditions-multi-slices",
      .claims = {Claim(kClaim0, {Request(kReq0, kClassA, 2)})},
      .classes = {Class(kClassA, kDriverA)},
      .slices = {Slice(kSlice4, kNode1, Pool(kPool1, 4), kDriverA,
                       {FromCounters(kDevice1, kCounterSet1, "4Gi")
                            .BindingConditions({"IsPrepare"}, {"BindingFailed"})}),
                 SliceWithCounters(kSlice3, kNode1, Pool(kPool1, 4), kDriverA,
                                   {CounterSet(kCounterSet1, {{"memory", "8Gi"}})}),
                 Slice(kSlice2, kNode1, Pool(kPool1, 4), kDriverA,
                       {FromCounters(kDevice2, kCounterSet2, "4Gi")}),
                 SliceWithCounters(kSlice1, kNode1, Pool(kPool1, 4), kDriverA,
                                   {CounterSet(kCounterSet2, {{"memory", "8Gi"}})})},
      .expect = {Allocation(LocalSelector(kNode1),
                            {DeviceResult(kReq0, kDriverA, kPool1, kDevice2),
                             DeviceResult(kReq0, kDriverA, kPool1, kDevice1)
                                 .Binding({"IsPrepare"}, {"BindingFailed"})})},
  });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Taints, AllocatorTable, ::testing::ValuesIn(TaintCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(BindingConditions, AllocatorTable,
                         ::testing::ValuesIn(BindingConditionCases()), CaseName);

}  // namespace
}  // namespace berth::plugins::dynamicresources
