#include "pkg/plugins/dynamicresources/dynamicresources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/dra_codec.h"
#include "pkg/api/podgroup.h"
#include "pkg/client/client.h"
#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "test/testing/dra_builders.h"
#include "test/testing/dra_plugin_objects.h"
#include "test/testing/fake_handle.h"
#include "test/testing/unused_client.h"

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

// The apiserver of a test for ResourceClaims: GET, merge PATCH under the resourceVersion
// precondition, and a strategic merge PATCH that deletes a reservedFor entry. Every write goes on
// to the informer, as the watch would bring it.
class FakeApi : public testing::UnusedClient {
 public:
  void Store(const std::string& path, json object) {
    std::lock_guard lock(mu_);
    objects_[path] = std::move(object);
  }
  json Get(const std::string& path) override {
    std::lock_guard lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) {
      throw client::ApiError(client::ErrorReason::kNotFound, 404, path + " not found");
    }
    return it->second;
  }
  json Patch(const std::string& path, const json& body, client::PatchType type) override {
    json written;
    {
      std::lock_guard lock(mu_);
      patches_.push_back({path, body});
      const bool status = path.ends_with("/status");
      const std::string object_path = status ? path.substr(0, path.size() - 7) : path;
      auto it = objects_.find(object_path);
      if (it == objects_.end()) {
        throw client::ApiError(client::ErrorReason::kNotFound, 404, path + " not found");
      }
      const std::string want =
          body.contains("metadata") ? body["metadata"].value("resourceVersion", "") : "";
      if (!want.empty() && want != it->second["metadata"]["resourceVersion"]) {
        throw client::ApiError(client::ErrorReason::kConflict, 409, "the object has been modified");
      }
      if (type == client::PatchType::kStrategicMerge) {
        json& reserved = it->second["status"]["reservedFor"];
        for (const json& directive : body["status"]["reservedFor"]) {
          json kept = json::array();
          for (const json& entry : reserved) {
            if (entry["uid"] != directive["uid"]) kept.push_back(entry);
          }
          reserved = kept;
        }
      } else {
        it->second.merge_patch(body);
      }
      it->second["metadata"]["resourceVersion"] = std::to_string(++version_);
      written = it->second;
    }
    if (on_write) on_write(written);
    return written;
  }
  std::vector<std::pair<std::string, json>> patches() {
    std::lock_guard lock(mu_);
    return patches_;
  }
  // A create: the object gets a name from generateName, a uid and a version.
  json Post(const std::string& path, const json& body) override {
    json written = body;
    {
      std::lock_guard lock(mu_);
      std::string name = body["metadata"].value("generateName", "") + std::to_string(++version_);
      written["metadata"]["name"] = name;
      written["metadata"]["uid"] = "uid-" + name;
      written["metadata"]["resourceVersion"] = std::to_string(++version_);
      objects_[path + "/" + name] = written;
      posts_.push_back(body);
      post_names_.push_back(name);
    }
    if (on_write) on_write(written);
    return written;
  }
  void Delete(const std::string& path, const client::DeleteOptions&) override {
    std::lock_guard lock(mu_);
    objects_.erase(path);
    deleted_.push_back(path);
  }
  std::vector<json> posts() {
    std::lock_guard lock(mu_);
    return posts_;
  }
  std::vector<std::string> post_names() {
    std::lock_guard lock(mu_);
    return post_names_;
  }
  std::vector<std::string> deleted() {
    std::lock_guard lock(mu_);
    return deleted_;
  }

  std::function<void(const json& object)> on_write;

 private:
  std::mutex mu_;
  std::map<std::string, json> objects_;
  std::vector<std::pair<std::string, json>> patches_;
  std::vector<json> posts_;
  std::vector<std::string> post_names_;
  std::vector<std::string> deleted_;
  int version_ = 100;
};

json FirstAvailableClaimJson(const std::string& name) {
  json claim = ClaimJson(name, "gpu");
  claim["spec"]["devices"]["requests"] = json::array(
      {{{"name", "g"},
        {"firstAvailable",
         json::array({{{"name", "big"}, {"deviceClassName", "gpu"}, {"count", 2}},
                      {{"name", "small"}, {"deviceClassName", "gpu"}, {"count", 1}}})}}});
  return claim;
}

std::string ClaimPathOf(const std::string& name) {
  return client::ResourceClaimsResource().Path("ns", name);
}

class DynamicResourcesTest : public ::testing::Test {
 protected:
  DynamicResourcesTest() : handle_({}, &api_) {
    api_.on_write = [this](const json& object) {
      if (object.value("kind", "ResourceClaim") != "ResourceClaim") return;
      if (object["metadata"].contains("uid") && object.contains("spec") &&
          object["spec"].contains("containers")) {
        return;  // A pod's status write.
      }
      informers().For<api::ResourceClaim>().Upsert(
          std::make_shared<api::ResourceClaim>(api::DecodeResourceClaim(object)));
    };
    informers().For<api::DeviceClass>().Upsert(dra::Class("gpu", kDriver));
  }

  informer::SharedInformerFactory& informers() { return handle_.informers(); }

  std::shared_ptr<DynamicResources> Plugin(const json& args = nullptr) {
    auto plugin = std::dynamic_pointer_cast<DynamicResources>(New(args, handle_));
    EXPECT_NE(plugin, nullptr);
    return plugin;
  }

  void AddClaim(const json& claim) {
    api_.Store(ClaimPathOf(claim["metadata"]["name"]), claim);
    informers().For<api::ResourceClaim>().Upsert(
        std::make_shared<api::ResourceClaim>(api::DecodeResourceClaim(claim)));
  }
  // A node with `devices` GPUs published in a pool of its own, also in the snapshot (where
  // Reserve finds the node Filter only decided on).
  NodeInfo AddNode(const std::string& name, int devices) {
    auto node = std::make_shared<api::Node>(dra::MakeNode(name, "region-" + name));
    if (devices > 0) {
      informers().For<api::ResourceSlice>().Upsert(
          dra::SliceWithDevices(name + "-slice", name, dra::Pool(name), kDriver, devices));
    }
    std::vector<framework::NodeInfoPtr> nodes = handle_.lister().List();
    std::erase_if(nodes, [&](const framework::NodeInfoPtr& n) { return n->name() == name; });
    nodes.push_back(std::make_shared<NodeInfo>(node));
    handle_.lister().Set(std::move(nodes));
    return NodeInfo(node);
  }

  // PreFilter, then Filter on each node; the statuses by node name.
  std::map<std::string, Status> Cycle(DynamicResources& plugin, CycleState& state,
                                      const api::Pod& pod, const std::vector<NodeInfo>& nodes,
                                      Status* pre_filter) {
    framework::PreFilterResult result;
    *pre_filter = plugin.PreFilter(state, pod, {}, &result);
    std::map<std::string, Status> out;
    if (!pre_filter->IsSuccess()) return out;
    for (const NodeInfo& node : nodes) out[node.name()] = plugin.Filter(state, pod, node);
    return out;
  }

  FakeApi api_;
  testing::FakeHandle handle_;
};

TEST_F(DynamicResourcesTest, PodsWithoutClaimsAreSkipped) {
  auto plugin = Plugin();
  auto pod = PodWithClaims("p", {});
  CycleState state;
  framework::PreFilterResult result;
  EXPECT_TRUE(plugin->PreEnqueue(*pod).IsSuccess());
  EXPECT_TRUE(plugin->PreFilter(state, *pod, {}, &result).IsSkip());
  EXPECT_TRUE(plugin->PreBindPreFlight(state, *pod, "n").IsSkip());
}

