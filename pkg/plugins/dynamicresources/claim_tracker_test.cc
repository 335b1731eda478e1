#include "pkg/plugins/dynamicresources/claim_tracker.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "pkg/informer/factory.h"

namespace berth::plugins::dynamicresources {
namespace {

DeviceId Device(const std::string& name) { return DeviceId{"driver-a", "pool-1", name}; }

// Claim `name` in namespace ns, allocated `device` (none: not allocated), at `version`.
api::ResourceClaimPtr Claim(const std::string& name, const std::string& device,
                            const std::string& version) {
  auto claim = std::make_shared<api::ResourceClaim>();
  claim->meta.name = name;
  claim->meta.namespace_ = "ns";
  claim->meta.uid = "uid-" + name;
  claim->meta.resource_version = version;
  if (!device.empty()) {
    api::DeviceRequestAllocationResult result;
    result.request = "req";
    result.driver = "driver-a";
    result.pool = "pool-1";
    result.device = device;
    claim->status.allocation.emplace().results.push_back(result);
  }
  return claim;
}

AllocatedState Gather(const ClaimTracker& tracker) {
  AllocatedState state;
  EXPECT_TRUE(tracker.GatherAllocatedState(&state));
  return state;
}

class ClaimTrackerTest : public ::testing::Test {
 protected:
  informer::SharedInformerFactory factory_{nullptr};
  informer::Informer<api::ResourceClaim>& claims_ = factory_.For<api::ResourceClaim>();
  std::shared_ptr<ClaimTracker> tracker_ = ClaimTracker::For(factory_);
};

// The allocations counted once are shared by later gathers; whatever changes one of the claims
// they count is seen by the next gather all the same.
TEST_F(ClaimTrackerTest, ChangesToClaimsCountedBeforeAreSeenByTheNextGather) {
  claims_.Upsert(Claim("a", "dev-0", "1"));
  claims_.Upsert(Claim("b", "dev-1", "2"));
  AllocatedState state = Gather(*tracker_);
  EXPECT_TRUE(state.IsAllocated(Device("dev-0")));
  EXPECT_TRUE(state.IsAllocated(Device("dev-1")));

  // Allocated since: seen.
  claims_.Upsert(Claim("c", "dev-2", "3"));
  EXPECT_TRUE(Gather(*tracker_).IsAllocated(Device("dev-2")));

  // Deallocated, reallocated elsewhere, deleted: the devices are free again.
  claims_.Upsert(Claim("a", "", "4"));
  claims_.Upsert(Claim("b", "dev-3", "5"));
  state = Gather(*tracker_);
  EXPECT_FALSE(state.IsAllocated(Device("dev-0")));
  EXPECT_FALSE(state.IsAllocated(Device("dev-1")));
  EXPECT_TRUE(state.IsAllocated(Device("dev-3")));
  claims_.Remove("ns/b");
  state = Gather(*tracker_);
  EXPECT_FALSE(state.IsAllocated(Device("dev-3")));
  EXPECT_TRUE(state.IsAllocated(Device("dev-2")));

  // A written version replaces the informer's until the informer catches up.
  tracker_->AssumeWritten(Claim("c", "dev-4", "7"));
  state = Gather(*tracker_);
  EXPECT_FALSE(state.IsAllocated(Device("dev-2")));
  EXPECT_TRUE(state.IsAllocated(Device("dev-4")));
  tracker_->RestoreWritten("ns/c");
  state = Gather(*tracker_);
  EXPECT_TRUE(state.IsAllocated(Device("dev-2")));
  EXPECT_FALSE(state.IsAllocated(Device("dev-4")));

  // In flight: counted until removed.
  tracker_->SignalPendingAllocation("uid-d", Claim("d", "dev-5", "8"));
  EXPECT_TRUE(Gather(*tracker_).IsAllocated(Device("dev-5")));
  tracker_->MaybeRemovePendingAllocation("uid-d", true);
  EXPECT_FALSE(Gather(*tracker_).IsAllocated(Device("dev-5")));
}

// Claims allocated one after another do not make every gather rebuild what it shares.
TEST_F(ClaimTrackerTest, AllocationsAddedOneByOneRebuildTheSharedPartRarely) {
  for (int i = 0; i < 1000; i++) {
    claims_.Upsert(Claim("c" + std::to_string(i), "dev-" + std::to_string(i), "1"));
    AllocatedState state = Gather(*tracker_);
    ASSERT_TRUE(state.IsAllocated(Device("dev-" + std::to_string(i))));
    ASSERT_TRUE(state.IsAllocated(Device("dev-0")));
  }
  EXPECT_LT(tracker_->base_builds(), 100u);
}

// Claims allocated since the shared part are folded into it a few at a time, so what a gather
// adds of its own stays small; a folded claim that changes is seen all the same.
TEST_F(ClaimTrackerTest, ClaimsAllocatedSinceAreFoldedIntoTheSharedPartAndStillFollowed) {
  for (int i = 0; i < 200; i++) {
    claims_.Upsert(Claim("c" + std::to_string(i), "dev-" + std::to_string(i), "1"));
    AllocatedState state = Gather(*tracker_);
    EXPECT_LE(state.devices.size(), 17u) << i;
    for (int j = 0; j <= i; j++) {
      ASSERT_TRUE(state.IsAllocated(Device("dev-" + std::to_string(j)))) << i << " " << j;
    }
  }
  // c150 sits in a folded level by now.
  claims_.Upsert(Claim("c150", "", "2"));
  claims_.Upsert(Claim("c151", "dev-900", "2"));
  AllocatedState state = Gather(*tracker_);
  EXPECT_FALSE(state.IsAllocated(Device("dev-150")));
  EXPECT_FALSE(state.IsAllocated(Device("dev-151")));
  EXPECT_TRUE(state.IsAllocated(Device("dev-900")));
  EXPECT_TRUE(state.IsAllocated(Device("dev-152")));
}

// A claim made for a pod's extended resources is found by its owner without walking every claim;
// one that is no longer such a claim, or is gone, is not.
TEST_F(ClaimTrackerTest, ClaimsForExtendedResourcesAreFoundByTheirOwner) {
  auto extended = [](const std::string& name, const std::string& owner) {
    auto claim = std::make_shared<api::ResourceClaim>(*Claim(name, "", "1"));
    claim->meta.annotations.Set("resource.kubernetes.io/extended-resource-claim", "true");
    api::OwnerReference reference;
    reference.controller = true;
    reference.uid = owner;
    reference.name = owner;
    claim->meta.owner_references.push_back(reference);
    return api::ResourceClaimPtr(claim);
  };
  auto any = [](const api::ResourceClaim&) { return true; };
  claims_.Upsert(extended("p-extended-resources-1", "uid-p"));
  claims_.Upsert(extended("q-extended-resources-1", "uid-q"));
  claims_.Upsert(Claim("plain", "", "1"));
  auto found = tracker_->FindExtendedClaim("ns", "uid-p", any);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->meta.name, "p-extended-resources-1");
  EXPECT_EQ(tracker_->FindExtendedClaim("other", "uid-p", any), nullptr);
  EXPECT_EQ(tracker_->FindExtendedClaim("ns", "uid-r", any), nullptr);

  // Now owned by q: p has none.
  claims_.Upsert(extended("p-extended-resources-1", "uid-q"));
  EXPECT_EQ(tracker_->FindExtendedClaim("ns", "uid-p", any), nullptr);
  EXPECT_NE(tracker_->FindExtendedClaim("ns", "uid-q", any), nullptr);
  claims_.Remove("ns/p-extended-resources-1");
  claims_.Remove("ns/q-extended-resources-1");
  EXPECT_EQ(tracker_->FindExtendedClaim("ns", "uid-q", any), nullptr);
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
