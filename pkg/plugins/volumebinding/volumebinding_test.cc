#include "pkg/plugins/volumebinding/volumebinding.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/informer/factory.h"
#include "test/testing/fake_handle.h"
#include "test/testing/unused_client.h"
#include "test/testing/volumes.h"

namespace berth::plugins::volumebinding {
namespace {

using framework::Code;
using framework::CycleState;
using framework::NodeInfo;
using framework::Status;
using json = nlohmann::json;
using namespace volumetesting;  // NOLINT(google-build-using-namespace): test vocabulary.

// The apiserver of a test: PATCH merges into the stored object under its resourceVersion
// precondition, bumps the version and hands the result to `on_write` (the informer's watch).
class FakeApi : public testing::UnusedClient {
 public:
  void Store(const std::string& path, json object) {
    std::lock_guard lock(mu_);
    objects_[path] = std::move(object);
  }
  json Patch(const std::string& path, const json& body, client::PatchType) override {
    json written;
    {
      std::lock_guard lock(mu_);
      patches_.push_back({path, body});
      auto it = objects_.find(path);
      if (it == objects_.end()) {
        throw client::ApiError(client::ErrorReason::kNotFound, 404, path + " not found");
      }
      const std::string want = body["metadata"].value("resourceVersion", "");
      if (!want.empty() && want != it->second["metadata"]["resourceVersion"]) {
        throw client::ApiError(client::ErrorReason::kConflict, 409, "the object has been modified");
      }
      it->second.merge_patch(body);
      it->second["metadata"]["resourceVersion"] = std::to_string(++version_);
      written = it->second;
    }
    if (on_write) on_write(path, written);
    return written;
  }
  std::vector<std::pair<std::string, json>> patches() {
    std::lock_guard lock(mu_);
    return patches_;
  }

  std::function<void(const std::string& path, const json& object)> on_write;

 private:
  std::mutex mu_;
  std::map<std::string, json> objects_;
  std::vector<std::pair<std::string, json>> patches_;
  int version_ = 100;
};

bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string VolumePath(const std::string& name) {
  return client::PersistentVolumesResource().Path("", name);
}
std::string ClaimPath(const std::string& name) {
  return client::PersistentVolumeClaimsResource().Path("ns", name);
}

class VolumeBindingTest : public ::testing::Test {
 protected:
  VolumeBindingTest() : handle_({}, &api_) {
    api_.on_write = [this](const std::string& path, const json& object) {
      if (path.find("/persistentvolumes/") != std::string::npos) {
        informers().For<api::PersistentVolume>().Upsert(Volume(object));
      } else {
        informers().For<api::PersistentVolumeClaim>().Upsert(Claim(object));
      }
    };
  }

  informer::SharedInformerFactory& informers() { return handle_.informers(); }

  std::shared_ptr<VolumeBinding> Plugin(const json& args = nullptr) {
    auto plugin = std::dynamic_pointer_cast<VolumeBinding>(New(args, handle_));
    EXPECT_NE(plugin, nullptr);
    return plugin;
  }

  void AddClaim(const json& claim) {
    api_.Store(ClaimPath(claim["metadata"]["name"]), claim);
    informers().For<api::PersistentVolumeClaim>().Upsert(Claim(claim));
  }
  void AddVolume(const json& pv) {
    api_.Store(VolumePath(pv["metadata"]["name"]), pv);
    informers().For<api::PersistentVolume>().Upsert(Volume(pv));
  }
  void AddClass(const json& storage_class) {
    informers().For<api::StorageClass>().Upsert(Class(storage_class));
  }
  NodeInfo AddNode(const std::string& name, const json& labels = json::object()) {
    api::NodePtr node = Node(name, labels);
    informers().For<api::Node>().Upsert(node);
    return NodeInfo(node);
  }
  void AddPod(const api::PodPtr& pod) { informers().For<api::Pod>().Upsert(pod); }