TEST_F(DynamicResourcesTest, PreEnqueueWaitsForTheClaimMadeFromATemplate) {
  auto plugin = Plugin();
  json entry = {{"name", "gpu"}, {"resourceClaimTemplateName", "tmpl"}};
  auto waiting = PodWithClaims("p", {entry});
  Status s = plugin->PreEnqueue(*waiting);
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Message(), "pod \"ns/p\": ResourceClaim not created yet");

  // The controller names the claim in the pod's status before the informer has the claim.
  json statuses = json::array({{{"name", "gpu"}, {"resourceClaimName", "p-gpu-abc"}}});
  auto named = PodWithClaims("p", {entry}, statuses);
  EXPECT_EQ(plugin->PreEnqueue(*named).Message(), "could not find ResourceClaim \"ns/p-gpu-abc\"");

  // A claim of that name that the pod does not own is not its claim.
  json claim = ClaimJson("p-gpu-abc", "gpu");
  AddClaim(claim);
  EXPECT_EQ(plugin->PreEnqueue(*named).Message(),
            "ResourceClaim ns/p-gpu-abc was not created for Pod ns/p (Pod is not owner)");

  claim["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                                       {"kind", "Pod"},
                                                       {"name", "p"},
                                                       {"uid", "uid-p"},
                                                       {"controller", true}}});
  AddClaim(claim);
  EXPECT_TRUE(plugin->PreEnqueue(*named).IsSuccess());

  // An entry the controller decided needs no claim is ignored.
  auto none = PodWithClaims("q", {entry}, json::array({{{"name", "gpu"}}}));
  EXPECT_TRUE(plugin->PreEnqueue(*none).IsSuccess());
}

// A claim the informer could not decode is not waited for as if missing: the pod goes on to
// PreFilter, whose rejection (an event on the pod) names the field; a good version clears it.
TEST_F(DynamicResourcesTest, AClaimThatCannotBeDecodedIsReportedOnThePodWithTheField) {
  auto plugin = Plugin();
  json bad = ClaimJson("c", "gpu");
  bad["spec"]["devices"]["requests"][0]["exactly"]["count"] = "two";
  std::string error;
  try {
    api::DecodeResourceClaim(bad);
  } catch (const std::exception& e) {
    error = e.what();
  }
  ASSERT_NE(error, "");
  // As the watch brings it: the informer's decoder rejects it.
  informers().For<api::ResourceClaim>().InjectWatchEvent(client::WatchEventType::kAdded, bad);
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "c")});
  EXPECT_TRUE(plugin->PreEnqueue(*pod).IsSuccess());
  CycleState state;
  Status pre;
  Cycle(*plugin, state, *pod, {AddNode("n1", 1)}, &pre);
  EXPECT_EQ(pre.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(pre.Message(), "ResourceClaim ns/c cannot be read: " + error);
  EXPECT_NE(pre.Message().find("spec.devices.requests[0].exactly.count"), std::string::npos)
      << pre.Message();

  AddClaim(ClaimJson("c", "gpu"));
  EXPECT_EQ(plugin->malformed().Error(MalformedObjects::Kind::kClaim, "ns/c"), "");
  CycleState again;
  Cycle(*plugin, again, *pod, {AddNode("n1", 1)}, &pre);
  EXPECT_TRUE(pre.IsSuccess()) << pre.Message();
}

// What explain says of each claim: where its devices could come from, where they are taken, and
// where none match; and for an allocated claim, that the pod follows it.
TEST_F(DynamicResourcesTest, ExplainSaysPerClaimWhereDevicesAreTakenOrMissing) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 1);
  NodeInfo n3 = AddNode("n3", 0);
  AddClaim(ClaimJson("a", "gpu"));
  AddClaim(ClaimJson("b", "gpu"));
  auto first = PodWithClaims("first", {ClaimEntry("gpu", "a")});
  CycleState first_state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, first_state, *first, {n1}, &pre)["n1"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(first_state, *first, "n1").IsSuccess());

  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "b")});
  CycleState state;
  Cycle(*plugin, state, *pod, {n1, n2, n3}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  std::vector<const NodeInfo*> rejected = {&n1, &n2, &n3};
  auto changes = plugin->SuggestChanges(state, *pod, rejected, {}, nullptr);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].note_only);
  EXPECT_EQ(changes[0].description,
            "claim ns/b: 1 node (n2) could give its devices, but the pod fails there otherwise; "
            "on 1 node (n1) the devices that match are allocated to others; 1 node (n3) has no "
            "devices (or too few) of class gpu for request gpu");

  // Once written, a sharer of claim a is told it can only follow the allocation.
  ASSERT_TRUE(plugin->PreBind(first_state, *first, "n1").IsSuccess());
  auto sharer = PodWithClaims("sharer", {ClaimEntry("gpu", "a")});
  CycleState sharer_state;
  Cycle(*plugin, sharer_state, *sharer, {n1, n2}, &pre);
  std::vector<const NodeInfo*> elsewhere = {&n2};
  changes = plugin->SuggestChanges(sharer_state, *sharer, elsewhere, {}, nullptr);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].description,
            "claim ns/a is allocated already, to devices the pod cannot use on 1 node (n2); the "
            "pod can go only where they are");
}

// Why a node has no devices for a claim: the first request that cannot be met there on its own,
// and the first check its devices fall short at, in the order the allocator checks them (class,
// pool, selectors, capacity, taints, shared counters); else the claim's constraints.
TEST_F(DynamicResourcesTest, ExplainSaysWhyNodesHaveNoDevicesForAClaim) {
  auto plugin = Plugin();
  auto gpu = [](const std::string& name, bool fast, const char* memory) {
    return dra::Device(name)
        .Attr("fast", dra::BoolAttr(fast))
        .Attr("model", dra::StringAttr("a"))
        .Capacity("memory", memory);
  };
  auto publish = [&](const std::string& node, const std::vector<dra::Dev>& devices,
                     int64_t pool_slices = 1, const std::string& driver = kDriver) {
    informers().For<api::ResourceSlice>().Upsert(
        dra::Slice(node + "-slice", node, dra::Pool(node, pool_slices), driver, devices));
  };
  std::vector<NodeInfo> nodes;
  auto node = [&](const std::string& name, const std::vector<dra::Dev>& devices) {
    nodes.push_back(AddNode(name, 0));
    if (!devices.empty()) publish(name, devices);
  };
  node("fits", {gpu("d0", true, "8"), gpu("d1", true, "8")});
  node("bare", {});
  nodes.push_back(AddNode("nic", 0));
  publish("nic", {dra::Device("d0"), dra::Device("d1")}, 1, "nic.example.com");
  node("one", {gpu("d0", true, "8")});
  // Its pool has two slices; the second is not published yet.
  nodes.push_back(AddNode("updating", 0));
  publish("updating", {gpu("d0", true, "8"), gpu("d1", true, "8")}, 2);
  node("slow", {gpu("d0", false, "8"), gpu("d1", true, "8")});
  node("small", {gpu("d0", true, "2"), gpu("d1", true, "8")});
  const api::DeviceTaint broken{"broken", "", api::DeviceTaint::Effect::kNoSchedule, std::nullopt};
  node("tainted", {gpu("d0", true, "8").Taints({broken}), gpu("d1", true, "8")});
  node("drained", {gpu("d0", true, "8"), gpu("d1", true, "8")});
  auto rule = std::make_shared<api::DeviceTaintRule>();
  rule->meta.name = "drain";
  rule->device_selector = api::DeviceTaintSelector{kDriver, "drained", std::nullopt};
  rule->taint = {"maintenance", "", api::DeviceTaint::Effect::kNoExecute, std::nullopt};
  informers().For<api::DeviceTaintRule>().Upsert(rule);
  // Two partitions of one device: each takes the one slot there is.
  nodes.push_back(AddNode("shared", 0));
  informers().For<api::ResourceSlice>().Upsert(
      dra::Slice("shared-slice", "shared", dra::Pool("shared", 2), kDriver,
                 {gpu("d0", true, "8").Consumes("whole", {{"slots", "1"}}),
                  gpu("d1", true, "8").Consumes("whole", {{"slots", "1"}})}));
  informers().For<api::ResourceSlice>().Upsert(
      dra::SliceWithCounters("shared-counters", "shared", dra::Pool("shared", 2), kDriver,
                             {dra::CounterSet("whole", {{"slots", "1"}})}));
  node("mixed", {gpu("d0", true, "8"), gpu("d1", true, "8").Attr("model", dra::StringAttr("b"))});

  json claim = ClaimJson("want", "gpu", 2);
  json& request = claim["spec"]["devices"]["requests"][0]["exactly"];
  request["selectors"] =
      json::array({{{"cel", {{"expression", "device.attributes[\"gpu.example.com\"].fast"}}}}});
  request["capacity"] = {{"requests", {{"memory", "4"}}}};
  claim["spec"]["devices"]["constraints"] =
      json::array({{{"matchAttribute", "gpu.example.com/model"}}});
  AddClaim(claim);
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "want")});
  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *pod, nodes, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  ASSERT_TRUE(statuses["fits"].IsSuccess()) << statuses["fits"].Message();
  std::vector<const NodeInfo*> rejected;
  for (const NodeInfo& n : nodes) rejected.push_back(&n);
  auto changes = plugin->SuggestChanges(state, *pod, rejected, {}, nullptr);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].note_only);
  EXPECT_EQ(changes[0].description,
            "claim ns/want: 1 node (fits) could give its devices, but the pod fails there "
            "otherwise; 3 nodes (bare, nic, one) have no devices (or too few) of class gpu for "
            "request gpu; on 1 node (updating) devices of class gpu for request gpu are in "
            "resource pools being updated or invalid; on 1 node (slow) the selectors of request "
            "gpu match no devices (or too few) of class gpu; on 1 node (small) the devices that "
            "match request gpu have less capacity than it asks for (all, or all but too few); on "
            "2 nodes (tainted, drained) the devices that match request gpu have taints it does "
            "not tolerate (all, or all but too few); on 1 node (shared) the devices that match "
            "request gpu draw on shared counters too small for as many as it asks for; on 1 node "
            "(mixed) each request has devices that match, but no set of them meets the claim's "
            "constraints (or enough for all its requests at once)");
}

