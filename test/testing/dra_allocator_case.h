#ifndef BERTH_TEST_TESTING_DRA_ALLOCATOR_CASE_H_
#define BERTH_TEST_TESTING_DRA_ALLOCATOR_CASE_H_

// One table case of the DynamicResources allocator's tests and the runner that checks it. The
// cases port kube-scheduler's shared allocator test table (structured/internal/allocatortesting)
// for the feature set on by default in v1.37: each names the upstream case it ports.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/plugins/dynamicresources/allocated_state.h"
#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/cel_selector_evaluator.h"
#include "test/testing/dra_builders.h"
#include "test/testing/fake_device_selector.h"

namespace berth::testing::dra {

using plugins::dynamicresources::AllocatedState;
using plugins::dynamicresources::AllocateOutcome;
using plugins::dynamicresources::Allocator;
using plugins::dynamicresources::DeviceId;

// The names upstream's table uses.
inline const std::string kRegion1 = "region-1";
inline const std::string kRegion2 = "region-2";
inline const std::string kNode1 = "node-1";
inline const std::string kNode2 = "node-2";
inline const std::string kClassA = "class-a";
inline const std::string kClassB = "class-b";
inline const std::string kDriverA = "driver-a";
inline const std::string kDriverB = "driver-b";
inline const std::string kPool1 = "pool-1";
inline const std::string kPool2 = "pool-2";
inline const std::string kPool3 = "pool-3";
inline const std::string kReq0 = "req-0";
inline const std::string kReq1 = "req-1";
inline const std::string kReq2 = "req-2";
inline const std::string kSubReq0 = "subReq-0";
inline const std::string kSubReq1 = "subReq-1";
inline const std::string kClaim0 = "claim-0";
inline const std::string kClaim1 = "claim-1";
inline const std::string kSlice1 = "slice-1";
inline const std::string kSlice2 = "slice-2";
inline const std::string kSlice3 = "slice-3";
inline const std::string kSlice4 = "slice-4";
inline const std::string kDevice0 = "device-0";
inline const std::string kDevice1 = "device-1";
inline const std::string kDevice2 = "device-2";
inline const std::string kDevice3 = "device-3";
inline const std::string kCounterSet1 = "counter-set-1";
inline const std::string kCounterSet2 = "counter-set-2";
inline const std::string kCapacity0 = "capacity-0";
inline const std::string kCapacity1 = "capacity-1";

inline std::string Join(const std::string& a, const std::string& b) { return a + "/" + b; }

struct AllocatorCase {
  std::string name{};
  std::vector<api::ResourceClaimPtr> claims{};
  std::vector<DeviceId> allocated{};
  AllocatedState state{};  // Shares and capacities allocated; `allocated` is added to it.
  std::vector<api::DeviceClassPtr> classes{};
  std::vector<api::ResourceSlicePtr> slices{};
  std::vector<api::DeviceTaintRule> taint_rules{};
  std::optional<api::Node> node{};  // node-1 in region-1 when unset.

  // Exactly one of these describes the outcome: allocations (one per claim), an error message
  // substring (upstream's expectError), or neither: no solution ("cannot allocate all claims").
  std::vector<Alloc> expect{};
  std::string expect_error{};
  // Upstream's ErrFailedAllocationOnNode: unschedulable on this node with this message.
  std::string expect_unschedulable{};
  // Upstream's expectNumAllocateOneInvocations, when the case pins it.
  int64_t expect_steps = 0;
};

// Runs one case with `evaluator` deciding selectors.
inline void RunAllocatorCaseWith(
    const AllocatorCase& tc, const plugins::dynamicresources::DeviceSelectorEvaluator& evaluator) {
  AllocatedState state = tc.state;
  state.devices.insert(tc.allocated.begin(), tc.allocated.end());
  Allocator allocator(state, tc.classes, tc.slices, tc.taint_rules, evaluator,
                      [] { return std::string("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"); });
  const api::Node node = tc.node ? *tc.node : MakeNode("node-1", "region-1");
  AllocateOutcome outcome = allocator.Allocate(node, tc.claims);

  if (!tc.expect_error.empty()) {
    EXPECT_EQ(outcome.kind, AllocateOutcome::Kind::kError) << outcome.message;
    EXPECT_NE(outcome.message.find(tc.expect_error), std::string::npos)
        << "message: " << outcome.message << "\nwant substring: " << tc.expect_error;
  } else if (!tc.expect_unschedulable.empty()) {
    EXPECT_EQ(outcome.kind, AllocateOutcome::Kind::kUnschedulable) << outcome.message;
    EXPECT_NE(outcome.message.find(tc.expect_unschedulable), std::string::npos)
        << "message: " << outcome.message;
  } else if (tc.expect.empty() && !tc.claims.empty()) {
    EXPECT_EQ(outcome.kind, AllocateOutcome::Kind::kUnschedulable) << outcome.message;
    EXPECT_EQ(outcome.message, "cannot allocate all claims");
  } else {
    ASSERT_EQ(outcome.kind, AllocateOutcome::Kind::kAllocated) << outcome.message;
    ASSERT_EQ(outcome.results.size(), tc.expect.size());
    for (size_t i = 0; i < tc.expect.size(); ++i) {
      EXPECT_EQ(Describe(outcome.results[i]), Describe(tc.expect[i])) << "claim #" << i;
    }
  }
  if (tc.expect_steps > 0) {
    EXPECT_EQ(outcome.steps, tc.expect_steps) << "search steps (allocateOne invocations)";
  }

  // Deciding only (as Filter does) comes to the same outcome by the same search, without results.
  plugins::dynamicresources::AllocateOptions decide;
  decide.decide_only = true;
  AllocateOutcome decided = allocator.Allocate(node, tc.claims, decide);
  EXPECT_EQ(decided.kind, outcome.kind) << "deciding only: " << decided.message;
  EXPECT_EQ(decided.message, outcome.message) << "deciding only";
  EXPECT_EQ(decided.steps, outcome.steps) << "deciding only";
  EXPECT_TRUE(decided.results.empty()) << "deciding only";
}

// Runs one case twice: with the test-only selector evaluator and with the real CEL evaluator,
// so the table also checks that the two agree on the selectors it uses.
inline void RunAllocatorCase(const AllocatorCase& tc) {
  SCOPED_TRACE(tc.name);
  {
    SCOPED_TRACE("fake selector evaluator");
    RunAllocatorCaseWith(tc, FakeDeviceSelectorEvaluator());
  }
  {
    SCOPED_TRACE("CEL selector evaluator");
    RunAllocatorCaseWith(tc, plugins::dynamicresources::CelSelectorEvaluator());
  }
}

// The table's fixture: each file instantiates it with its cases, allocator_test.cc runs them.
class AllocatorTable : public ::testing::TestWithParam<AllocatorCase> {};

// gtest names: upstream's case name with '-' and other punctuation as '_'.
inline std::string CaseName(const ::testing::TestParamInfo<AllocatorCase>& info) {
  std::string name = info.param.name.empty() ? "unnamed" : info.param.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      c = '_';
    }
  }
  return name;
}

inline void PrintTo(const AllocatorCase& c, std::ostream* out) { *out << c.name; }

}  // namespace berth::testing::dra

#endif  // BERTH_TEST_TESTING_DRA_ALLOCATOR_CASE_H_