  // PreFilter, then Filter on each node; the statuses by node name.
  std::map<std::string, Status> Cycle(VolumeBinding& plugin, CycleState& state, const api::Pod& pod,
                                      const std::vector<NodeInfo>& nodes, Status* pre_filter) {
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

TEST_F(VolumeBindingTest, PodsWithoutClaimsAreSkipped) {
  auto plugin = Plugin();
  CycleState state;
  framework::PreFilterResult result;
  auto pod = PodWith("p", json::array({{{"name", "tmp"}, {"emptyDir", json::object()}}}));
  EXPECT_EQ(plugin->PreFilter(state, *pod, {}, &result).code(), Code::kSkip);
  EXPECT_EQ(plugin->PreScore(state, *pod, {}).code(), Code::kSkip);
  EXPECT_TRUE(plugin->Reserve(state, *pod, "node-a").IsSuccess());
  EXPECT_TRUE(plugin->PreBind(state, *pod, "node-a").IsSuccess());
  EXPECT_TRUE(api_.patches().empty());
}

TEST_F(VolumeBindingTest, PreFilterRejectsClaimsThatCannotBeUsedWithUpstreamsWords) {
  auto plugin = Plugin();
  AddClass(ClassJson("fast", "Immediate"));
  json lost = BoundClaimJson("lost", "pv-gone");
  lost["status"]["phase"] = "Lost";
  AddClaim(lost);
  json deleting = ClaimJson("deleting", "fast");
  deleting["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z";
  AddClaim(deleting);
  AddClaim(ClaimJson("unbound", "fast"));
  AddClaim(ClaimJson("p-stray", "fast"));  // An ephemeral volume's name, owned by no pod.
  struct Case {
    json volume;
    std::string message;
  };
  const std::vector<Case> cases = {
      {ClaimVolume("absent"), "persistentvolumeclaim \"absent\" not found"},
      {{{"name", "scratch"}, {"ephemeral", {{"volumeClaimTemplate", json::object()}}}},
       "waiting for ephemeral volume controller to create the persistentvolumeclaim "
       "\"p-scratch\""},
      {ClaimVolume("lost"),
       "persistentvolumeclaim \"lost\" bound to non-existent persistentvolume \"pv-gone\""},
      {ClaimVolume("deleting"), "persistentvolumeclaim \"deleting\" is being deleted"},
      {{{"name", "stray"}, {"ephemeral", {{"volumeClaimTemplate", json::object()}}}},
       "PVC ns/p-stray was not created for pod ns/p (pod is not owner)"},
      {ClaimVolume("unbound"), "pod has unbound immediate PersistentVolumeClaims"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    CycleState state;
    framework::PreFilterResult result;
    Status s = plugin->PreFilter(state, *PodWith("p", json::array({c.volume})), {}, &result);
    EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(s.Message(), c.message);
  }
}

TEST_F(VolumeBindingTest, AClaimOfAMissingClassMustBeBoundAlready) {
  auto plugin = Plugin();
  AddClaim(ClaimJson("data", "no-such-class"));
  CycleState state;
  framework::PreFilterResult result;
  Status s =
      plugin->PreFilter(state, *PodWith("p", json::array({ClaimVolume("data")})), {}, &result);
  EXPECT_EQ(s.Message(), "pod has unbound immediate PersistentVolumeClaims");
}

TEST_F(VolumeBindingTest, BoundVolumesPinThePodToTheNodesTheyReach) {
  auto plugin = Plugin();
  AddVolume(VolumeJson("pv-a", "", "10Gi", "node-a"));
  AddClaim(BoundClaimJson("data", "pv-a"));
  AddClaim(BoundClaimJson("orphan", "pv-missing"));
  NodeInfo a = AddNode("node-a");
  NodeInfo b = AddNode("node-b");

  CycleState state;
  Status pre;
  auto statuses =
      Cycle(*plugin, state, *PodWith("p", json::array({ClaimVolume("data")})), {a, b}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["node-a"].IsSuccess());
  EXPECT_EQ(statuses["node-b"].code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(statuses["node-b"].Message(), "node(s) didn't match PersistentVolume's node affinity");
  // Nothing to bind: no score, no write.
  EXPECT_EQ(plugin->PreScore(state, *PodWith("p", json::array()), {}).code(), Code::kSkip);
  EXPECT_TRUE(plugin->Reserve(state, *PodWith("p", json::array()), "node-a").IsSuccess());
  EXPECT_TRUE(plugin->PreBind(state, *PodWith("p", json::array()), "node-a").IsSuccess());
  EXPECT_TRUE(api_.patches().empty());

  CycleState orphan_state;
  statuses =
      Cycle(*plugin, orphan_state, *PodWith("q", json::array({ClaimVolume("orphan")})), {a}, &pre);
  EXPECT_EQ(statuses["node-a"].Message(),
            "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
}

TEST_F(VolumeBindingTest, WaitForFirstConsumerClaimsFindAVolumeTheNodeReaches) {
  auto plugin = Plugin();
  AddClass(ClassJson("local", "WaitForFirstConsumer"));
  AddVolume(VolumeJson("pv-a", "local", "10Gi", "node-a"));
  AddVolume(VolumeJson("pv-b", "local", "1Gi", "node-b"));   // Too small.
  AddVolume(VolumeJson("pv-c", "other", "10Gi", "node-c"));  // Another class.
  AddClaim(ClaimJson("data", "local", "5Gi"));
  NodeInfo a = AddNode("node-a");
  NodeInfo b = AddNode("node-b");
  NodeInfo c = AddNode("node-c");

  CycleState state;
  Status pre;
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  auto statuses = Cycle(*plugin, state, *pod, {a, b, c}, &pre);
  ASSERT_TRUE(pre.IsSuccess()) << pre.Message();
  EXPECT_TRUE(statuses["node-a"].IsSuccess());
  EXPECT_EQ(statuses["node-b"].Message(),
            "node(s) didn't find available persistent volumes to bind");
  EXPECT_EQ(statuses["node-c"].Message(),
            "node(s) didn't find available persistent volumes to bind");
}

TEST_F(VolumeBindingTest, TheSmallestFittingVolumeIsChosenAndReserveTakesIt) {
  auto plugin = Plugin();
  AddClass(ClassJson("local", "WaitForFirstConsumer"));
  AddVolume(VolumeJson("pv-big", "local", "10Gi", "node-a"));
  AddVolume(VolumeJson("pv-small", "local", "2Gi", "node-a"));
  AddClaim(ClaimJson("one", "local", "1Gi"));
  AddClaim(ClaimJson("two", "local", "1Gi"));
  AddClaim(ClaimJson("three", "local", "1Gi"));
  NodeInfo a = AddNode("node-a");

  auto first = PodWith("first", json::array({ClaimVolume("one")}));
  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *first, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *first, "node-a").IsSuccess());

  // The next pod sees pv-small taken by the assumption, so it gets pv-big.
  auto second = PodWith("second", json::array({ClaimVolume("two")}));
  CycleState state2;
  ASSERT_TRUE(Cycle(*plugin, state2, *second, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state2, *second, "node-a").IsSuccess());

  // Both volumes are taken for a third.
  auto third = PodWith("third", json::array({ClaimVolume("three")}));
  CycleState state3;
  EXPECT_EQ(Cycle(*plugin, state3, *third, {a}, &pre)["node-a"].Message(),
            "node(s) didn't find available persistent volumes to bind");

  // Unreserve gives the first pod's volume back.
  plugin->Unreserve(state, *first, "node-a");
  CycleState state4;
  EXPECT_TRUE(Cycle(*plugin, state4, *third, {a}, &pre)["node-a"].IsSuccess());
}

TEST_F(VolumeBindingTest, DynamicProvisioningFollowsTheClassTopologyAndSelectedNode) {
  auto plugin = Plugin();
  json storage_class = ClassJson("dynamic", "WaitForFirstConsumer", "csi.example.com");
  storage_class["allowedTopologies"] = {
      {{"matchLabelExpressions",
        {{{"key", "topology.kubernetes.io/zone"}, {"values", {"zone-a"}}}}}}};
  AddClass(storage_class);
  AddClass(ClassJson("static-only", "WaitForFirstConsumer"));
  AddClaim(ClaimJson("data", "dynamic"));
  AddClaim(ClaimJson("nowhere", "static-only"));
  json selected = ClaimJson("selected", "dynamic");
  selected["metadata"]["annotations"] = {{"volume.kubernetes.io/selected-node", "node-a2"}};
  AddClaim(selected);
  NodeInfo a = AddNode("node-a", {{"topology.kubernetes.io/zone", "zone-a"}});
  NodeInfo a2 = AddNode("node-a2", {{"topology.kubernetes.io/zone", "zone-a"}});
  NodeInfo b = AddNode("node-b", {{"topology.kubernetes.io/zone", "zone-b"}});

  Status pre;
  CycleState state;
  auto statuses =
      Cycle(*plugin, state, *PodWith("p", json::array({ClaimVolume("data")})), {a, b}, &pre);
  EXPECT_TRUE(statuses["node-a"].IsSuccess());
  EXPECT_EQ(statuses["node-b"].Message(),
            "node(s) didn't find available persistent volumes to bind");

  CycleState no_provisioner;
  statuses = Cycle(*plugin, no_provisioner, *PodWith("q", json::array({ClaimVolume("nowhere")})),
                   {a}, &pre);
  EXPECT_EQ(statuses["node-a"].Message(),
            "node(s) didn't find available persistent volumes to bind");

  // A claim already given a node is provisioned there only.
  CycleState pinned;
  statuses =
      Cycle(*plugin, pinned, *PodWith("r", json::array({ClaimVolume("selected")})), {a, a2}, &pre);
  EXPECT_FALSE(statuses["node-a"].IsSuccess());
  EXPECT_TRUE(statuses["node-a2"].IsSuccess());
}

TEST_F(VolumeBindingTest, PublishedCapacityLimitsWhereAClaimIsProvisioned) {
  auto plugin = Plugin();
  AddClass(ClassJson("dynamic", "WaitForFirstConsumer", "csi.example.com"));
  json driver = {{"metadata", {{"name", "csi.example.com"}}},
                 {"spec", {{"storageCapacity", true}}}};
  informers().For<api::CSIDriver>().Upsert(
      std::make_shared<const api::CSIDriver>(api::DecodeCSIDriver(driver)));
  json capacity = {
      {"metadata", {{"name", "cap-a"}, {"namespace", "kube-system"}}},
      {"storageClassName", "dynamic"},
      {"capacity", "10Gi"},
      {"nodeTopology", {{"matchLabels", {{"topology.kubernetes.io/zone", "zone-a"}}}}}};
  informers().For<api::CSIStorageCapacity>().Upsert(
      std::make_shared<const api::CSIStorageCapacity>(api::DecodeCSIStorageCapacity(capacity)));
  AddClaim(ClaimJson("small", "dynamic", "5Gi"));
  AddClaim(ClaimJson("large", "dynamic", "20Gi"));
  NodeInfo a = AddNode("node-a", {{"topology.kubernetes.io/zone", "zone-a"}});
  NodeInfo b = AddNode("node-b", {{"topology.kubernetes.io/zone", "zone-b"}});

  Status pre;
  CycleState state;
  auto statuses =
      Cycle(*plugin, state, *PodWith("p", json::array({ClaimVolume("small")})), {a, b}, &pre);
  EXPECT_TRUE(statuses["node-a"].IsSuccess());
  EXPECT_EQ(statuses["node-b"].Message(), "node(s) did not have enough free storage");
  CycleState large;
  statuses = Cycle(*plugin, large, *PodWith("q", json::array({ClaimVolume("large")})), {a}, &pre);
  EXPECT_EQ(statuses["node-a"].Message(), "node(s) did not have enough free storage");
}

TEST_F(VolumeBindingTest, ProvisioningWithoutAClassIsAnError) {
  auto plugin = Plugin();
  AddClass(ClassJson("dynamic", "WaitForFirstConsumer", "csi.example.com"));
  json missing_class = ClaimJson("data", "dynamic");
  AddClaim(missing_class);
  NodeInfo a = AddNode("node-a");
  Status pre;
  CycleState state;
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  ASSERT_TRUE(Cycle(*plugin, state, *pod, {}, &pre).empty());
  ASSERT_TRUE(pre.IsSuccess());
  // The class goes away between PreFilter and Filter.
  informers().For<api::StorageClass>().Remove("dynamic");
  Status s = plugin->Filter(state, *pod, a);
  EXPECT_EQ(s.code(), Code::kError);
  EXPECT_EQ(s.Message(), "failed to find storage class \"dynamic\"");
}

TEST_F(VolumeBindingTest, PreBindWritesTheClaimRefAndWaitsForTheVolumeController) {
  auto plugin = Plugin();
  AddClass(ClassJson("local", "WaitForFirstConsumer"));
  AddVolume(VolumeJson("pv-a", "local", "10Gi", "node-a"));
  AddClaim(ClaimJson("data", "local"));
  NodeInfo a = AddNode("node-a");
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  AddPod(pod);

  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *pod, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *pod, "node-a").IsSuccess());
  auto prebind =
      std::async(std::launch::async, [&] { return plugin->PreBind(state, *pod, "node-a"); });

  // The scheduler's write: the volume's claimRef names the claim, under the volume's version.
  ASSERT_TRUE(Eventually([&] { return !api_.patches().empty(); }, std::chrono::seconds(5)));
  const auto [path, patch] = api_.patches().front();
  EXPECT_EQ(path, VolumePath("pv-a"));
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "20");
  EXPECT_EQ(patch["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"], "yes");
  EXPECT_EQ(patch["spec"]["claimRef"], json({{"kind", "PersistentVolumeClaim"},
                                             {"apiVersion", "v1"},
                                             {"namespace", "ns"},
                                             {"name", "data"},
                                             {"uid", "uid-data"},
                                             {"resourceVersion", "10"}}));
  EXPECT_EQ(prebind.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);

  // The volume controller completes the binding on the claim.
  AddClaim(BoundClaimJson("data", "pv-a", "local"));
  ASSERT_EQ(prebind.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  Status s = prebind.get();
  EXPECT_TRUE(s.IsSuccess()) << s.Message();
}

TEST_F(VolumeBindingTest, PreBindAsksForProvisioningOnTheChosenNode) {
  auto plugin = Plugin();
  AddClass(ClassJson("dynamic", "WaitForFirstConsumer", "csi.example.com"));
  AddClaim(ClaimJson("data", "dynamic"));
  NodeInfo a = AddNode("node-a");
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  AddPod(pod);

  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *pod, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *pod, "node-a").IsSuccess());
  auto prebind =
      std::async(std::launch::async, [&] { return plugin->PreBind(state, *pod, "node-a"); });
  ASSERT_TRUE(Eventually([&] { return !api_.patches().empty(); }, std::chrono::seconds(5)));
  const auto [path, patch] = api_.patches().front();
  EXPECT_EQ(path, ClaimPath("data"));
  EXPECT_EQ(patch, json({{"metadata",
                          {{"resourceVersion", "10"},
                           {"annotations", {{"volume.kubernetes.io/selected-node", "node-a"}}}}}}));

