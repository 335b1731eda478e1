// The inventory: what it works out once and shares with every cycle's allocator.

#include "pkg/plugins/dynamicresources/inventory.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
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
using dra::kPool1;
using dra::kRegion1;
using dra::kReq0;
using dra::kSlice1;
using dra::MakeNode;
using dra::SimpleClaim;
using dra::Slice;

// Three devices of kNode1 in one pool, and what one claim for one of them gets over a state.
class ThreeDevices {
 public:
  ThreeDevices()
      : inventory_(std::make_shared<const Inventory>(
            std::vector<api::DeviceClassPtr>{Class(kClassA, kDriverA)},
            std::vector<api::ResourceSlicePtr>{
                Slice(kSlice1, kNode1, dra::Pool(kPool1), kDriverA,
                      {Device(kDevice1), Device(kDevice2), Device(kDevice3)})},
            std::vector<api::DeviceTaintRule>{}, evaluator_)) {}
  // The device allocated, or why none was.
  std::string Allocate(const AllocatedState& state) const {
    AllocateOutcome outcome =
        Allocator(inventory_, state)
            .Allocate(MakeNode(kNode1, kRegion1), {SimpleClaim(kClaim0, kReq0, kClassA)});
    return outcome.kind == AllocateOutcome::Kind::kAllocated ? outcome.results[0].results[0].device
                                                             : outcome.message;
  }

 private:
  testing::FakeDeviceSelectorEvaluator evaluator_;
  std::shared_ptr<const Inventory> inventory_;
};

TEST(InventoryTest, DevicesAllocatedInASharedBaseAreTakenAndANewBaseIsSeen) {
  ThreeDevices devices;
  auto allocate = [&](const AllocatedState& state) { return devices.Allocate(state); };
  auto allocated = [](std::vector<std::string> devices) {
    auto state = std::make_shared<AllocatedState>();
    for (const std::string& device : devices) state->devices.insert({kDriverA, kPool1, device});
    return state;
  };

  // A base, a base under that base, and the state's own devices all take devices away.
  AllocatedState state;
  state.base = allocated({kDevice1});
  EXPECT_EQ(allocate(state), kDevice2);
  state.devices.insert({kDriverA, kPool1, kDevice2});
  EXPECT_EQ(allocate(state), kDevice3);
  auto nested = allocated({kDevice2});
  nested->base = allocated({kDevice1});
  AllocatedState on_nested;
  on_nested.base = nested;
  EXPECT_EQ(allocate(on_nested), kDevice3);

  // The inventory remembers the last base's devices: a new base (even at a freed one's address)
  // is read afresh.
  for (const std::string& taken : {kDevice3, kDevice1, kDevice2}) {
    AllocatedState next;
    next.base = allocated({taken});
    EXPECT_EQ(allocate(next), taken == kDevice1 ? kDevice2 : kDevice1) << taken;
  }
  AllocatedState full;
  full.base = allocated({kDevice1, kDevice2, kDevice3});
  EXPECT_EQ(allocate(full), "cannot allocate all claims");
}

// A level folded over the base the inventory last saw (the claim tracker's way of sharing what
// was allocated since) takes that base's devices and its own.
TEST(InventoryTest, ALevelFoldedOverTheLastBaseTakesItsDevicesAndTheBases) {
  ThreeDevices devices;
  auto allocate = [&](const std::shared_ptr<const AllocatedState>& base) {
    AllocatedState state;
    state.base = base;
    return devices.Allocate(state);
  };
  auto base = std::make_shared<AllocatedState>();
  base->devices.insert({kDriverA, kPool1, kDevice1});
  EXPECT_EQ(allocate(base), kDevice2);
  auto level = std::make_shared<AllocatedState>();
  level->base = base;
  level->devices.insert({kDriverA, kPool1, kDevice2});
  EXPECT_EQ(allocate(level), kDevice3);
  auto top = std::make_shared<AllocatedState>();
  top->base = level;
  top->devices.insert({kDriverA, kPool1, kDevice3});
  EXPECT_EQ(allocate(top), "cannot allocate all claims");
  // The base alone again: the levels' devices are not its.
  EXPECT_EQ(allocate(base), kDevice2);
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
