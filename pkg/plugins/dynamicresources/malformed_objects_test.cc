#include "pkg/plugins/dynamicresources/malformed_objects.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/dra_codec.h"
#include "pkg/client/client.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "test/testing/dra_builders.h"
#include "test/testing/dra_plugin_objects.h"
#include "test/testing/fake_handle.h"

namespace berth::plugins::dynamicresources {
namespace {

using framework::Code;
using framework::CycleState;
using framework::NodeInfo;
using framework::Status;
using json = nlohmann::json;
using ::testing::HasSubstr;
namespace dra = testing::dra;
using dra::ClaimEntry;
using dra::ClaimJson;
using dra::PodWithClaims;

constexpr char kDriver[] = "gpu.example.com";
constexpr client::WatchEventType kAdded = client::WatchEventType::kAdded;
constexpr client::WatchEventType kDeleted = client::WatchEventType::kDeleted;

// A class whose selector is not a string: the decoder rejects it.
json MalformedClassJson(const std::string& name) {
  return {{"metadata", {{"name", name}, {"resourceVersion", "3"}}},
          {"spec", {{"selectors", json::array({{{"cel", {{"expression", 5}}}}})}}}};
}

// A slice of one device whose memory is not a quantity: the decoder rejects it. `placement` is
// {"nodeName": ...} or a placement for no node in particular.
json MalformedSliceJson(const std::string& name, const json& placement) {
  json spec = {
      {"driver", kDriver},
      {"pool", {{"name", name}, {"generation", 1}, {"resourceSliceCount", 1}}},
      {"devices",
       json::array({{{"name", "device-0"}, {"capacity", {{"memory", {{"value", "lots"}}}}}}})}};
  spec.update(placement);
  return {{"metadata", {{"name", name}, {"resourceVersion", "5"}}}, {"spec", spec}};
}

// The decoder's error for `object`, as the informer reports it.
template <typename Decode>
std::string DecodeErrorOf(Decode decode, const json& object) {
  try {
    decode(object);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

class MalformedObjectsTest : public ::testing::Test {
 protected:
  MalformedObjectsTest() {
    informers().For<api::DeviceClass>().Upsert(dra::Class("gpu", kDriver));
    auto claim = ClaimJson("c", "gpu");
    informers().For<api::ResourceClaim>().Upsert(
        std::make_shared<api::ResourceClaim>(api::DecodeResourceClaim(claim)));
    plugin_ = std::dynamic_pointer_cast<DynamicResources>(New(nullptr, handle_));
  }

  informer::SharedInformerFactory& informers() { return handle_.informers(); }

  // A node with `devices` GPUs published in a pool of its own.
  NodeInfo AddNode(const std::string& name, int devices) {
    auto node = std::make_shared<api::Node>(dra::MakeNode(name, "region-" + name));
    if (devices > 0) {
      informers().For<api::ResourceSlice>().Upsert(
          dra::SliceWithDevices(name + "-slice", name, dra::Pool(name), kDriver, devices));
    }
    return NodeInfo(node);
  }

  // A pod with the claim "c"; PreFilter, then Filter on each node: the statuses by node name.
  std::map<std::string, Status> Cycle(const std::vector<NodeInfo>& nodes, Status* pre_filter) {
    const api::Pod decoded = *PodWithClaims("p", {ClaimEntry("gpu", "c")});
    CycleState state;
    framework::PreFilterResult result;
    *pre_filter = plugin_->PreFilter(state, decoded, {}, &result);
    std::map<std::string, Status> out;
    if (!pre_filter->IsSuccess()) return out;
    for (const NodeInfo& node : nodes) out[node.name()] = plugin_->Filter(state, decoded, node);
    return out;
  }

  void SetClaimClass(const std::string& device_class) {
    auto claim = ClaimJson("c", device_class);
    claim["metadata"]["resourceVersion"] = "11";
    informers().For<api::ResourceClaim>().Upsert(
        std::make_shared<api::ResourceClaim>(api::DecodeResourceClaim(claim)));
  }

  testing::FakeHandle handle_;
  std::shared_ptr<DynamicResources> plugin_;
};

// A class the informer could not decode is not "missing": PreFilter names it and the field, until
// its delete (the class is then missing indeed) or a good version arrives.
TEST_F(MalformedObjectsTest, AClassThatCannotBeDecodedIsNamedOnThePodUntilDeletedOrFixed) {
  NodeInfo n1 = AddNode("n1", 1);
  SetClaimClass("big");
  const json bad = MalformedClassJson("big");
  const std::string error = DecodeErrorOf(api::DecodeDeviceClass, bad);
  ASSERT_THAT(error, HasSubstr("spec.selectors[0]"));

  auto& classes = informers().For<api::DeviceClass>();
  classes.InjectWatchEvent(kAdded, bad);
  Status pre;
  Cycle({n1}, &pre);
  EXPECT_EQ(pre.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(pre.Message(), "request gpu: device class big cannot be read: " + error);

  // The informer never stored it, yet its delete clears the record.
  classes.InjectWatchEvent(kDeleted, bad);
  Cycle({n1}, &pre);
  EXPECT_EQ(pre.Message(), "request gpu: device class big does not exist");

  classes.InjectWatchEvent(kAdded, bad);
  Cycle({n1}, &pre);
  EXPECT_EQ(pre.Message(), "request gpu: device class big cannot be read: " + error);
  auto good = dra::Class("big", kDriver);
  classes.Upsert(good);
  EXPECT_EQ(plugin_->malformed().Error(MalformedObjects::Kind::kClass, "big"), "");
  std::map<std::string, Status> filtered = Cycle({n1}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(filtered["n1"].IsSuccess()) << filtered["n1"].Message();
}

// A slice published for n1 that the informer could not decode: where the claims do not fit, n1's
// rejection names it; n2's is upstream's own shared words; n3, where they fit, is unaffected.
// The note is added after the node's remembered decision, which stays as it was.
TEST_F(MalformedObjectsTest, AMalformedSliceIsNamedOnlyOnItsNodeWhereTheClaimsDoNotFit) {
  NodeInfo n1 = AddNode("n1", 0);
  NodeInfo n2 = AddNode("n2", 0);
  NodeInfo n3 = AddNode("n3", 1);
  Status pre;
  // Decided once before the slice arrives, so the later cycle reuses the remembered decisions.
  Cycle({n1, n2, n3}, &pre);

  const json bad = MalformedSliceJson("n1-extra", {{"nodeName", "n1"}});
  const std::string error = DecodeErrorOf(api::DecodeResourceSlice, bad);
  ASSERT_THAT(error, HasSubstr("spec.devices[0].capacity.memory"));
  informers().For<api::ResourceSlice>().InjectWatchEvent(kAdded, bad);

  for (int round = 0; round < 2; round++) {
    std::map<std::string, Status> filtered = Cycle({n1, n2, n3}, &pre);
    ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
    EXPECT_EQ(filtered["n1"].code(), Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(filtered["n1"].Message(),
              "cannot allocate all claims; ResourceSlice n1-extra cannot be read: " + error);
    EXPECT_EQ(filtered["n2"].Message(), "cannot allocate all claims");
    EXPECT_NE(filtered["n2"].fixed_reasons(), nullptr) << "n2 keeps the shared reasons";
    EXPECT_TRUE(filtered["n3"].IsSuccess()) << filtered["n3"].Message();
  }

  // A good version publishes n1's device: the claims fit there now.
  auto fixed = dra::SliceWithDevices("n1-extra", "n1", dra::Pool("n1-extra"), kDriver, 1);
  informers().For<api::ResourceSlice>().Upsert(fixed);
  std::map<std::string, Status> filtered = Cycle({n1, n2}, &pre);
  EXPECT_TRUE(filtered["n1"].IsSuccess()) << filtered["n1"].Message();
  EXPECT_EQ(filtered["n2"].Message(), "cannot allocate all claims");
}

// A malformed slice published for no node in particular might have served any node: every node
// where the claims do not fit names it, until its delete.
TEST_F(MalformedObjectsTest, AMalformedSliceForNoNodeIsNamedWhereverTheClaimsDoNotFit) {
  NodeInfo n1 = AddNode("n1", 0);
  NodeInfo n2 = AddNode("n2", 0);
  NodeInfo n3 = AddNode("n3", 1);
  const json bad = MalformedSliceJson("shared", {{"allNodes", true}});
  const std::string error = DecodeErrorOf(api::DecodeResourceSlice, bad);
  ASSERT_NE(error, "");
  auto& slices = informers().For<api::ResourceSlice>();
  slices.InjectWatchEvent(kAdded, bad);

  Status pre;
  std::map<std::string, Status> filtered = Cycle({n1, n2, n3}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  const std::string named = "cannot allocate all claims; ResourceSlice shared cannot be read: ";
  EXPECT_EQ(filtered["n1"].Message(), named + error);
  EXPECT_EQ(filtered["n2"].Message(), named + error);
  EXPECT_TRUE(filtered["n3"].IsSuccess()) << filtered["n3"].Message();

  slices.InjectWatchEvent(kDeleted, bad);
  filtered = Cycle({n1, n2, n3}, &pre);
  EXPECT_EQ(filtered["n1"].Message(), "cannot allocate all claims");
  EXPECT_NE(filtered["n1"].fixed_reasons(), nullptr);
  EXPECT_TRUE(filtered["n3"].IsSuccess()) << filtered["n3"].Message();
}

// The records are bounded per kind (the oldest forgotten first), and a node's message names a few
// slices and counts the rest.
TEST(MalformedObjects, RecordsAreBoundedAndANodeNamesAFewSlices) {
  MalformedObjects records;
  for (size_t i = 0; i <= MalformedObjects::kMaxRecords; i++) {
    records.Record(MalformedObjects::Kind::kClass, "c" + std::to_string(i), "e");
  }
  EXPECT_EQ(records.Error(MalformedObjects::Kind::kClass, "c0"), "");
  EXPECT_EQ(records.Error(MalformedObjects::Kind::kClass, "c1"), "e");
  EXPECT_EQ(records.Error(MalformedObjects::Kind::kClaim, "c1"), "") << "kinds are apart";

  EXPECT_EQ(records.SliceNotes("n1"), "");
  records.Record(MalformedObjects::Kind::kSlice, "a", "ea", "n1");
  records.Record(MalformedObjects::Kind::kSlice, "b", "eb", "n2");
  records.Record(MalformedObjects::Kind::kSlice, "c", "ec");
  records.Record(MalformedObjects::Kind::kSlice, "d", "ed");
  records.Record(MalformedObjects::Kind::kSlice, "e", "ee");
  EXPECT_EQ(records.SliceNotes("n1"),
            "; ResourceSlice a cannot be read: ea; ResourceSlice c cannot be read: ec"
            "; ResourceSlice d cannot be read: ed; 1 more ResourceSlices cannot be read");
  EXPECT_EQ(records.SliceNotes("n3"),
            "; ResourceSlice c cannot be read: ec; ResourceSlice d cannot be read: ed"
            "; ResourceSlice e cannot be read: ee");
  records.Clear(MalformedObjects::Kind::kSlice, "c");
  records.Clear(MalformedObjects::Kind::kSlice, "d");
  records.Clear(MalformedObjects::Kind::kSlice, "e");
  records.Clear(MalformedObjects::Kind::kSlice, "a");
  EXPECT_EQ(records.SliceNotes("n1"), "");
  EXPECT_EQ(records.SliceNotes("n2"), "; ResourceSlice b cannot be read: eb");
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