  // The provisioner makes a volume on node-a and the controller binds the claim to it.
  AddVolume(VolumeJson("pvc-data", "dynamic", "1Gi", "node-a"));
  json bound = BoundClaimJson("data", "pvc-data", "dynamic");
  bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] = "node-a";
  bound["metadata"]["resourceVersion"] = "500";
  AddClaim(bound);
  ASSERT_EQ(prebind.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  Status s = prebind.get();
  EXPECT_TRUE(s.IsSuccess()) << s.Message();
}

TEST_F(VolumeBindingTest, PreBindFailsWhenTheProvisionerGivesUp) {
  auto plugin = Plugin();
  AddClass(ClassJson("dynamic", "WaitForFirstConsumer", "csi.example.com"));
  AddClaim(ClaimJson("data", "dynamic"));
  NodeInfo a = AddNode("node-a");
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  AddPod(pod);
  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *pod, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *pod, "node-a").IsSuccess());
  auto prebind =
      std::async(std::launch::async, [&] { return plugin->PreBind(state, *pod, "node-a"); });
  ASSERT_TRUE(Eventually([&] { return !api_.patches().empty(); }, std::chrono::seconds(5)));
  // The provisioner takes the node away again.
  json retry = ClaimJson("data", "dynamic");
  retry["metadata"]["annotations"] = {{"example.com/other", "x"}};
  retry["metadata"]["resourceVersion"] = "600";
  AddClaim(retry);
  ASSERT_EQ(prebind.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(prebind.get().Message(), "binding volumes: provisioning failed for PVC \"data\"");
}

TEST_F(VolumeBindingTest, PreBindGivesUpAtTheBindTimeoutAndWhenStopping) {
  auto plugin = Plugin({{"bindTimeoutSeconds", 1}});
  AddClass(ClassJson("local", "WaitForFirstConsumer"));
  AddVolume(VolumeJson("pv-a", "local", "10Gi", "node-a"));
  AddVolume(VolumeJson("pv-b", "local", "10Gi", "node-a"));
  AddClaim(ClaimJson("one", "local"));
  AddClaim(ClaimJson("two", "local"));
  NodeInfo a = AddNode("node-a");
  auto first = PodWith("first", json::array({ClaimVolume("one")}));
  auto second = PodWith("second", json::array({ClaimVolume("two")}));
  AddPod(first);
  AddPod(second);

  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *first, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *first, "node-a").IsSuccess());
  EXPECT_EQ(plugin->PreBind(state, *first, "node-a").Message(),
            "binding volumes: context deadline exceeded");

  CycleState state2;
  ASSERT_TRUE(Cycle(*plugin, state2, *second, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state2, *second, "node-a").IsSuccess());
  handle_.set_stopping(true);
  EXPECT_EQ(plugin->PreBind(state2, *second, "node-a").Message(),
            "binding volumes: the scheduler is stopping");
}

