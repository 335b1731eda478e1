// The decision memo: a node's decide-only outcome is reused only while nothing the search reads
// has changed, and never where the allocated state is more than which devices are taken.

#include "pkg/plugins/dynamicresources/decision_memo.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "test/testing/dra_allocator_case.h"
#include "test/testing/dra_builders.h"
#include "test/testing/fake_device_selector.h"

namespace berth::plugins::dynamicresources {
namespace {

namespace dra = berth::testing::dra;
using dra::Class;
using dra::Device;
using dra::kClaim0;
using dra::kClassA;
using dra::kDevice1;
using dra::kDevice2;
using dra::kDevice3;
using dra::kDriverA;
using dra::kNode1;
using dra::kNode2;
using dra::kPool1;
using dra::kPool2;
using dra::kRegion1;
using dra::kReq0;
using dra::kSlice1;
using dra::kSlice2;
using dra::MakeNode;
using dra::SimpleClaim;
using dra::Slice;

class DecisionMemoTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Inventory> MakeInventory(std::vector<api::ResourceSlicePtr> slices) {
    return std::make_shared<const Inventory>(
        std::vector<api::DeviceClassPtr>{Class(kClassA, kDriverA)}, slices,
        std::vector<api::DeviceTaintRule>{}, evaluator_);
  }
  static AllocatedState Taken(const std::vector<std::string>& devices,
                              const std::string& pool = kPool1) {
    AllocatedState state;
    for (const std::string& device : devices) state.devices.insert({kDriverA, pool, device});
    return state;
  }
  static std::shared_ptr<const DecisionMemo::Claims> Claims(const std::string& ns, int64_t count) {
    api::ResourceClaimPtr claim = SimpleClaim(kClaim0, kReq0, kClassA);
    auto spec = claim->spec;
    spec.requests[0].exactly->count = count;
    return std::make_shared<DecisionMemo::Claims>(DecisionMemo::Claims{{ns, spec}});
  }

  testing::FakeDeviceSelectorEvaluator evaluator_;
};

TEST_F(DecisionMemoTest, NodeStateIsOneByteOfAllocationPerDeviceOfItsPools) {
  auto inventory =
      MakeInventory({Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA,
                           {Device(kDevice1), Device(kDevice2), Device(kDevice3)}),
                     Slice(kSlice2, kNode2, dra::Pool(kPool2), kDriverA, {Device(kDevice1)})});
  std::string state;
  size_t slot = 0;
  ASSERT_TRUE(Allocator(inventory, Taken({kDevice2}))
                  .NodeAllocationState(MakeNode(kNode1, kRegion1), &state, &slot));
  EXPECT_EQ(state, "010");
  // The other node's pool has a device of the same name: it is not this node's.
  ASSERT_TRUE(Allocator(inventory, Taken({kDevice1}, kPool2))
                  .NodeAllocationState(MakeNode(kNode1, kRegion1), &state, &slot));
  EXPECT_EQ(state, "000");
  ASSERT_TRUE(Allocator(inventory, Taken({kDevice1}, kPool2))
                  .NodeAllocationState(MakeNode(kNode2, kRegion1), &state, &slot));
  EXPECT_EQ(state, "1");
  // A node without devices has an empty state, which is still a state.
  ASSERT_TRUE(Allocator(inventory, AllocatedState{})
                  .NodeAllocationState(MakeNode("node-without-slices", kRegion1), &state, &slot));
  EXPECT_TRUE(state.empty());
}

