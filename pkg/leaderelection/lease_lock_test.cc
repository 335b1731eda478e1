#include "pkg/leaderelection/lease_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>

#include "test/testing/fault_injecting_lease_client.h"

namespace berth::leaderelection {
namespace {

using testing::FaultInjectingLeaseClient;

using namespace std::chrono_literals;

LeaseRecord Held(const std::string& holder, int64_t seconds = 15) {
  LeaseRecord record;
  record.holder_identity = holder;
  record.lease_duration_seconds = seconds;
  return record;
}

TEST(LeaseRecordTest, RoundTripsThroughTheLeaseSpec) {
  const LeaseRecord record{.holder_identity = "host_1",
                           .lease_duration_seconds = 15,
                           .acquire_time = "2024-05-01T12:00:00.000000Z",
                           .renew_time = "2024-05-01T12:00:10.000000Z",
                           .lease_transitions = 4};
  const nlohmann::json spec = LeaseSpecFromRecord(record);
  EXPECT_EQ(spec["holderIdentity"], "host_1");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["acquireTime"], "2024-05-01T12:00:00.000000Z");
  EXPECT_EQ(spec["renewTime"], "2024-05-01T12:00:10.000000Z");
  EXPECT_EQ(spec["leaseTransitions"], 4);
  EXPECT_EQ(RecordFromLeaseSpec(spec), record);
}

TEST(LeaseRecordTest, AbsentOrNullFieldsReadAsEmpty) {
  EXPECT_EQ(RecordFromLeaseSpec(nlohmann::json::object()), LeaseRecord{});
  EXPECT_EQ(RecordFromLeaseSpec(nullptr), LeaseRecord{});
  EXPECT_EQ(RecordFromLeaseSpec({{"holderIdentity", nullptr}, {"leaseTransitions", nullptr}}),
            LeaseRecord{});
}

TEST(LeaseLockTest, CreatesReadsAndUpdatesWithTheResourceVersionItRead) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  LeaseLock lock(server, "kube-system", "l");
  EXPECT_EQ(lock.Describe(), "kube-system/l");
  EXPECT_EQ(lock.Get(), std::nullopt);

  const LeaseRecord first = Held("a");
  lock.Create(first);
  const auto lease = server->Lease("l");
  ASSERT_TRUE(lease);
  EXPECT_EQ((*lease)["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ((*lease)["kind"], "Lease");
  EXPECT_EQ((*lease)["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(lock.Get(), first);

  LeaseRecord second = first;
  second.renew_time = "2024-05-01T12:00:10.000000Z";
  lock.Update(second);
  EXPECT_EQ(RecordFromLeaseSpec((*server->Lease("l"))["spec"]), second);
  EXPECT_EQ(server->PutsWithoutResourceVersion(), 0);

  // Someone else writes: the next update from the old version is a Conflict.
  server->WriteSpec("l", LeaseSpecFromRecord(Held("b")));
  try {
    lock.Update(first);
    ADD_FAILURE() << "an update from a stale resourceVersion succeeded";
  } catch (const client::ApiError& e) {
    EXPECT_EQ(e.reason(), client::ErrorReason::kConflict);
  }
  EXPECT_EQ(lock.Get()->holder_identity, "b");
  lock.Update(first);
  EXPECT_EQ(lock.Get(), first);
}

TEST(LeaseLockTest, CreateOfAnExistingLeaseIsAlreadyExists) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec("l", LeaseSpecFromRecord(Held("b")));
  LeaseLock lock(server, "kube-system", "l");
  try {
    lock.Create(Held("a"));
    ADD_FAILURE() << "created over an existing lease";
  } catch (const client::ApiError& e) {
    EXPECT_EQ(e.reason(), client::ErrorReason::kAlreadyExists);
  }
}

TEST(LeaseLockTest, UpdateBeforeAnyReadIsALogicError) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec("l", LeaseSpecFromRecord(Held("b")));
  LeaseLock lock(server, "kube-system", "l");
  EXPECT_THROW(lock.Update(Held("a")), std::logic_error);
}

}  // namespace
}  // namespace berth::leaderelection