TEST_F(VolumeBindingTest, AStaleVolumeFailsTheWriteAndIsNotLeftAssumed) {
  auto plugin = Plugin();
  AddClass(ClassJson("local", "WaitForFirstConsumer"));
  AddVolume(VolumeJson("pv-a", "local", "10Gi", "node-a"));
  AddClaim(ClaimJson("data", "local"));
  NodeInfo a = AddNode("node-a");
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  CycleState state;
  Status pre;
  ASSERT_TRUE(Cycle(*plugin, state, *pod, {a}, &pre)["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->Reserve(state, *pod, "node-a").IsSuccess());
  // Someone else changed the volume on the apiserver since.
  json changed = VolumeJson("pv-a", "local", "10Gi", "node-a");
  changed["metadata"]["resourceVersion"] = "21";
  api_.Store(VolumePath("pv-a"), changed);
  Status s = plugin->PreBind(state, *pod, "node-a");
  EXPECT_EQ(s.code(), Code::kError);
  EXPECT_NE(s.Message().find("the object has been modified"), std::string::npos) << s.Message();
  plugin->Unreserve(state, *pod, "node-a");
  CycleState again;
  EXPECT_TRUE(Cycle(*plugin, again, *pod, {a}, &pre)["node-a"].IsSuccess());
}

TEST_F(VolumeBindingTest, ScorePrefersLowUtilizationByDefault) {
  auto plugin = Plugin();
  AddClass(ClassJson("local", "WaitForFirstConsumer"));
  AddVolume(VolumeJson("pv-a", "local", "2Gi", "node-a"));
  AddVolume(VolumeJson("pv-b", "local", "8Gi", "node-b"));
  AddClaim(ClaimJson("data", "local", "1Gi"));
  NodeInfo a = AddNode("node-a");
  NodeInfo b = AddNode("node-b");
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *pod, {a, b}, &pre);
  ASSERT_TRUE(statuses["node-a"].IsSuccess());
  ASSERT_TRUE(statuses["node-b"].IsSuccess());
  ASSERT_TRUE(plugin->PreScore(state, *pod, {}).IsSuccess());
  int64_t score_a = -1;
  int64_t score_b = -1;
  ASSERT_TRUE(plugin->Score(state, *pod, a, &score_a).IsSuccess());
  ASSERT_TRUE(plugin->Score(state, *pod, b, &score_b).IsSuccess());
  EXPECT_EQ(score_a, 50);  // 1Gi of 2Gi.
  EXPECT_EQ(score_b, 88);  // 1Gi of 8Gi: 12% used.

  // A shape that favours full volumes reverses it.
  auto packing = Plugin(
      {{"shape", {{{"utilization", 0}, {"score", 0}}, {{"utilization", 100}, {"score", 10}}}}});
  CycleState packed;
  Cycle(*packing, packed, *pod, {a, b}, &pre);
  ASSERT_TRUE(packing->Score(packed, *pod, a, &score_a).IsSuccess());
  ASSERT_TRUE(packing->Score(packed, *pod, b, &score_b).IsSuccess());
  EXPECT_EQ(score_a, 50);
  EXPECT_EQ(score_b, 12);
}

TEST_F(VolumeBindingTest, ScoreOfVolumesOfExabytesIsInRange) {
  // 4Ei of 7Ei is 57% used: 100 - 57 = 43 with the default shape. Two such claims of one class
  // on one node sum past int64 (8Ei of 14Ei, still 57%).
  auto plugin = Plugin();
  AddClass(ClassJson("local", "WaitForFirstConsumer"));
  AddVolume(VolumeJson("pv-a", "local", "7Ei", "node-a"));
  AddVolume(VolumeJson("pv-b1", "local", "7Ei", "node-b"));
  AddVolume(VolumeJson("pv-b2", "local", "7Ei", "node-b"));
  AddClaim(ClaimJson("one", "local", "4Ei"));
  AddClaim(ClaimJson("two", "local", "4Ei"));
  NodeInfo a = AddNode("node-a");
  NodeInfo b = AddNode("node-b");
  auto single = PodWith("single", json::array({ClaimVolume("one")}));
  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *single, {a}, &pre);
  ASSERT_TRUE(statuses["node-a"].IsSuccess());
  ASSERT_TRUE(plugin->PreScore(state, *single, {}).IsSuccess());
  int64_t score = -1;
  ASSERT_TRUE(plugin->Score(state, *single, a, &score).IsSuccess());
  EXPECT_EQ(score, 43);

  auto both = PodWith("both", json::array({ClaimVolume("one", "d1"), ClaimVolume("two", "d2")}));
  CycleState both_state;
  statuses = Cycle(*plugin, both_state, *both, {b}, &pre);
  ASSERT_TRUE(statuses["node-b"].IsSuccess());
  ASSERT_TRUE(plugin->PreScore(both_state, *both, {}).IsSuccess());
  ASSERT_TRUE(plugin->Score(both_state, *both, b, &score).IsSuccess());
  EXPECT_EQ(score, 43);
}