TEST_F(DecisionMemoTest, NoNodeStateWhereTheSearchReadsMoreThanWhichDevicesAreTaken) {
  const api::Node node = MakeNode(kNode1, kRegion1);
  std::string state;
  size_t slot = 0;
  // A slice for nodes by label: a node's pools then depend on more than its name.
  auto by_label = MakeInventory(
      {Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA, {Device(kDevice1)}),
       Slice(kSlice2, dra::AllNodes{}, dra::Pool(kPool2), kDriverA, {Device(kDevice1)})});
  EXPECT_FALSE(Allocator(by_label, AllocatedState{}).NodeAllocationState(node, &state, &slot));
  // A multi-allocatable device: its shares' capacity matters.
  auto shared = MakeInventory(
      {Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA, {Device(kDevice1).MultiAlloc()})});
  EXPECT_FALSE(Allocator(shared, AllocatedState{}).NodeAllocationState(node, &state, &slot));
  // A device with a capacity request policy.
  auto policy = MakeInventory({Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA,
                                     {Device(kDevice1).RangePolicy("memory", "8")})});
  EXPECT_FALSE(Allocator(policy, AllocatedState{}).NodeAllocationState(node, &state, &slot));
  // A device drawing on shared counters.
  dra::SliceB with_counters = Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA,
                                    {Device(kDevice1).Consumes("set", {{"c", "1"}})});
  with_counters.slice.spec.shared_counters = {dra::CounterSet("set", {{"c", "2"}})};
  auto counters = MakeInventory({with_counters});
  EXPECT_FALSE(Allocator(counters, AllocatedState{}).NodeAllocationState(node, &state, &slot));
  // Plain devices, but some device in the cluster is shared.
  auto plain =
      MakeInventory({Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA, {Device(kDevice1)})});
  AllocatedState with_share;
  with_share.shared_devices.insert({{kDriverA, kPool2, kDevice1}, "share"});
  AllocatedState on_base;
  on_base.base = std::make_shared<AllocatedState>(with_share);
  EXPECT_FALSE(Allocator(plain, with_share).NodeAllocationState(node, &state, &slot));
  EXPECT_FALSE(Allocator(plain, on_base).NodeAllocationState(node, &state, &slot));
  EXPECT_TRUE(Allocator(plain, AllocatedState{}).NodeAllocationState(node, &state, &slot));
}

TEST_F(DecisionMemoTest, ADecisionIsFoundOnlyForTheSameSlotClaimsAndNodeState) {
  DecisionMemo memo(2);
  const std::string free = "0";
  auto one = memo.Intern(Claims("ns", 1));
  auto two = memo.Intern(Claims("ns", 2));
  auto elsewhere = memo.Intern(Claims("other", 1));
  memo.Remember(0, one, free, {false, "cannot allocate all claims"});

  // Equal claims of another cycle are interned to the same: they find it.
  auto found = memo.Find(0, memo.Intern(Claims("ns", 1)), free);
  ASSERT_TRUE(found.has_value());
  EXPECT_FALSE(found->fits);
  EXPECT_EQ(found->message, "cannot allocate all claims");
  EXPECT_EQ(memo.hits(), 1u);

  EXPECT_FALSE(memo.Find(1, one, free));
  EXPECT_FALSE(memo.Find(0, one, "1"));
  EXPECT_FALSE(memo.Find(0, two, free));
  EXPECT_FALSE(memo.Find(0, elsewhere, free));
  EXPECT_FALSE(memo.Find(0, nullptr, free));
  // Out of range: nothing, and nothing remembered.
  memo.Remember(2, one, free, {true, ""});
  EXPECT_FALSE(memo.Find(2, one, free));
  EXPECT_EQ(memo.hits(), 1u);

  // Other claims decided in the same state sit beside it.
  memo.Remember(0, two, free, {true, ""});
  ASSERT_TRUE(memo.Find(0, two, free).has_value());
  EXPECT_TRUE(memo.Find(0, two, free)->fits);
  ASSERT_TRUE(memo.Find(0, one, free).has_value());
  EXPECT_FALSE(memo.Find(0, one, free)->fits);

  // A new state drops what was decided in the old one.
  memo.Remember(0, one, "1", {true, ""});
  EXPECT_FALSE(memo.Find(0, one, free));
  EXPECT_FALSE(memo.Find(0, two, "1"));
  found = memo.Find(0, one, "1");
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->fits);
}