// The request named is the first of the claim that falls short on the node; of a request with
// subrequests, the subrequest that gets furthest.
TEST_F(DynamicResourcesTest, ExplainNamesTheFirstRequestThatFallsShortAndItsFurthestSubrequest) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 0);
  json claim = ClaimJson("multi", "gpu");
  claim["spec"]["devices"]["requests"] = json::array(
      {{{"name", "a"}, {"exactly", {{"deviceClassName", "gpu"}, {"count", 1}}}},
       {{"name", "b"},
        {"firstAvailable",
         json::array({{{"name", "big"}, {"deviceClassName", "gpu"}, {"count", 2}},
                      {{"name", "small"},
                       {"deviceClassName", "gpu"},
                       {"count", 1},
                       {"selectors",
                        json::array({{{"cel",
                                       {{"expression",
                                         "device.driver == \"other.example.com\""}}}}})}}})}}});
  AddClaim(claim);
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "multi")});
  CycleState state;
  Status pre;
  Cycle(*plugin, state, *pod, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  std::vector<const NodeInfo*> rejected = {&n1, &n2};
  auto changes = plugin->SuggestChanges(state, *pod, rejected, {}, nullptr);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].description,
            "claim ns/multi: 1 node (n2) has no devices (or too few) of class gpu for request a; "
            "on 1 node (n1) the selectors of request b/small match no devices (or too few) of "
            "class gpu");
}

// Why is looked for on at most 256 nodes of a pod; the rest are only said to have no devices.
TEST_F(DynamicResourcesTest, ExplainLooksForWhyOnABoundedNumberOfNodes) {
  auto plugin = Plugin();
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < 258; i++) {
    char name[8];
    std::snprintf(name, sizeof(name), "n%03d", i);
    nodes.push_back(AddNode(name, 0));
  }
  AddClaim(ClaimJson("c", "gpu"));
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "c")});
  CycleState state;
  Status pre;
  Cycle(*plugin, state, *pod, nodes, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  std::vector<const NodeInfo*> rejected;
  for (const NodeInfo& n : nodes) rejected.push_back(&n);
  auto changes = plugin->SuggestChanges(state, *pod, rejected, {}, nullptr);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].description,
            "claim ns/c: 256 nodes (n000, n001, n002 and 253 more) have no devices (or too few) of "
            "class gpu for request gpu; 2 nodes (n256, n257) have no devices (or too few) that "
            "match its requests, class and constraints");
}

// Preemption's dry run: lower-priority pods on the node hold the only device. Filter rejects the
// node so that preemption tries it; once the dry run has removed every pod the claim is reserved
// for, its device counts as free and the node passes; adding one back takes it again. The cycle's
// own state never sees the removals.
TEST_F(DynamicResourcesTest, PreemptionCountsTheDevicesVictimsHold) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  AddClaim(ClaimJson("shared", "gpu"));
  AddClaim(ClaimJson("wanted", "gpu"));
  // Two pods of priority 0 share the claim of the node's one device.
  std::vector<api::PodPtr> holders;
  for (const char* name : {"low-a", "low-b"}) {
    auto holder = PodWithClaims(name, {ClaimEntry("gpu", "shared")});
    CycleState holder_state;
    Status pre;
    ASSERT_TRUE(Cycle(*plugin, holder_state, *holder, {n1}, &pre)["n1"].IsSuccess());
    ASSERT_TRUE(plugin->Reserve(holder_state, *holder, "n1").IsSuccess());
    ASSERT_TRUE(plugin->PreBind(holder_state, *holder, "n1").IsSuccess());
    n1.AddPod(std::make_shared<framework::PodInfo>(holder));
    holders.push_back(holder);
  }
  auto pod_of = [](int32_t priority, api::PreemptionPolicy policy) {
    auto pod = std::make_shared<api::Pod>(*PodWithClaims("high", {ClaimEntry("gpu", "wanted")}));
    pod->spec.priority = priority;
    pod->spec.preemption_policy = policy;
    return pod;
  };
  auto high = pod_of(1000, api::PreemptionPolicy::kPreemptLowerPriority);
  CycleState state;
  Status pre;
  Status status = Cycle(*plugin, state, *high, {n1}, &pre)["n1"];
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_EQ(status.Message(), "cannot allocate all claims");

  std::unique_ptr<CycleState> trial = state.Clone();
  framework::PreFilterExtensions* extensions = plugin->Extensions();
  ASSERT_NE(extensions, nullptr);
  const framework::PodInfo low_a(holders[0]);
  const framework::PodInfo low_b(holders[1]);
  ASSERT_TRUE(extensions->RemovePod(*trial, *high, low_a, n1).IsSuccess());
  // low-b still uses the claim: its device stays taken.
  EXPECT_FALSE(plugin->Filter(*trial, *high, n1).IsSuccess());
  ASSERT_TRUE(extensions->RemovePod(*trial, *high, low_b, n1).IsSuccess());
  EXPECT_TRUE(plugin->Filter(*trial, *high, n1).IsSuccess());
  EXPECT_EQ(plugin->Filter(state, *high, n1).code(), Code::kUnschedulable);
  ASSERT_TRUE(extensions->AddPod(*trial, *high, low_a, n1).IsSuccess());
  EXPECT_FALSE(plugin->Filter(*trial, *high, n1).IsSuccess());

  // Nothing a preemption could free: pods of equal priority, or a pod that may not preempt, are
  // rejected as upstream rejects them, and preemption leaves the node alone.
  for (const auto& pod : {pod_of(0, api::PreemptionPolicy::kPreemptLowerPriority),
                          pod_of(1000, api::PreemptionPolicy::kNever)}) {
    CycleState other;
    status = Cycle(*plugin, other, *pod, {n1}, &pre)["n1"];
    EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(status.Message(), "cannot allocate all claims");
  }
}