TEST_F(VolumeBindingTest, MigratedInTreeVolumesAreMatchedWithTheirCSITopology) {
  auto plugin = Plugin();
  json pv = json::parse(R"({
    "metadata": {"name": "ebs", "resourceVersion": "5"},
    "spec": {
      "capacity": {"storage": "1Gi"},
      "awsElasticBlockStore": {"volumeID": "aws://zone-a/vol-1"},
      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}]}}
    },
    "status": {"phase": "Bound"}
  })");
  AddVolume(pv);
  AddClaim(BoundClaimJson("data", "ebs"));
  // Zone-labelled by Kubernetes but not (yet) by the EBS CSI driver.
  NodeInfo a = AddNode("node-a", {{"topology.kubernetes.io/zone", "zone-a"}});
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  CycleState state;
  Status pre;
  EXPECT_TRUE(Cycle(*plugin, state, *pod, {a}, &pre)["node-a"].IsSuccess());

  json csi_node = {
      {"metadata",
       {{"name", "node-a"},
        {"annotations",
         {{"storage.alpha.kubernetes.io/migrated-plugins", "kubernetes.io/aws-ebs"}}}}},
      {"spec", {{"drivers", json::array()}}}};
  informers().For<api::CSINode>().Upsert(
      std::make_shared<const api::CSINode>(api::DecodeCSINode(csi_node)));
  CycleState migrated;
  EXPECT_EQ(Cycle(*plugin, migrated, *pod, {a}, &pre)["node-a"].Message(),
            "node(s) didn't match PersistentVolume's node affinity");
  NodeInfo labelled = AddNode("node-a", {{"topology.kubernetes.io/zone", "zone-a"},
                                         {"topology.ebs.csi.aws.com/zone", "zone-a"}});
  CycleState relabelled;
  EXPECT_TRUE(Cycle(*plugin, relabelled, *pod, {labelled}, &pre)["node-a"].IsSuccess());
}