TEST_F(DecisionMemoTest, EachInventoryHasItsOwnDecisionsAndEachNodeItsOwnSlot) {
  const std::vector<api::ResourceSlicePtr> slices = {
      Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA, {Device(kDevice1)}),
      Slice(kSlice2, kNode2, dra::Pool(kPool2), kDriverA, {Device(kDevice1)})};
  auto inventory = MakeInventory(slices);
  auto rebuilt = MakeInventory(slices);
  std::string state;
  size_t slot1 = 0, slot2 = 0, elsewhere = 0;
  ASSERT_TRUE(Allocator(inventory, AllocatedState{})
                  .NodeAllocationState(MakeNode(kNode1, kRegion1), &state, &slot1));
  ASSERT_TRUE(Allocator(inventory, AllocatedState{})
                  .NodeAllocationState(MakeNode(kNode2, kRegion1), &state, &slot2));
  ASSERT_TRUE(
      Allocator(inventory, AllocatedState{})
          .NodeAllocationState(MakeNode("node-without-slices", kRegion1), &state, &elsewhere));
  EXPECT_NE(slot1, slot2);
  EXPECT_NE(slot1, elsewhere);
  EXPECT_NE(slot2, elsewhere);

  auto claims = inventory->decisions().Intern(Claims("ns", 1));
  inventory->decisions().Remember(slot1, claims, "0", {true, ""});
  EXPECT_TRUE(inventory->decisions().Find(slot1, claims, "0").has_value());
  // An inventory with the same content may stand for replaced slices: it starts empty.
  EXPECT_FALSE(rebuilt->decisions()
                   .Find(slot1, rebuilt->decisions().Intern(Claims("ns", 1)), "0")
                   .has_value());
}

TEST_F(DecisionMemoTest, EqualClaimsAreInternedToOnePointerUpToALimit) {
  DecisionMemo memo(1);
  auto first = memo.Intern(Claims("ns", 1));
  auto other = memo.Intern(Claims("ns", 2));
  EXPECT_NE(first, other);
  EXPECT_EQ(memo.Intern(Claims("ns", 1)), first);
  EXPECT_EQ(memo.Intern(Claims("ns", 2)), other);
  EXPECT_NE(memo.Intern(Claims("other", 1)), first);
  // Past the most it keeps, claims are not interned (and so never remembered).
  for (int64_t count = 3; count < 70; count++) memo.Intern(Claims("ns", count));
  EXPECT_EQ(memo.Intern(Claims("ns", 1000)), nullptr);
  EXPECT_EQ(memo.Intern(Claims("ns", 1)), first);
}

// Filter's threads find and remember decisions on the same slots at once: each finds only a
// decision that was remembered for its slot, claims and state, whole (its message included),
// however the threads interleave; decisions replaced meanwhile are freed by Reclaim once they are
// done. Run under ThreadSanitizer and AddressSanitizer, this checks that a lookup never reads a
// decision being written or freed.
TEST_F(DecisionMemoTest, ThreadsFindAndRememberOnTheSameSlotsAtOnce) {
  constexpr size_t kSlots = 3;
  constexpr int kThreads = 4;
  constexpr int kRounds = 300;
  DecisionMemo memo(kSlots);
  const std::vector<std::shared_ptr<const DecisionMemo::Claims>> claims = {
      memo.Intern(Claims("ns", 1)), memo.Intern(Claims("ns", 2))};
  // The one decision for a slot, claims and state; long messages, so that each is a buffer of
  // its own.
  auto decision_for = [](size_t slot, size_t which, const std::string& state) {
    const bool fits = (slot + which + state.size()) % 2 == 0;
    return DecisionMemo::Decision{
        fits, fits ? std::string()
                   : "slot " + std::to_string(slot) + " claims " + std::to_string(which) +
                         " state " + state + ": no device of the node matches every selector"};
  };
  for (int pass = 0; pass < 3; pass++) {
    std::vector<std::thread> threads;
    std::vector<int> wrong(kThreads, 0);
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < kRounds; round++) {
          const size_t slot = static_cast<size_t>(round + t) % kSlots;
          const size_t which = static_cast<size_t>(round / kSlots + t) % claims.size();
          // The states change as threads go on, so that slots' decisions are replaced.
          const std::string state(static_cast<size_t>((round / 7 + t) % 3), '1');
          const DecisionMemo::Decision want = decision_for(slot, which, state);
          if (auto found = memo.Find(slot, claims[which], state)) {
            if (found->fits != want.fits || found->message != want.message) wrong[t]++;
          } else {
            memo.Remember(slot, claims[which], state, want);
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; t++)
      EXPECT_EQ(wrong[t], 0) << "pass " << pass << ", thread " << t;
    // As the plugin's PreFilter, between two runs of Filter.
    memo.Reclaim();
  }
  // Each slot still answers with what was remembered for it last.
  for (size_t slot = 0; slot < kSlots; slot++) {
    memo.Remember(slot, claims[0], "1", decision_for(slot, 0, "1"));
    auto found = memo.Find(slot, claims[0], "1");
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->message, decision_for(slot, 0, "1").message);
  }
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