// Explain's dry run of a gang places its members one after the other, each added to the next
// one's state: the devices a member's claims would take are taken for the next, and a claim two
// members share follows the first one's allocation. A scheduling cycle's nominated pods are not
// counted, as upstream does not count them.
TEST_F(DynamicResourcesTest, ADryRunCountsTheDevicesOfThePodsPlacedBeforeThePod) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 1);
  for (const char* name : {"a", "b", "shared"}) AddClaim(ClaimJson(name, "gpu"));
  const framework::PodInfo first(PodWithClaims("first", {ClaimEntry("gpu", "a")}));
  auto second = PodWithClaims("second", {ClaimEntry("gpu", "b")});
  CycleState dry;
  dry.dry_run = true;
  Status pre;
  Cycle(*plugin, dry, *second, {}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  ASSERT_TRUE(plugin->Extensions()->AddPod(dry, *second, first, n1).IsSuccess());
  EXPECT_EQ(plugin->Filter(dry, *second, n1).Message(), "cannot allocate all claims");
  EXPECT_TRUE(plugin->Filter(dry, *second, n2).IsSuccess());

  CycleState cycle;
  Cycle(*plugin, cycle, *second, {}, &pre);
  ASSERT_TRUE(plugin->Extensions()->AddPod(cycle, *second, first, n1).IsSuccess());
  EXPECT_TRUE(plugin->Filter(cycle, *second, n1).IsSuccess());

  const framework::PodInfo sharer(PodWithClaims("sharer", {ClaimEntry("gpu", "shared")}));
  auto other = PodWithClaims("other", {ClaimEntry("gpu", "shared")});
  CycleState follow;
  follow.dry_run = true;
  Cycle(*plugin, follow, *other, {}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  ASSERT_TRUE(plugin->Extensions()->AddPod(follow, *other, sharer, n2).IsSuccess());
  EXPECT_TRUE(plugin->Filter(follow, *other, n2).IsSuccess());
  EXPECT_EQ(plugin->Filter(follow, *other, n1).Message(),
            "resourceclaim not available on the node");
}

// A claim asks for more devices than any node has: explain offers the most one node can give, as
// a change to the claim, and the check it runs (PreFilter and Filter with the claim so changed)
// finds that node.
TEST_F(DynamicResourcesTest, ExplainOffersTheMostDevicesANodeCanGive) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 3);
  NodeInfo n2 = AddNode("n2", 1);
  AddClaim(ClaimJson("big", "gpu", 5));
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "big")});
  CycleState state;
  state.dry_run = true;
  Status pre;
  auto statuses = Cycle(*plugin, state, *pod, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  ASSERT_FALSE(statuses["n1"].IsSuccess());
  std::vector<const NodeInfo*> rejected = {&n1, &n2};
  auto changes = plugin->SuggestChanges(state, *pod, rejected, {}, nullptr);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_TRUE(changes[0].note_only);
  const framework::PodChange& change = changes[1];
  EXPECT_FALSE(change.note_only);
  EXPECT_EQ(change.description, "request gpu of claim ns/big: ask for 3 devices instead of 5");
  ASSERT_TRUE(change.apply && change.prepare);

  CycleState check;
  check.dry_run = true;
  change.prepare(check);
  api::Pod changed = *pod;
  change.apply(changed);
  statuses = Cycle(*plugin, check, changed, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["n1"].IsSuccess()) << statuses["n1"].Message();
  EXPECT_FALSE(statuses["n2"].IsSuccess());
  // Only a dry run reads the changed claim.
  CycleState cycle;
  change.prepare(cycle);
  EXPECT_FALSE(Cycle(*plugin, cycle, changed, {n1}, &pre)["n1"].IsSuccess());
}

TEST_F(DynamicResourcesTest, AMissingDeviceClassStopsThePodAtPreFilter) {
  auto plugin = Plugin();
  AddClaim(ClaimJson("c", "missing"));
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "c")});
  CycleState state;
  Status pre;
  Cycle(*plugin, state, *pod, {AddNode("n1", 1)}, &pre);
  EXPECT_EQ(pre.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(pre.Message(), "request gpu: device class missing does not exist");
}

TEST_F(DynamicResourcesTest, FilterAllocatesOnNodesWithDevicesAndReserveTakesThem) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 0);
  AddClaim(ClaimJson("a", "gpu"));
  AddClaim(ClaimJson("b", "gpu"));
  auto first = PodWithClaims("first", {ClaimEntry("gpu", "a")});
  auto second = PodWithClaims("second", {ClaimEntry("gpu", "b")});

  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *first, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["n1"].IsSuccess()) << statuses["n1"].Message();
  EXPECT_EQ(statuses["n2"].code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(statuses["n2"].Message(), "cannot allocate all claims");
  ASSERT_TRUE(plugin->Reserve(state, *first, "n1").IsSuccess());
  EXPECT_NE(plugin->tracker().PendingAllocation("uid-a"), nullptr);

  // The only device is in flight for the first pod: the second cannot have it.
  CycleState second_state;
  statuses = Cycle(*plugin, second_state, *second, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess());
  EXPECT_EQ(statuses["n1"].Message(), "cannot allocate all claims");

  // The same claim in flight keeps another pod that uses it waiting.
  auto sharer = PodWithClaims("sharer", {ClaimEntry("gpu", "a")});
  CycleState sharer_state;
  Cycle(*plugin, sharer_state, *sharer, {n1}, &pre);
  EXPECT_EQ(pre.Message(), "resource claim ns/a is in the process of being allocated");

  // Unreserve gives the device back.
  plugin->Unreserve(state, *first, "n1");
  EXPECT_EQ(plugin->tracker().PendingAllocation("uid-a"), nullptr);
  CycleState again;
  statuses = Cycle(*plugin, again, *second, {n1}, &pre);
  EXPECT_TRUE(statuses["n1"].IsSuccess()) << statuses["n1"].Message();
}

// Pods whose claims ask the same are decided on an unchanged node by the decision an earlier
// cycle searched for; a node whose devices were taken or given back since is searched again.
TEST_F(DynamicResourcesTest, AnUnchangedNodeKeepsItsDecisionAndAChangedOneIsSearchedAgain) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 1);
  NodeInfo n3 = AddNode("n3", 0);
  for (const char* claim : {"a", "b", "c", "d"}) AddClaim(ClaimJson(claim, "gpu"));
  auto hits = [&] { return plugin->inventory()->decisions().hits(); };
  auto cycle = [&](CycleState& state, const std::string& claim) {
    Status pre;
    auto statuses = Cycle(*plugin, state, *PodWithClaims("p-" + claim, {ClaimEntry("gpu", claim)}),
                          {n1, n2, n3}, &pre);
    EXPECT_TRUE(pre.IsSuccess()) << pre.Message();
    std::map<std::string, std::string> out;
    for (const auto& [node, status] : statuses) {
      out[node] = status.IsSuccess() ? "fits" : status.Message();
    }
    return out;
  };
  const std::string kCannot = "cannot allocate all claims";
  using Outcome = std::map<std::string, std::string>;

  CycleState a;
  EXPECT_EQ(cycle(a, "a"), (Outcome{{"n1", "fits"}, {"n2", "fits"}, {"n3", kCannot}}));
  EXPECT_EQ(hits(), 0u);
  ASSERT_TRUE(
      plugin->Reserve(a, *PodWithClaims("p-a", {ClaimEntry("gpu", "a")}), "n1").IsSuccess());

  // n1's device is in flight for claim a: searched again. n2 and n3 are as they were.
  CycleState b;
  EXPECT_EQ(cycle(b, "b"), (Outcome{{"n1", kCannot}, {"n2", "fits"}, {"n3", kCannot}}));
  EXPECT_EQ(hits(), 2u);

  // Given back: n1 is free again, as when the first cycle decided it.
  plugin->Unreserve(a, *PodWithClaims("p-a", {ClaimEntry("gpu", "a")}), "n1");
  CycleState c;
  EXPECT_EQ(cycle(c, "c"), (Outcome{{"n1", "fits"}, {"n2", "fits"}, {"n3", kCannot}}));
  EXPECT_EQ(hits(), 4u);
  // Reserve allocates on a node Filter only decided on.
  ASSERT_TRUE(
      plugin->Reserve(c, *PodWithClaims("p-c", {ClaimEntry("gpu", "c")}), "n2").IsSuccess());
  EXPECT_NE(plugin->tracker().PendingAllocation("uid-c"), nullptr);
  CycleState d;
  EXPECT_EQ(cycle(d, "d"), (Outcome{{"n1", "fits"}, {"n2", kCannot}, {"n3", kCannot}}));
}