TEST_F(VolumeBindingTest, MigratedVSphereAndAzureFileVolumesAreTranslatedToo) {
  auto plugin = Plugin();
  AddVolume(json::parse(R"({
    "metadata": {"name": "vmdk", "resourceVersion": "5"},
    "spec": {
      "capacity": {"storage": "1Gi"},
      "vsphereVolume": {"volumePath": "[ds1] volumes/v1.vmdk"},
      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]}]}]}}
    },
    "status": {"phase": "Bound"}
  })"));
  AddClaim(BoundClaimJson("data", "vmdk"));
  const auto migrated = [this](const std::string& node, const std::string& plugins) {
    json csi_node = {
        {"metadata",
         {{"name", node},
          {"annotations", {{"storage.alpha.kubernetes.io/migrated-plugins", plugins}}}}},
        {"spec", {{"drivers", json::array()}}}};
    informers().For<api::CSINode>().Upsert(
        std::make_shared<const api::CSINode>(api::DecodeCSINode(csi_node)));
  };
  migrated("node-a", "kubernetes.io/vsphere-volume");
  migrated("node-b", "kubernetes.io/vsphere-volume,kubernetes.io/azure-file");
  NodeInfo kubernetes_zone = AddNode("node-a", {{"topology.kubernetes.io/zone", "z1"}});
  NodeInfo csi_zone = AddNode("node-b", {{"topology.csi.vmware.com/zone", "z1"}});
  auto pod = PodWith("p", json::array({ClaimVolume("data")}));
  CycleState state;
  Status pre;
  auto statuses = Cycle(*plugin, state, *pod, {kubernetes_zone, csi_zone}, &pre);
  EXPECT_EQ(statuses["node-a"].Message(), "node(s) didn't match PersistentVolume's node affinity");
  EXPECT_TRUE(statuses["node-b"].IsSuccess());

  // An azureFile volume with no namespace for its secret cannot be translated on a node that
  // migrated azure-file; with one it can, and its topology is left as it is.
  json share = json::parse(R"({
    "metadata": {"name": "share", "resourceVersion": "6"},
    "spec": {"capacity": {"storage": "1Gi"}, "azureFile": {"secretName": "s", "shareName": "x"}},
    "status": {"phase": "Bound"}
  })");
  AddVolume(share);
  AddClaim(BoundClaimJson("files", "share"));
  auto files_pod = PodWith("f", json::array({ClaimVolume("files")}));
  CycleState no_namespace;
  statuses = Cycle(*plugin, no_namespace, *files_pod, {kubernetes_zone, csi_zone}, &pre);
  EXPECT_TRUE(statuses["node-a"].IsSuccess());
  EXPECT_EQ(statuses["node-b"].Message(),
            "could not translate pv: could not find a secret namespace in PersistentVolumeSource "
            "or ClaimRef");
  share["spec"]["azureFile"]["secretNamespace"] = "secrets";
  share["metadata"]["resourceVersion"] = "7";
  AddVolume(share);
  CycleState with_namespace;
  statuses = Cycle(*plugin, with_namespace, *files_pod, {kubernetes_zone, csi_zone}, &pre);
  EXPECT_TRUE(statuses["node-b"].IsSuccess());
}

