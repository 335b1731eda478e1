// The volume plugins in the real binary against the real apiserver and kube-controller-manager:
// its persistentvolume-binder controller makes volumes Available and completes every binding (a
// pre-bound claim and volume, the volume the scheduler chose, a volume provisioned for the node
// the scheduler selected). No external provisioner runs in the local control plane, so the
// provisioning test plays that part alone: it creates the volume the controller asked for.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "test/integration/scheduler_fixture.h"
#include "test/testing/cluster.h"

namespace berth::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kVolumesPath = "/api/v1/persistentvolumes";
constexpr const char* kStoragePath = "/apis/storage.k8s.io/v1/";

class VolumeIntegration : public SchedulerIntegration {
 protected:
  ~VolumeIntegration() override {
    // Cluster-scoped objects outlive the namespace. A deleted volume goes once the pv-protection
    // controller sees it unbound (its claim deleted with the namespace); the test does not wait.
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      try {
        client_->Delete(*it);
      } catch (const std::exception&) {
        // Best effort: names are unique per run.
      }
    }
  }

  std::string ClaimsPath() const {
    return client::PersistentVolumeClaimsResource().Path(ns_->name());
  }
  std::string Unique(const std::string& name) const { return nodes_->id() + "-" + name; }

  void CreateClusterScoped(const std::string& collection, const json& object) {
    client_->Post(collection, object);
    created_.push_back(collection + "/" + object["metadata"]["name"].get<std::string>());
  }

  std::string CreateClass(const std::string& name, const std::string& provisioner) {
    std::string full = Unique(name);
    CreateClusterScoped(std::string(kStoragePath) + "storageclasses",
                        {{"apiVersion", "storage.k8s.io/v1"},
                         {"kind", "StorageClass"},
                         {"metadata", {{"name", full}}},
                         {"provisioner", provisioner},
                         {"volumeBindingMode", "WaitForFirstConsumer"}});
    return full;
  }

  // A volume on `node` (none: reachable everywhere) from `source` (default: a local or host path),
  // pre-bound to `claim` when given (to that claim object only when `claim_uid` is given too, as
  // a provisioner writes it). The controller makes it Available or binds it.
  std::string CreateVolume(const std::string& name, const std::string& class_name,
                           const std::string& node, const std::string& claim = "",
                           const json& access_modes = {"ReadWriteOnce"}, json source = nullptr,
                           const std::string& claim_uid = "") {
    std::string full = Unique(name);
    json pv = {{"apiVersion", "v1"},
               {"kind", "PersistentVolume"},
               {"metadata", {{"name", full}, {"labels", {{"berth-it", nodes_->id()}}}}},
               {"spec",
                {{"capacity", {{"storage", "1Gi"}}},
                 {"accessModes", access_modes},
                 {"persistentVolumeReclaimPolicy", "Retain"}}}};
    // A local volume must name its node; one reachable everywhere is a host path here.
    if (source.is_null()) {
      source = node.empty() ? json{{"hostPath", {{"path", "/mnt/disk"}}}}
                            : json{{"local", {{"path", "/mnt/disk"}}}};
    }
    pv["spec"].update(source);
    if (!class_name.empty()) pv["spec"]["storageClassName"] = class_name;
    if (!node.empty()) {
      pv["spec"]["nodeAffinity"] = {{"required",
                                     {{"nodeSelectorTerms",
                                       {{{"matchExpressions",
                                          {{{"key", "kubernetes.io/hostname"},
                                            {"operator", "In"},
                                            {"values", {node}}}}}}}}}}};
    }
    if (!claim.empty()) {
      pv["spec"]["claimRef"] = {{"namespace", ns_->name()}, {"name", claim}};
      if (!claim_uid.empty()) pv["spec"]["claimRef"]["uid"] = claim_uid;
    }
    CreateClusterScoped(kVolumesPath, pv);
    return full;
  }

  // A claim of `class_name`; pre-bound to `volume` when given, and then waited for until the
  // controller has bound the two.
  void CreateClaim(const std::string& name, const std::string& class_name,
                   const std::string& volume = "", const json& access_modes = {"ReadWriteOnce"}) {
    json claim = {{"apiVersion", "v1"},
                  {"kind", "PersistentVolumeClaim"},
                  {"metadata", {{"name", name}}},
                  {"spec",
                   {{"accessModes", access_modes},
                    {"storageClassName", class_name},
                    {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
    if (!volume.empty()) claim["spec"]["volumeName"] = volume;
    client_->Post(ClaimsPath(), claim);
    if (!volume.empty()) {
      ASSERT_TRUE(WaitClaimBound(name, volume)) << GetClaim(name).dump();
    }
  }

  json PodWithClaims(const std::string& name, const std::vector<std::string>& claims) {
    json pod = Pod(name);
    json volumes = json::array();
    for (size_t i = 0; i < claims.size(); i++) {
      volumes.push_back({{"name", "v" + std::to_string(i)},
                         {"persistentVolumeClaim", {{"claimName", claims[i]}}}});
    }
    pod["spec"]["volumes"] = volumes;
    return pod;
  }

  json GetClaim(const std::string& name) { return client_->Get(ClaimsPath() + "/" + name); }

  // Whether the controller bound `claim` and `volume` to each other within the timeout: both
  // Bound, the claim naming the volume and marked bind-completed, the volume naming the claim.
  bool WaitClaimBound(const std::string& claim, const std::string& volume) {
    return Eventually(
        [&] {
          const json c = GetClaim(claim);
          const json pv = client_->Get(std::string(kVolumesPath) + "/" + volume);
          return c["spec"].value("volumeName", "") == volume &&
                 c["status"].value("phase", "") == "Bound" &&
                 c["metadata"]
                     .value("annotations", json::object())
                     .contains("pv.kubernetes.io/bind-completed") &&
                 pv["status"].value("phase", "") == "Bound" &&
                 pv["spec"]["claimRef"].value("uid", "") == c["metadata"]["uid"];
        },
        30s);
  }

  // The volume the scheduler chose for `claim` (its claimRef names the claim's uid), once the
  // controller has bound the two; "" when that did not happen within the timeouts.
  std::string ChosenVolumeOnceBound(const std::string& claim) {
    std::string chosen;
    Eventually(
        [&] {
          auto list =
              client_->Get(std::string(kVolumesPath) + "?labelSelector=berth-it%3D" + nodes_->id());
          for (const auto& pv : list["items"]) {
            const json& ref = pv["spec"].value("claimRef", json::object());
            if (ref.value("name", "") == claim && ref.value("namespace", "") == ns_->name() &&
                !ref.value("uid", "").empty()) {
              chosen = pv["metadata"]["name"];
              return true;
            }
          }
          return false;
        },
        30s);
    if (chosen.empty() || !WaitClaimBound(claim, chosen)) return "";
    return chosen;
  }

  std::vector<std::string> created_;
};

// kube-scheduler's words for a missing claim; the claim (bound to a volume on one node) and its
// volume appearing bring the pod back, to that node.
TEST_F(VolumeIntegration, APodWithAMissingClaimWaitsThenGoesWhereItsVolumeIs) {
  nodes_->Add("n0", "4", "8Gi");
  const std::string n1 = nodes_->Add("n1", "4", "8Gi");
  StartScheduler();
  client_->Post(PodsPath(), PodWithClaims("web-0", {"data"}));
  const std::string message = UnschedulableMessage("web-0", "persistentvolumeclaim");
  EXPECT_NE(message.find(" nodes are available: persistentvolumeclaim \"data\" not found."),
            std::string::npos)
      << message;
  EXPECT_EQ(NodeOf("web-0"), "");

  const std::string volume = CreateVolume("data", "", n1, "data");
  CreateClaim("data", "", volume);
  ASSERT_TRUE(WaitBound("web-0", 60s));
  EXPECT_EQ(NodeOf("web-0"), n1);
}

// Two local volumes on two nodes and a WaitForFirstConsumer class: each pod goes to the node of
// a volume it can take, the scheduler writes the volume's claimRef, the controller completes the
// binding, and the pods are bound once the claims are.
TEST_F(VolumeIntegration, WaitForFirstConsumerClaimsTakeLocalVolumesOnTheirPodsNodes) {
  const std::string n0 = nodes_->Add("n0", "4", "8Gi");
  const std::string n1 = nodes_->Add("n1", "4", "8Gi");
  const std::string local = CreateClass("local", "kubernetes.io/no-provisioner");
  const std::map<std::string, std::string> node_of_volume = {
      {CreateVolume("local-0", local, n0), n0}, {CreateVolume("local-1", local, n1), n1}};
  CreateClaim("data-0", local);
  CreateClaim("data-1", local);
  StartScheduler();
  client_->Post(PodsPath(), PodWithClaims("db-0", {"data-0"}));
  client_->Post(PodsPath(), PodWithClaims("db-1", {"data-1"}));

  for (const auto& [pod, claim] : {std::pair{"db-0", "data-0"}, std::pair{"db-1", "data-1"}}) {
    SCOPED_TRACE(pod);
    const std::string volume = ChosenVolumeOnceBound(claim);
    ASSERT_NE(volume, "");
    const json pv = client_->Get(std::string(kVolumesPath) + "/" + volume);
    EXPECT_EQ(pv["spec"]["claimRef"]["uid"], GetClaim(claim)["metadata"]["uid"]);
    EXPECT_EQ(pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"], "yes");
    ASSERT_TRUE(WaitBound(pod, 60s));
    EXPECT_EQ(NodeOf(pod), node_of_volume.at(volume));
  }
  EXPECT_NE(NodeOf("db-0"), NodeOf("db-1"));
}

// Dynamic provisioning: the claim gets volume.kubernetes.io/selected-node and the controller asks
// the class's provisioner for a volume (volume.kubernetes.io/storage-provisioner); the test, as
// that provisioner, creates one on that node for the claim, the controller binds the two, and
// the pod is bound there.
TEST_F(VolumeIntegration, AClaimToProvisionIsToldItsPodsNode) {
  nodes_->Add("n0", "4", "8Gi");
  nodes_->Add("n1", "4", "8Gi");
  const std::string provisioner = "example.com/berth-it-provisioner";
  const std::string dynamic = CreateClass("dynamic", provisioner);
  CreateClaim("scratch", dynamic);
  StartScheduler();
  client_->Post(PodsPath(), PodWithClaims("job-0", {"scratch"}));

  std::string selected;
  ASSERT_TRUE(Eventually(
      [&] {
        const json annotations =
            GetClaim("scratch")["metadata"].value("annotations", json::object());
        selected = annotations.value("volume.kubernetes.io/selected-node", "");
        return !selected.empty() &&
               annotations.value("volume.kubernetes.io/storage-provisioner", "") == provisioner;
      },
      30s))
      << GetClaim("scratch").dump();
  EXPECT_EQ(NodeOf("job-0"), "");
  const json claim = GetClaim("scratch");
  const std::string volume =
      CreateVolume("pvc-scratch", dynamic, selected, "scratch", {"ReadWriteOnce"}, nullptr,
                   claim["metadata"]["uid"].get<std::string>());
  ASSERT_TRUE(WaitClaimBound("scratch", volume)) << GetClaim("scratch").dump();
  ASSERT_TRUE(WaitBound("job-0", 60s));
  EXPECT_EQ(NodeOf("job-0"), selected);
}

// A ReadWriteOncePod claim used by a running pod keeps a second pod Pending.
TEST_F(VolumeIntegration, AReadWriteOncePodClaimServesOnePod) {
  nodes_->Add("n0", "4", "8Gi");
  nodes_->Add("n1", "4", "8Gi");
  const std::string volume = CreateVolume("exclusive", "", "", "exclusive", {"ReadWriteOncePod"});
  CreateClaim("exclusive", "", volume, {"ReadWriteOncePod"});
  StartScheduler();
  client_->Post(PodsPath(), PodWithClaims("writer", {"exclusive"}));
  ASSERT_TRUE(WaitBound("writer"));
  client_->Post(PodsPath(), PodWithClaims("second", {"exclusive"}));
  const std::string reason =
      "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
      "already in-use by another pod";
  const std::string message = UnschedulableMessage("second", reason);
  EXPECT_NE(message.find(reason), std::string::npos) << message;
  EXPECT_EQ(NodeOf("second"), "");
}

// A node whose CSINode allows one volume of a driver takes one pod with such a volume.
TEST_F(VolumeIntegration, ACSINodeCountOfOneTakesOnePodsVolume) {
  const std::string n0 = nodes_->Add("n0", "4", "8Gi");
  const std::string driver = "csi.berth-it.example.com";
  CreateClusterScoped(
      std::string(kStoragePath) + "csinodes",
      {{"apiVersion", "storage.k8s.io/v1"},
       {"kind", "CSINode"},
       {"metadata", {{"name", n0}}},
       {"spec",
        {{"drivers", {{{"name", driver}, {"nodeID", n0}, {"allocatable", {{"count", 1}}}}}}}}});
  for (const char* name : {"csi-0", "csi-1"}) {
    const std::string volume = CreateVolume(
        name, "", "", name, {"ReadWriteOnce"},
        {{"csi", {{"driver", driver}, {"volumeHandle", std::string("handle-") + name}}}});
    CreateClaim(name, "", volume);
  }
  StartScheduler();
  client_->Post(PodsPath(), PodWithClaims("first", {"csi-0"}));
  ASSERT_TRUE(WaitBound("first"));
  EXPECT_EQ(NodeOf("first"), n0);
  client_->Post(PodsPath(), PodWithClaims("second", {"csi-1"}));
  const std::string message = UnschedulableMessage("second", "node(s) exceed max volume count");
  EXPECT_NE(message.find("1 node(s) exceed max volume count"), std::string::npos) << message;
  EXPECT_EQ(NodeOf("second"), "");
}

}  // namespace
}  // namespace berth::testing