// Filter finds a node's decision by the node's place in the snapshot's list, as PreFilter saw
// the list: nodes that moved in the list are decided as themselves.
TEST_F(DynamicResourcesTest, NodesAreDecidedByTheirPlaceInTheListAndMovedNodesAsThemselves) {
  auto plugin = Plugin();
  AddNode("n1", 1);
  AddNode("n2", 1);
  AddNode("n3", 1);
  for (const char* claim : {"a", "b", "c", "d"}) AddClaim(ClaimJson(claim, "gpu"));
  // The snapshot's way: a NodeInfo knows its place in the list it is listed in.
  auto list = [&](const std::vector<std::string>& names) {
    std::vector<framework::NodeInfoPtr> nodes;
    for (const std::string& name : names) {
      auto info = std::make_shared<NodeInfo>(*handle_.lister().Get(name));
      info->set_list_index(static_cast<uint32_t>(nodes.size()));
      nodes.push_back(std::move(info));
    }
    return nodes;
  };
  auto cycle = [&](CycleState& state, const std::string& claim,
                   const std::vector<framework::NodeInfoPtr>& nodes) {
    auto pod = PodWithClaims("p-" + claim, {ClaimEntry("gpu", claim)});
    framework::PreFilterResult result;
    Status pre = plugin->PreFilter(state, *pod, nodes, &result);
    EXPECT_TRUE(pre.IsSuccess()) << pre.Message();
    std::map<std::string, bool> fits;
    for (const auto& node : nodes)
      fits[node->name()] = plugin->Filter(state, *pod, *node).IsSuccess();
    return fits;
  };
  auto hits = [&] { return plugin->inventory()->decisions().hits(); };
  using Fits = std::map<std::string, bool>;

  auto first = list({"n1", "n2", "n3"});
  CycleState a;
  EXPECT_EQ(cycle(a, "a", first), (Fits{{"n1", true}, {"n2", true}, {"n3", true}}));
  ASSERT_TRUE(
      plugin->Reserve(a, *PodWithClaims("p-a", {ClaimEntry("gpu", "a")}), "n1").IsSuccess());
  CycleState b;
  EXPECT_EQ(cycle(b, "b", first), (Fits{{"n1", false}, {"n2", true}, {"n3", true}}));
  EXPECT_EQ(hits(), 2u);

  // The list changes order: each node keeps its own decision.
  auto moved = list({"n3", "n2", "n1"});
  CycleState c;
  EXPECT_EQ(cycle(c, "c", moved), (Fits{{"n1", false}, {"n2", true}, {"n3", true}}));
  EXPECT_EQ(hits(), 5u);
  // A NodeInfo the list does not hold (a copy, as a preemption dry run makes) is found by name.
  NodeInfo copy = *moved[2];
  auto pod = PodWithClaims("p-c", {ClaimEntry("gpu", "c")});
  EXPECT_FALSE(plugin->Filter(c, *pod, copy).IsSuccess());
  EXPECT_EQ(hits(), 6u);
}

// Filter runs on many nodes at once, and a node may be decided by two threads at the same time
// (one remembering while the other finds): each node gets the verdict one thread alone gives it,
// cycle after cycle, while the nodes' free devices change between cycles, and in explain's dry
// runs of a gang, where every thread's Filter sees the devices of the member placed before taken
// (an allocator the first of them makes). Run under ThreadSanitizer and AddressSanitizer (make
// tsan, make sanitize), this is what checks that a decision's lookup and its replacement share
// nothing unsynchronized, and that PreFilter frees only replaced decisions no Filter still reads.
TEST_F(DynamicResourcesTest, FilterOnManyThreadsAtOnceDecidesEachNodeAsOneThreadAlone) {
  auto plugin = Plugin();
  constexpr int kNodes = 24;
  constexpr int kCycles = 8;
  constexpr int kThreads = 4;
  // Nodes without devices share one slot of the decisions, so threads meet there too.
  std::vector<int> free(kNodes);
  std::vector<framework::NodeInfoPtr> listed;
  for (int i = 0; i < kNodes; i++) {
    free[i] = i % 3;
    AddNode("n" + std::to_string(i), free[i]);
  }
  for (const framework::NodeInfoPtr& node : handle_.lister().List()) {
    auto info = std::make_shared<NodeInfo>(*node);
    info->set_list_index(static_cast<uint32_t>(listed.size()));
    listed.push_back(std::move(info));
  }
  auto index_of = [](const std::string& name) { return std::stoi(name.substr(1)); };
  for (int cycle = 0; cycle < kCycles; cycle++) {
    const std::string claim = "c" + std::to_string(cycle);
    AddClaim(ClaimJson(claim, "gpu"));
    auto pod = PodWithClaims("p-" + claim, {ClaimEntry("gpu", claim)});
    // The first node with a device free: this cycle's pod takes one there.
    const int chosen = static_cast<int>(
        std::find_if(free.begin(), free.end(), [](int n) { return n > 0; }) - free.begin());
    ASSERT_LT(chosen, kNodes);
    const bool dry_run = cycle % 2 == 1;
    CycleState state;
    state.dry_run = dry_run;
    framework::PreFilterResult result;
    ASSERT_TRUE(plugin->PreFilter(state, *pod, listed, &result).IsSuccess());
    std::vector<int> want = free;
    if (dry_run) {
      const std::string member = "member-" + claim;
      AddClaim(ClaimJson(member, "gpu"));
      const framework::PodInfo placed(PodWithClaims(member, {ClaimEntry("gpu", member)}));
      ASSERT_TRUE(plugin->Extensions()->AddPod(state, *pod, placed, *listed[chosen]).IsSuccess());
      want[chosen]--;
    }
    // Every thread filters every node twice, each starting at another node.
    std::vector<std::vector<std::string>> verdicts(kThreads, std::vector<std::string>(kNodes));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        for (int k = 0; k < 2 * kNodes; k++) {
          const framework::NodeInfo& node = *listed[(t * 5 + k) % kNodes];
          Status status = plugin->Filter(state, *pod, node);
          verdicts[t][index_of(node.name())] = status.IsSuccess() ? "fits" : status.Message();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; t++) {
      for (int i = 0; i < kNodes; i++) {
        EXPECT_EQ(verdicts[t][i], want[i] > 0 ? "fits" : "cannot allocate all claims")
            << "cycle " << cycle << ", thread " << t << ", node n" << i;
      }
    }
    if (dry_run) continue;
    // The node is searched again in the next cycle, and its decision replaced while other nodes'
    // are found.
    ASSERT_TRUE(plugin->Reserve(state, *pod, "n" + std::to_string(chosen)).IsSuccess());
    free[chosen]--;
  }
  EXPECT_GT(plugin->inventory()->decisions().hits(), 0u);
}

// Pods asking for the same extended resource served from devices are decided on an unchanged
// node by an earlier cycle's decision too, and Reserve allocates the device on the chosen one.
TEST_F(DynamicResourcesTest, ExtendedResourceDecisionsAreRememberedLikeClaims) {
  auto plugin = Plugin();
  auto device_class = std::make_shared<api::DeviceClass>(*dra::Class("gpu-er", kDriver));
  device_class->extended_resource_name = "example.com/gpu";
  informers().For<api::DeviceClass>().Upsert(device_class);
  auto pod = [&](const std::string& name) {
    json pod_json = {
        {"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}}},
        {"spec",
         {{"containers",
           json::array(
               {{{"name", "c"}, {"resources", {{"requests", {{"example.com/gpu", "1"}}}}}}})}}}};
    api_.Store(client::PodsResource().Path("ns", name), pod_json);
    return std::make_shared<api::Pod>(api::DecodePod(pod_json));
  };
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 1);
  auto hits = [&] { return plugin->inventory()->decisions().hits(); };
  auto fits = [&](CycleState& state, const api::Pod& p) {
    Status pre;
    auto statuses = Cycle(*plugin, state, p, {n1, n2}, &pre);
    EXPECT_TRUE(pre.IsSuccess()) << pre.Message();
    return std::make_pair(statuses["n1"].IsSuccess(), statuses["n2"].IsSuccess());
  };

  auto first = pod("first");
  CycleState first_state;
  EXPECT_EQ(fits(first_state, *first), std::make_pair(true, true));
  EXPECT_EQ(hits(), 0u);
  auto second = pod("second");
  CycleState second_state;
  EXPECT_EQ(fits(second_state, *second), std::make_pair(true, true));
  EXPECT_EQ(hits(), 2u);

  // Reserve makes the claim's allocation on the node Filter only decided on.
  ASSERT_TRUE(plugin->Reserve(first_state, *first, "n1").IsSuccess());
  auto pending = plugin->tracker().PendingAllocation("uid-first/extended-resources");
  ASSERT_NE(pending, nullptr);
  ASSERT_TRUE(pending->status.allocation.has_value());
  ASSERT_EQ(pending->status.allocation->results.size(), 1u);
  EXPECT_EQ(pending->status.allocation->results[0].pool, "n1");
  CycleState third_state;
  EXPECT_EQ(fits(third_state, *pod("third")), std::make_pair(false, true));
  EXPECT_EQ(hits(), 3u);
}

