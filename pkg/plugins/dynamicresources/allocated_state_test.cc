#include "pkg/plugins/dynamicresources/allocated_state.h"

#include <gtest/gtest.h>

#include <string>

#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using berth::testing::dra::Q;

api::DeviceRequestAllocationResult Result(const std::string& device) {
  api::DeviceRequestAllocationResult r;
  r.request = "req";
  r.driver = "driver-a";
  r.pool = "pool-1";
  r.device = device;
  return r;
}

TEST(AllocatedStateTest, ExclusiveSharedAndAdminResults) {
  api::AllocationResult allocation;
  allocation.results.push_back(Result("dedicated"));
  api::DeviceRequestAllocationResult admin = Result("admin");
  admin.admin_access = true;
  allocation.results.push_back(admin);
  api::DeviceRequestAllocationResult share = Result("shared");
  share.share_id = "share-1";
  share.consumed_capacity.emplace("memory", Q("1Gi"));
  allocation.results.push_back(share);
  api::DeviceRequestAllocationResult empty_share = Result("empty-share");
  empty_share.share_id = "share-2";
  allocation.results.push_back(empty_share);

  AllocatedState state;
  ASSERT_TRUE(state.AddAllocation(allocation));
  // A second share of the same device adds up.
  api::AllocationResult second;
  share.share_id = "share-3";
  share.consumed_capacity["memory"] = Q("512Mi");
  second.results.push_back(share);
  ASSERT_TRUE(state.AddAllocation(second));

  const DeviceId dedicated{"driver-a", "pool-1", "dedicated"};
  const DeviceId shared{"driver-a", "pool-1", "shared"};
  const DeviceId empty{"driver-a", "pool-1", "empty-share"};
  const DeviceId admin_id{"driver-a", "pool-1", "admin"};
  EXPECT_TRUE(state.IsAllocated(dedicated));
  EXPECT_FALSE(state.HasShare(dedicated));
  // Admin access does not take a device away from others.
  EXPECT_FALSE(state.IsAllocated(admin_id));
  EXPECT_TRUE(state.IsAllocated(shared));
  EXPECT_TRUE(state.HasShare(shared));
  // A share without consumed capacity is known by its share ID only.
  EXPECT_TRUE(state.HasShare(empty));
  EXPECT_EQ(state.aggregated_capacity.count(empty), 0u);
  EXPECT_EQ(state.devices.count(shared), 0u);
  ASSERT_EQ(state.aggregated_capacity.count(shared), 1u);
  EXPECT_EQ(api::Quantity::Compare(state.aggregated_capacity.at(shared).at("memory"), Q("1536Mi")),
            0);
  EXPECT_EQ(state.shared_devices.size(), 3u);
  EXPECT_EQ(dedicated.ToString(), "driver-a/pool-1/dedicated");
}

TEST(AllocatedStateTest, UnrepresentableAggregateIsReported) {
  AllocatedState state;
  api::AllocationResult allocation;
  api::DeviceRequestAllocationResult share = Result("shared");
  share.share_id = "a";
  share.consumed_capacity.emplace("c", Q("1e60"));
  allocation.results.push_back(share);
  share.share_id = "b";
  share.consumed_capacity["c"] = Q("1");
  allocation.results.push_back(share);
  EXPECT_FALSE(state.AddAllocation(allocation));
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