TEST(VolumeBindingArgs, DefaultsAndValidation) {
  Args defaults = ParseArgs(nullptr);
  EXPECT_EQ(defaults.bind_timeout, std::chrono::seconds(600));
  ASSERT_EQ(defaults.shape.size(), 2u);
  EXPECT_EQ(defaults.shape[0].score, 10);
  EXPECT_EQ(ParseArgs({{"bindTimeoutSeconds", 30}}).bind_timeout, std::chrono::seconds(30));
  EXPECT_THROW(ParseArgs({{"bindTimeoutSeconds", -1}}), std::invalid_argument);
  EXPECT_THROW(ParseArgs({{"bindTimeoutSeconds", "10s"}}), std::invalid_argument);
  EXPECT_THROW(
      ParseArgs(
          {{"shape", {{{"utilization", 50}, {"score", 1}}, {{"utilization", 10}, {"score", 1}}}}}),
      std::invalid_argument);
  EXPECT_THROW(ParseArgs({{"shape", {{{"utilization", 0}, {"score", 11}}}}}),
               std::invalid_argument);
  EXPECT_THROW(ParseArgs({{"timeout", 1}}), std::invalid_argument);
  try {
    ParseArgs({{"bindTimeoutSeconds", -5}});
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "bindTimeoutSeconds: Invalid value: -5: invalid BindTimeoutSeconds, should not be a "
              "negative value");
  }
}

// A null point is the zero point, as kube-scheduler decodes it: the shape is never left without
// points, which scoring could not use.
TEST(VolumeBindingArgs, ANullShapePointIsTheZeroPoint) {
  const Args args = ParseArgs({{"shape", json::array({nullptr})}});
  ASSERT_EQ(args.shape.size(), 1u);
  EXPECT_EQ(args.shape[0].utilization, 0);
  EXPECT_EQ(args.shape[0].score, 0);
  EXPECT_THROW(ParseArgs({{"shape", json::array({nullptr, 7})}}), std::invalid_argument);
}