// The slices, classes and taint rules the allocator searches are kept between cycles; a change to
// any of them is seen by the next PreFilter.
TEST_F(DynamicResourcesTest, SlicesClassesAndTaintRulesChangedAfterACycleAreSeenByTheNext) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 0);
  AddClaim(ClaimJson("a", "gpu"));
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "a")});
  Status pre;
  CycleState first;
  auto statuses = Cycle(*plugin, first, *pod, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["n1"].IsSuccess()) << statuses["n1"].Message();
  EXPECT_EQ(statuses["n2"].Message(), "cannot allocate all claims");

  // n2's driver publishes a device; n1's is taken away.
  informers().For<api::ResourceSlice>().Upsert(
      dra::SliceWithDevices("n2-slice", "n2", dra::Pool("n2"), kDriver, 1));
  informers().For<api::ResourceSlice>().Remove("n1-slice");
  CycleState second;
  statuses = Cycle(*plugin, second, *pod, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_EQ(statuses["n1"].Message(), "cannot allocate all claims");
  EXPECT_TRUE(statuses["n2"].IsSuccess()) << statuses["n2"].Message();

  // A taint rule keeps n2's device from pods that do not tolerate it.
  auto rule = std::make_shared<api::DeviceTaintRule>();
  rule->meta.name = "drain";
  rule->device_selector = api::DeviceTaintSelector{kDriver, std::nullopt, std::nullopt};
  rule->taint.key = "maintenance";
  informers().For<api::DeviceTaintRule>().Upsert(rule);
  CycleState third;
  statuses = Cycle(*plugin, third, *pod, {n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_EQ(statuses["n2"].Message(), "cannot allocate all claims");
  informers().For<api::DeviceTaintRule>().Remove("drain");

  // A class made after the last cycle is known to the allocator in the next.
  informers().For<api::DeviceClass>().Upsert(dra::Class("fast", kDriver));
  AddClaim(ClaimJson("b", "fast"));
  auto fast = PodWithClaims("q", {ClaimEntry("gpu", "b")});
  CycleState fourth;
  statuses = Cycle(*plugin, fourth, *fast, {n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["n2"].IsSuccess()) << statuses["n2"].Message();
}

TEST_F(DynamicResourcesTest, PreBindWritesTheFinalizerTheAllocationAndTheReservation) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 2);
  AddClaim(ClaimJson("a", "gpu"));
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "a")});
  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *pod, {n1}, &pre)["n1"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *pod, "n1").IsSuccess());
  EXPECT_TRUE(plugin->PreBindPreFlight(state, *pod, "n1").IsSuccess());
  Status s = plugin->PreBind(state, *pod, "n1");
  ASSERT_TRUE(s.IsSuccess()) << s.Message();

  auto patches = api_.patches();
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0].first, ClaimPathOf("a"));
  EXPECT_EQ(patches[0].second["metadata"]["finalizers"],
            json::array({"resource.kubernetes.io/delete-protection"}));
  EXPECT_EQ(patches[1].first, ClaimPathOf("a") + "/status");
  const json& status = patches[1].second["status"];
  EXPECT_EQ(status["reservedFor"],
            json::array({{{"resource", "pods"}, {"name", "p"}, {"uid", "uid-p"}}}));
  ASSERT_EQ(status["allocation"]["devices"]["results"].size(), 1u);
  EXPECT_EQ(status["allocation"]["devices"]["results"][0]["device"], "device-0");
  EXPECT_EQ(status["allocation"]["devices"]["results"][0]["pool"], "n1");
  EXPECT_TRUE(status["allocation"].contains("allocationTimestamp"));
  EXPECT_TRUE(status["allocation"].contains("nodeSelector"));

  // No longer in flight: the informer has the allocation now.
  EXPECT_EQ(plugin->tracker().PendingAllocation("uid-a"), nullptr);
  api::ResourceClaimPtr claim = plugin->tracker().Get("ns", "a");
  ASSERT_NE(claim, nullptr);
  ASSERT_TRUE(claim->status.allocation.has_value());

  // A second pod that shares the claim follows it to its node, and joins reservedFor.
  auto sharer = PodWithClaims("sharer", {ClaimEntry("gpu", "a")});
  NodeInfo n2 = AddNode("n2", 2);
  CycleState sharer_state;
  auto statuses = Cycle(*plugin, sharer_state, *sharer, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["n1"].IsSuccess());
  EXPECT_EQ(statuses["n2"].Message(), "resourceclaim not available on the node");
  ASSERT_TRUE(plugin->Reserve(sharer_state, *sharer, "n1").IsSuccess());
  ASSERT_TRUE(plugin->PreBind(sharer_state, *sharer, "n1").IsSuccess());
  EXPECT_EQ(api_.Get(ClaimPathOf("a"))["status"]["reservedFor"].size(), 2u);

  // Unreserve takes only that pod out of reservedFor.
  plugin->Unreserve(sharer_state, *sharer, "n1");
  json reserved = api_.Get(ClaimPathOf("a"))["status"]["reservedFor"];
  ASSERT_EQ(reserved.size(), 1u);
  EXPECT_EQ(reserved[0]["uid"], "uid-p");
}

// Members of a pod group bind together after the last one's Reserve, so a claim they share is
// allocated once, by the first member, and the others share that allocation before it is
// written instead of waiting for it (they would wait forever: the first member waits for them).
TEST_F(DynamicResourcesTest, PodsOfOneGroupShareAClaimAllocatedForTheirGroup) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  NodeInfo n2 = AddNode("n2", 1);
  AddClaim(ClaimJson("shared", "gpu"));
  auto member = [](const std::string& name, const std::string& group) {
    api::PodPtr pod = PodWithClaims(name, {ClaimEntry("gpu", "shared")});
    auto copy = std::make_shared<api::Pod>(*pod);
    copy->meta.labels.Set(std::string(api::kPodGroupLabel), group);
    return api::PodPtr(copy);
  };
  auto first = member("first", "train");
  auto second = member("second", "train");
  auto stranger = member("stranger", "other");

  CycleState first_state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, first_state, *first, {n1}, &pre)["n1"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(first_state, *first, "n1").IsSuccess());

  CycleState second_state;
  auto statuses = Cycle(*plugin, second_state, *second, {n1, n2}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["n1"].IsSuccess()) << statuses["n1"].Message();
  EXPECT_EQ(statuses["n2"].Message(), "resourceclaim not available on the node");
  ASSERT_TRUE(plugin->Reserve(second_state, *second, "n1").IsSuccess());

  CycleState stranger_state;
  Cycle(*plugin, stranger_state, *stranger, {n1}, &pre);
  EXPECT_EQ(pre.Message(), "resource claim ns/shared is in the process of being allocated");

  // The group binds: the first writes the allocation, the second only joins reservedFor.
  Status s = plugin->PreBind(first_state, *first, "n1");
  ASSERT_TRUE(s.IsSuccess()) << s.Message();
  s = plugin->PreBind(second_state, *second, "n1");
  ASSERT_TRUE(s.IsSuccess()) << s.Message();
  json claim = api_.Get(ClaimPathOf("shared"));
  ASSERT_EQ(claim["status"]["reservedFor"].size(), 2u);
  EXPECT_EQ(claim["status"]["reservedFor"][1]["name"], "second");
  EXPECT_EQ(claim["status"]["allocation"]["devices"]["results"].size(), 1u);
  EXPECT_EQ(plugin->tracker().PendingAllocation("uid-shared"), nullptr);
}

// When a member is turned away before the group binds, its share goes; the allocation stays in
// flight for the members that still hold it, and goes with the last of them.
TEST_F(DynamicResourcesTest, AGroupsPendingAllocationGoesWithItsLastMember) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  AddClaim(ClaimJson("shared", "gpu"));
  auto member = [](const std::string& name) {
    auto pod = std::make_shared<api::Pod>(*PodWithClaims(name, {ClaimEntry("gpu", "shared")}));
    pod->meta.labels.Set(std::string(api::kPodGroupLabel), "train");
    return api::PodPtr(pod);
  };
  auto first = member("first");
  auto second = member("second");
  CycleState first_state;
  CycleState second_state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, first_state, *first, {n1}, &pre)["n1"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(first_state, *first, "n1").IsSuccess());
  ASSERT_TRUE(Cycle(*plugin, second_state, *second, {n1}, &pre)["n1"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(second_state, *second, "n1").IsSuccess());
  plugin->Unreserve(first_state, *first, "n1");
  EXPECT_NE(plugin->tracker().PendingAllocation("uid-shared"), nullptr);
  plugin->Unreserve(second_state, *second, "n1");
  EXPECT_EQ(plugin->tracker().PendingAllocation("uid-shared"), nullptr);
}

// Extended resources served from devices (DRAExtendedResource): a node that offers the resource as
// allocatable (a device plugin) serves it without devices; any other node must allocate devices
// of the class, for a claim PreBind creates with upstream's name, annotation and owner, and names
// in the pod's status with the container request each device request serves.
TEST_F(DynamicResourcesTest, ExtendedResourcesBackedByADeviceClassAreServedFromDevices) {
  auto plugin = Plugin();
  auto device_class = std::make_shared<api::DeviceClass>(*dra::Class("gpu-er", kDriver));
  device_class->extended_resource_name = "example.com/gpu";
  informers().For<api::DeviceClass>().Upsert(device_class);
  json pod_json = {
      {"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "uid-p"}}},
      {"spec",
       {{"containers",
         json::array(
             {{{"name", "c"}, {"resources", {{"requests", {{"example.com/gpu", "1"}}}}}}})}}}};
  api_.Store(client::PodsResource().Path("ns", "p"), pod_json);
  auto pod = std::make_shared<api::Pod>(api::DecodePod(pod_json));
  NodeInfo dra_node = AddNode("dra", 1);
  NodeInfo bare = AddNode("bare", 0);
  auto plugin_node = std::make_shared<api::Node>(dra::MakeNode("plugin", "r"));
  plugin_node->status.allocatable.Set("example.com/gpu", 4);
  NodeInfo device_plugin(plugin_node);

  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *pod, {dra_node, bare, device_plugin}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["plugin"].IsSuccess()) << statuses["plugin"].Message();
  EXPECT_TRUE(statuses["dra"].IsSuccess()) << statuses["dra"].Message();
  EXPECT_EQ(statuses["bare"].Message(), "cannot allocate all claims");

  // On the device-plugin node nothing is allocated or written.
  ASSERT_TRUE(plugin->Reserve(state, *pod, "plugin").IsSuccess());
  EXPECT_TRUE(plugin->PreBindPreFlight(state, *pod, "plugin").IsSkip());

  CycleState dra_state;
  ASSERT_TRUE(Cycle(*plugin, dra_state, *pod, {dra_node}, &pre)["dra"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(dra_state, *pod, "dra").IsSuccess());
  EXPECT_NE(plugin->tracker().PendingAllocation("uid-p/extended-resources"), nullptr);
  Status s = plugin->PreBind(dra_state, *pod, "dra");
  ASSERT_TRUE(s.IsSuccess()) << s.Message();
  ASSERT_EQ(api_.posts().size(), 1u);
  const json created = api_.posts()[0];
  EXPECT_EQ(created["metadata"]["generateName"], "p-extended-resources-");
  EXPECT_EQ(created["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"],
            "true");
  EXPECT_EQ(created["metadata"]["ownerReferences"][0]["uid"], "uid-p");
  EXPECT_EQ(created["spec"]["devices"]["requests"],
            json::parse(R"([{"name": "container-0-request-0", "exactly":
                {"deviceClassName": "gpu-er", "allocationMode": "ExactCount", "count": 1}}])"));
  const std::string name = api_.post_names()[0];
  json claim = api_.Get(ClaimPathOf(name));
  EXPECT_EQ(claim["status"]["allocation"]["devices"]["results"][0]["device"], "device-0");
  EXPECT_EQ(claim["status"]["reservedFor"][0]["uid"], "uid-p");
  json pod_status = api_.Get(client::PodsResource().Path("ns", "p"))["status"];
  EXPECT_EQ(pod_status["extendedResourceClaimStatus"],
            json::parse(R"({"resourceClaimName": ")" + name + R"(", "requestMappings":
                [{"containerName": "c", "resourceName": "example.com/gpu",
                  "requestName": "container-0-request-0"}]})"));
  EXPECT_EQ(plugin->tracker().PendingAllocation("uid-p/extended-resources"), nullptr);

  // Undone (a later step failed): the claim goes.
  plugin->Unreserve(dra_state, *pod, "dra");
  EXPECT_EQ(api_.deleted(), std::vector<std::string>{ClaimPathOf(name)});
}

// A device with binding conditions (one a controller prepares before use): PreBind writes the
// allocation, says on the pod that it waits, and returns once the driver reported the conditions,
// or fails when it reported a binding failure.
TEST_F(DynamicResourcesTest, PreBindWaitsForBindingConditionsAndFailsOnABindingFailure) {
  auto plugin = Plugin();
  informers().For<api::ResourceSlice>().Upsert(
      dra::Slice("attach-slice", "n1", dra::Pool("n1"), kDriver,
                 {dra::Device("fabric-0").BindingConditions({"Attached"}, {"AttachFailed"}),
                  dra::Device("fabric-1").BindingConditions({"Attached"}, {"AttachFailed"})}));
  NodeInfo n1 = AddNode("n1", 0);
  auto run = [&](const std::string& name, const std::string& condition) {
    AddClaim(ClaimJson(name, "gpu"));
    auto pod = PodWithClaims("p-" + name, {ClaimEntry("gpu", name)});
    CycleState state;
    Status pre;
    EXPECT_TRUE(Cycle(*plugin, state, *pod, {n1}, &pre)["n1"].IsSuccess()) << pre.Message();
    EXPECT_TRUE(plugin->Reserve(state, *pod, "n1").IsSuccess());
    auto prebind =
        std::async(std::launch::async, [&] { return plugin->PreBind(state, *pod, "n1"); });
    const bool waits =
        prebind.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout;
    EXPECT_TRUE(waits) << "PreBind returned before the driver reported";
    // The driver reports the device's condition in the claim's status.
    json claim = api_.Get(ClaimPathOf(name));
    const json& result = claim["status"]["allocation"]["devices"]["results"][0];
    claim["status"]["devices"] = json::array(
        {{{"driver", result["driver"]},
          {"pool", result["pool"]},
          {"device", result["device"]},
          {"conditions", json::array({{{"type", condition},
                                       {"status", "True"},
                                       {"reason", "Done"},
                                       {"message", "by the test's driver"},
                                       {"lastTransitionTime", "2026-11-28T00:00:00Z"}}})}}});
    claim["metadata"]["resourceVersion"] = "500";
    AddClaim(claim);
    EXPECT_EQ(prebind.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    return prebind.get();
  };
  Status ready = run("attached", "Attached");
  EXPECT_TRUE(ready.IsSuccess()) << ready.Message();
  Status failed = run("broken", "AttachFailed");
  EXPECT_EQ(failed.code(), Code::kError);
  EXPECT_EQ(failed.Message(),
            "device binding failed: claim=broken, reason=Done, message=\"by the test's driver\"");
  std::vector<std::string> reasons;
  for (const auto& event : handle_.recorder().events()) reasons.push_back(event.reason);
  EXPECT_EQ(reasons,
            (std::vector<std::string>{"BindingConditionsPending", "BindingConditionsPending"}));
}

TEST_F(DynamicResourcesTest, AClaimAllocatedElsewhereMeanwhileFailsPreBind) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  json claim = ClaimJson("a", "gpu");
  AddClaim(claim);
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "a")});
  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *pod, {n1}, &pre)["n1"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *pod, "n1").IsSuccess());
  // Someone else allocated it after the cycle read it (the apiserver has a newer version).
  claim["metadata"]["resourceVersion"] = "11";
  claim["status"]["allocation"] = {{"devices",
                                    {{"results", json::array({{{"request", "gpu"},
                                                               {"driver", kDriver},
                                                               {"pool", "n1"},
                                                               {"device", "device-0"}}})}}}};
  api_.Store(ClaimPathOf("a"), claim);
  Status s = plugin->PreBind(state, *pod, "n1");
  EXPECT_EQ(s.code(), Code::kError);
  EXPECT_EQ(s.Message(), "claim ns/a got allocated elsewhere in the meantime");
}