TEST(VolumeBindingHints, ClaimStorageClassCSINodeDriverAndCapacityChanges) {
  auto pod =
      PodWith("p", json::array({ClaimVolume("data"),
                                {{"name", "scratch"}, {"ephemeral", json::object()}},
                                {{"name", "inline"}, {"csi", {{"driver", "d.example.com"}}}}}));
  const auto claim_event = [](const json& claim) {
    framework::EventObjects event;
    event.new_object = Claim(claim);
    return event;
  };
  using framework::QueueingHint;
  EXPECT_EQ(IsSchedulableAfterClaimChange(*pod, claim_event(ClaimJson("data", ""))),
            QueueingHint::kQueue);
  EXPECT_EQ(IsSchedulableAfterClaimChange(*pod, claim_event(ClaimJson("p-scratch", ""))),
            QueueingHint::kQueue);
  EXPECT_EQ(IsSchedulableAfterClaimChange(*pod, claim_event(ClaimJson("other", ""))),
            QueueingHint::kSkip);
  json elsewhere = ClaimJson("data", "");
  elsewhere["metadata"]["namespace"] = "other-ns";
  EXPECT_EQ(IsSchedulableAfterClaimChange(*pod, claim_event(elsewhere)), QueueingHint::kSkip);

  framework::EventObjects class_update;
  class_update.old_object = Class(ClassJson("c", "WaitForFirstConsumer"));
  class_update.new_object = Class(ClassJson("c", "WaitForFirstConsumer"));
  EXPECT_EQ(IsSchedulableAfterStorageClassChange(*pod, class_update), QueueingHint::kSkip);
  json topology = ClassJson("c", "WaitForFirstConsumer");
  topology["allowedTopologies"] = {
      {{"matchLabelExpressions", {{{"key", "zone"}, {"values", {"a"}}}}}}};
  class_update.new_object = Class(topology);
  EXPECT_EQ(IsSchedulableAfterStorageClassChange(*pod, class_update), QueueingHint::kQueue);
  framework::EventObjects class_add;
  class_add.new_object = Class(topology);
  EXPECT_EQ(IsSchedulableAfterStorageClassChange(*pod, class_add), QueueingHint::kQueue);

  const auto csi_node = [](const std::string& migrated) {
    json node = {{"metadata", {{"name", "n"}}}};
    if (!migrated.empty()) {
      node["metadata"]["annotations"] = {
          {"storage.alpha.kubernetes.io/migrated-plugins", migrated}};
    }
    return std::make_shared<const api::CSINode>(api::DecodeCSINode(node));
  };
  framework::EventObjects node_update;
  node_update.old_object = csi_node("");
  node_update.new_object = csi_node("");
  EXPECT_EQ(IsSchedulableAfterCSINodeChange(*pod, node_update), QueueingHint::kSkip);
  node_update.new_object = csi_node("kubernetes.io/aws-ebs");
  EXPECT_EQ(IsSchedulableAfterCSINodeChange(*pod, node_update), QueueingHint::kQueue);

  const auto driver = [](const std::string& name, bool capacity) {
    json d = {{"metadata", {{"name", name}}}, {"spec", {{"storageCapacity", capacity}}}};
    return std::make_shared<const api::CSIDriver>(api::DecodeCSIDriver(d));
  };
  framework::EventObjects driver_update;
  driver_update.old_object = driver("d.example.com", true);
  driver_update.new_object = driver("d.example.com", false);
  EXPECT_EQ(IsSchedulableAfterCSIDriverChange(*pod, driver_update), QueueingHint::kQueue);
  driver_update.old_object = driver("e.example.com", true);
  driver_update.new_object = driver("e.example.com", false);
  EXPECT_EQ(IsSchedulableAfterCSIDriverChange(*pod, driver_update), QueueingHint::kSkip);

  const auto capacity = [](const std::string& amount) {
    json c = {{"metadata", {{"name", "c"}, {"namespace", "kube-system"}}},
              {"storageClassName", "s"},
              {"capacity", amount}};
    return std::make_shared<const api::CSIStorageCapacity>(api::DecodeCSIStorageCapacity(c));
  };
  framework::EventObjects capacity_update;
  capacity_update.old_object = capacity("10Gi");
  capacity_update.new_object = capacity("5Gi");
  EXPECT_EQ(IsSchedulableAfterCapacityChange(*pod, capacity_update), QueueingHint::kSkip);
  capacity_update.new_object = capacity("20Gi");
  EXPECT_EQ(IsSchedulableAfterCapacityChange(*pod, capacity_update), QueueingHint::kQueue);
}

}  // namespace
}  // namespace berth::plugins::volumebinding