TEST_F(DynamicResourcesTest, PostFilterDeallocatesAnUnusedClaimThatFitsNoNode) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  json claim = ClaimJson("a", "gpu");
  claim["status"]["allocation"] = {
      {"devices",
       {{"results", json::array({{{"request", "gpu"},
                                  {"driver", kDriver},
                                  {"pool", "gone"},
                                  {"device", "device-0"}}})}}},
      {"nodeSelector",
       {{"nodeSelectorTerms",
         json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                     {"operator", "In"},
                                                     {"values", json::array({"gone"})}}})}}})}}}};
  AddClaim(claim);
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "a")});
  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *pod, {n1}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_EQ(statuses["n1"].Message(), "resourceclaim not available on the node");

  framework::NodeToStatus filtered;
  framework::PostFilterResult result;
  Status s = plugin->PostFilter(state, *pod, filtered, &result);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.Message(), "deallocation of ResourceClaim completed");
  json written = api_.Get(ClaimPathOf("a"));
  EXPECT_FALSE(written["status"].contains("allocation"));
}

TEST_F(DynamicResourcesTest, ScorePrefersNodesWhereTheFirstAlternativeFits) {
  auto plugin = Plugin();
  NodeInfo big = AddNode("big", 2);
  NodeInfo small = AddNode("small", 1);
  AddClaim(FirstAvailableClaimJson("a"));
  auto pod = PodWithClaims("p", {ClaimEntry("g", "a")});
  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *pod, {big, small}, &pre);
  ASSERT_TRUE(statuses["big"].IsSuccess());
  ASSERT_TRUE(statuses["small"].IsSuccess());
  std::vector<const NodeInfo*> nodes = {&big, &small};
  ASSERT_TRUE(plugin->PreScore(state, *pod, nodes).IsSuccess());
  int64_t big_score = 0;
  int64_t small_score = 0;
  ASSERT_TRUE(plugin->Score(state, *pod, big, &big_score).IsSuccess());
  ASSERT_TRUE(plugin->Score(state, *pod, small, &small_score).IsSuccess());
  EXPECT_EQ(big_score, 8);
  EXPECT_EQ(small_score, 7);
  framework::NodeScoreList scores = {{"big", big_score}, {"small", small_score}};
  ASSERT_TRUE(plugin->NormalizeScore(state, *pod, scores).IsSuccess());
  EXPECT_EQ(scores[0].score, 100);
  EXPECT_EQ(scores[1].score, 87);

  // Reserve on the small node records the subrequest that fit there.
  ASSERT_TRUE(plugin->Reserve(state, *pod, "small").IsSuccess());
  auto pending = plugin->tracker().PendingAllocation("uid-a");
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->status.allocation->results.at(0).request, "g/small");
}

TEST_F(DynamicResourcesTest, WithoutFirstAvailableScoringIsSkipped) {
  auto plugin = Plugin();
  NodeInfo n1 = AddNode("n1", 1);
  AddClaim(ClaimJson("a", "gpu"));
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "a")});
  CycleState state;
  Status pre;
  Cycle(*plugin, state, *pod, {n1}, &pre);
  std::vector<const NodeInfo*> nodes = {&n1};
  EXPECT_TRUE(plugin->PreScore(state, *pod, nodes).IsSkip());
}

TEST_F(DynamicResourcesTest, ClaimChangesRequeueOnlyThePodsTheyConcern) {
  auto plugin = Plugin();
  AddClaim(ClaimJson("a", "gpu"));
  auto pod = PodWithClaims("p", {ClaimEntry("gpu", "a")});
  framework::QueueingHintFn hint;
  for (const auto& registration : plugin->EventsToRegister()) {
    if (registration.event.resource == framework::EventResource::kResourceClaim) {
      hint = registration.hint;
    }
  }
  ASSERT_TRUE(hint);
  auto claim = [](const json& j) {
    return std::make_shared<const api::ResourceClaim>(api::DecodeResourceClaim(j));
  };
  json plain = ClaimJson("a", "gpu");
  json other = ClaimJson("other", "gpu");
  json allocated = plain;
  allocated["status"]["allocation"] = {{"devices",
                                        {{"results", json::array({{{"request", "gpu"},
                                                                   {"driver", kDriver},
                                                                   {"pool", "n1"},
                                                                   {"device", "device-0"}}})}}}};
  json other_allocated = other;
  other_allocated["status"] = allocated["status"];

  framework::EventObjects event;
  event.new_object = claim(other);
  EXPECT_EQ(hint(*pod, event), framework::QueueingHint::kSkip) << "an unrelated new claim";
  event.old_object = claim(other_allocated);
  EXPECT_EQ(hint(*pod, event), framework::QueueingHint::kQueue) << "a claim was deallocated";
  event = {};
  event.old_object = claim(plain);
  event.new_object = claim(allocated);
  EXPECT_EQ(hint(*pod, event), framework::QueueingHint::kQueue) << "its own claim's status";
  json finalized = plain;
  finalized["metadata"]["finalizers"] = json::array({"x"});
  event.new_object = claim(finalized);
  EXPECT_EQ(hint(*pod, event), framework::QueueingHint::kSkip) << "metadata only";
  event = {};
  event.old_object = claim(other);
  EXPECT_EQ(hint(*pod, event), framework::QueueingHint::kSkip) << "deleted unallocated claim";
}

TEST(DynamicResourcesArgs, DefaultsAndValidation) {
  Args defaults = ParseArgs(nullptr);
  EXPECT_EQ(defaults.filter_timeout, std::chrono::seconds(10));
  EXPECT_EQ(defaults.binding_timeout, std::chrono::seconds(600));
  Args set = ParseArgs({{"filterTimeout", "0s"}, {"bindingTimeout", "1m"}});
  EXPECT_EQ(set.filter_timeout, std::chrono::seconds(0));
  EXPECT_EQ(set.binding_timeout, std::chrono::seconds(60));
  try {
    ParseArgs({{"filterTimeout", "-1s"}, {"bindingTimeout", "500ms"}, {"other", 1}});
    FAIL() << "bad args were accepted";
  } catch (const framework::InvalidArgs& e) {
    std::vector<std::string> fields;
    for (const auto& error : e.errors()) fields.push_back(error.ToString());
    EXPECT_THAT(fields, ::testing::UnorderedElementsAre(
                            HasSubstr("other: unknown field"),
                            HasSubstr("filterTimeout: Invalid value: \"-1s\": must be zero or "
                                      "positive"),
                            HasSubstr("bindingTimeout: Invalid value: \"500ms\": must be at least "
                                      "1 second")));
  }
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
