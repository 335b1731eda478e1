// Differential test against kube-scheduler for the volume plugins: 9 nodes in 3 zones, each with
// a CSINode allowing two volumes of one CSI driver, and pods whose claims are bound already (the
// controller-manager's persistentvolume-binder binds each pre-bound claim and volume before the
// pods come, so nothing is left for PreBind to write). kube-scheduler (the
// pinned release) schedules them in one namespace, then, once those pods are gone, berth-scheduler
// schedules identical pods with identical claims and volumes in another. Each pod's outcome is
// fixed by its volumes: a local volume's node, a zone-labelled volume's zone, a volume no node
// reaches, a missing claim, an unbound immediate claim, a ReadWriteOncePod claim already in use,
// and a CSI driver's per-node limit. Both must place every pod where its volumes allow, and the
// Pending pods and their whole FailedScheduling messages must be the same but for one ending,
// explained where it is compared.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "e2e/diff.h"
#include "e2e/harness.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/kube_scheduler.h"

namespace berth::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kZone = "topology.kubernetes.io/zone";
constexpr const char* kVolumesPath = "/api/v1/persistentvolumes";
constexpr const char* kCSINodesPath = "/apis/storage.k8s.io/v1/csinodes";
constexpr const char* kDriver = "diff.csi.berth.example.com";
const std::vector<std::string> kZones = {"zone-a", "zone-b", "zone-c"};
constexpr int kNodesPerZone = 3;
constexpr int kCSIVolumesPerNode = 2;

// The test's volumes, claims and CSINodes, deleted when it ends (volumes are cluster-scoped and
// outlive the namespaces); the pvc- and pv-protection controllers let each go once nothing uses
// it, without the test waiting.
class VolumeObjects {
 public:
  explicit VolumeObjects(std::shared_ptr<client::Client> client) : client_(std::move(client)) {}
  ~VolumeObjects() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      try {
        client_->Delete(*it);
      } catch (const std::exception&) {
        // Best effort: names are unique per run.
      }
    }
  }
  VolumeObjects(const VolumeObjects&) = delete;
  VolumeObjects& operator=(const VolumeObjects&) = delete;

  void Create(const std::string& collection, const json& object) {
    client_->Post(collection, object);
    created_.push_back(collection + "/" + object["metadata"]["name"].get<std::string>());
  }

  // A volume pre-bound to claim ns/`claim` (empty: left Available by the controller), with
  // `extra` merged into its spec and `labels` on it.
  std::string Volume(const std::string& name, const std::string& ns, const std::string& claim,
                     const json& extra, const json& labels = json::object(),
                     const json& access_modes = {"ReadWriteOnce"}) {
    json pv = {{"apiVersion", "v1"},
               {"kind", "PersistentVolume"},
               {"metadata", {{"name", name}, {"labels", labels}}},
               {"spec",
                {{"capacity", {{"storage", "1Gi"}}},
                 {"accessModes", access_modes},
                 {"persistentVolumeReclaimPolicy", "Retain"},
                 {"storageClassName", ""}}}};
    pv["spec"].update(extra);
    if (!claim.empty()) pv["spec"]["claimRef"] = {{"namespace", ns}, {"name", claim}};
    Create(kVolumesPath, pv);
    return name;
  }

  // A claim in `ns`, pre-bound to `volume` (see WaitForBindings), or with none: then it selects
  // a label no volume has, so it stays unbound even when some other test's volume of the same
  // (empty) class is Available.
  void Claim(const std::string& ns, const std::string& name, const std::string& volume,
             const json& access_modes = {"ReadWriteOnce"}) {
    json claim = {{"apiVersion", "v1"},
                  {"kind", "PersistentVolumeClaim"},
                  {"metadata", {{"name", name}}},
                  {"spec",
                   {{"accessModes", access_modes},
                    {"storageClassName", ""},
                    {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
    if (volume.empty()) {
      claim["spec"]["selector"] = {{"matchLabels", {{"berth-vdiff", "no-such-volume"}}}};
    } else {
      claim["spec"]["volumeName"] = volume;
      prebound_.push_back(client::PersistentVolumeClaimsResource().Path(ns, name));
    }
    Create(client::PersistentVolumeClaimsResource().Path(ns), claim);
  }

  // Waits until the controller has bound every pre-bound claim created so far to its volume;
  // false (naming the first claim still unbound) when one is not Bound within a minute.
  bool WaitForBindings(std::string* unbound) {
    for (const auto& path : prebound_) {
      if (!testing::Eventually(
              [&] {
                const json claim = client_->Get(path);
                return claim["status"].value("phase", "") == "Bound" &&
                       claim["metadata"]
                           .value("annotations", json::object())
                           .contains("pv.kubernetes.io/bind-completed");
              },
              60s)) {
        *unbound = path;
        return false;
      }
    }
    prebound_.clear();
    return true;
  }

 private:
  std::shared_ptr<client::Client> client_;
  std::vector<std::string> created_;
  std::vector<std::string> prebound_;
};

// A local volume's source and the node affinity that pins it to `node`.
json LocalOn(const std::string& node) {
  return {{"local", {{"path", "/mnt/disk"}}},
          {"nodeAffinity",
           {{"required",
             {{"nodeSelectorTerms",
               {{{"matchExpressions",
                  {{{"key", "kubernetes.io/hostname"},
                    {"operator", "In"},
                    {"values", {node}}}}}}}}}}}}};
}

// One pod of the workload and where its volumes allow it.
struct VolumePod {
  std::string name;
  std::vector<std::string> claims;
  std::string node;  // The one node it may take; empty when any (of `zone`) may.
  std::string zone;  // The zone it must be in; empty when any.
  bool pending = false;
  std::string only_zone;  // A nodeSelector on this zone; empty when none.
};

// Creates the claims and volumes of one run in `ns` and returns its pods in creation order.
std::vector<VolumePod> Prepare(VolumeObjects& objects, const std::string& ns,
                               const std::string& run, const std::vector<std::string>& nodes) {
  std::vector<VolumePod> pods;
  const std::string prefix = run + "-" + ns + "-";
  // A local volume on each of six nodes.
  for (int i = 0; i < 6; i++) {
    const std::string& node = nodes[static_cast<size_t>(i) * 4 % nodes.size()];
    const std::string claim = "local-" + std::to_string(i);
    objects.Claim(ns, claim, objects.Volume(prefix + claim, ns, claim, LocalOn(node)));
    pods.push_back({"local-" + std::to_string(i), {claim}, node, "", false, ""});
  }
  // Volumes labelled with a zone (VolumeZone), one pair per zone.
  for (int i = 0; i < 6; i++) {
    const std::string& zone = kZones[i % kZones.size()];
    const std::string claim = "zonal-" + std::to_string(i);
    objects.Claim(ns, claim,
                  objects.Volume(prefix + claim, ns, claim, {{"hostPath", {{"path", "/mnt/z"}}}},
                                 {{kZone, zone}}));
    pods.push_back({"zonal-" + std::to_string(i), {claim}, "", zone, false, ""});
  }
  // A volume no node reaches.
  objects.Claim(ns, "nowhere",
                objects.Volume(prefix + "nowhere", ns, "nowhere", LocalOn(run + "-gone")));
  pods.push_back({"nowhere", {"nowhere"}, "", "", true, ""});
  // A claim that does not exist, and one that no volume is bound to (immediate binding).
  pods.push_back({"missing", {"never-created"}, "", "", true, ""});
  objects.Claim(ns, "unbound", "");
  pods.push_back({"immediate", {"unbound"}, "", "", true, ""});
  // A ReadWriteOncePod claim: its second user waits.
  objects.Claim(
      ns, "single",
      objects.Volume(prefix + "single", ns, "single", {{"hostPath", {{"path", "/mnt/s"}}}},
                     json::object(), {"ReadWriteOncePod"}),
      {"ReadWriteOncePod"});
  pods.push_back({"single-0", {"single"}, "", "", false, ""});
  pods.push_back({"single-1", {"single"}, "", "", true, ""});
  // CSI volumes in zone-a: its nodes take kCSIVolumesPerNode each, the next one waits.
  for (int i = 0; i <= kNodesPerZone * kCSIVolumesPerNode; i++) {
    const std::string claim = "csi-" + std::to_string(i);
    objects.Claim(
        ns, claim,
        objects.Volume(prefix + claim, ns, claim,
                       {{"csi", {{"driver", kDriver}, {"volumeHandle", prefix + claim}}}}));
    const bool last = i == kNodesPerZone * kCSIVolumesPerNode;
    pods.push_back({"csi-" + std::to_string(i), {claim}, "", "zone-a", last, "zone-a"});
  }
  return pods;
}

json Manifest(const VolumePod& p, const std::string& ns, const std::string& scheduler,
              const std::string& run) {
  json pod = testing::PodManifest(ns, p.name, scheduler);
  pod["spec"]["nodeSelector"] = {{"berth-it", run}};
  if (!p.only_zone.empty()) pod["spec"]["nodeSelector"][kZone] = p.only_zone;
  for (const auto& claim : p.claims) {
    pod["spec"]["volumes"].push_back(
        {{"name", claim}, {"persistentVolumeClaim", {{"claimName", claim}}}});
  }
  return pod;
}

struct Outcome {
  std::map<std::string, std::string> node;     // Bound pods.
  std::map<std::string, std::string> pending;  // Pending pods -> their PodScheduled message.
};

Outcome Schedule(client::Client& client, const std::vector<VolumePod>& pods, const std::string& ns,
                 const std::string& scheduler, const std::string& run,
                 const std::function<std::string()>& log) {
  const std::string path = client::PodsResource().Path(ns);
  for (const auto& p : pods) {
    client.Post(path, Manifest(p, ns, scheduler, run));
    if (!testing::Eventually([&] { return Settled(client.Get(path + "/" + p.name)); }, 60s)) {
      ADD_FAILURE() << scheduler << " neither bound nor reported " << ns << "/" << p.name
                    << " within 60 s; its log:\n"
                    << log();
      break;
    }
  }
  std::this_thread::sleep_for(2s);
  Outcome out;
  const json list = client.Get(path);
  for (const auto& item : list["items"]) {
    const std::string name = item["metadata"]["name"];
    const std::string node = item["spec"].value("nodeName", "");
    if (node.empty()) {
      out.pending[name] = PodScheduledMessage(item);
    } else {
      out.node[name] = node;
    }
  }
  return out;
}

TEST(VolumeDiffE2E, PodsLandWhereTheirVolumesAllowAndPendingMessagesMatchKubeScheduler) {
  const std::string binary = testing::KubeSchedulerBinary();
  auto admin = testing::AdminClient();
  testing::TestNodes nodes(admin);
  VolumeObjects objects(admin);
  std::vector<std::string> names;
  std::map<std::string, std::string> zone_of;
  for (const auto& zone : kZones) {
    for (int i = 0; i < kNodesPerZone; i++) {
      const std::string name =
          nodes.Add(zone + "-" + std::to_string(i), "8", "32Gi",
                    [&](json& node) { node["metadata"]["labels"][kZone] = zone; });
      names.push_back(name);
      zone_of[name] = zone;
      objects.Create(kCSINodesPath, {{"apiVersion", "storage.k8s.io/v1"},
                                     {"kind", "CSINode"},
                                     {"metadata", {{"name", name}}},
                                     {"spec",
                                      {{"drivers",
                                        {{{"name", kDriver},
                                          {"nodeID", name},
                                          {"allocatable", {{"count", kCSIVolumesPerNode}}}}}}}}});
    }
  }
  const auto foreign = ForeignNodes(*admin, nodes.id());
  const fs::path dir = fs::temp_directory_path() / ("berth-volume-diff-" + nodes.id());
  fs::create_directories(dir);

  testing::TestNamespace kube_ns(admin, "e2e-vdiff-kube");
  const auto kube_pods = Prepare(objects, kube_ns.name(), nodes.id(), names);
  std::string unbound;
  ASSERT_TRUE(objects.WaitForBindings(&unbound)) << "the controller did not bind " << unbound;
  Outcome kube;
  {
    const std::string name = "vdiff-kube-scheduler-" + nodes.id();
    testing::KubeSchedulerProcess ks(KubeSchedulerDiffConfig(name), dir / "kube-scheduler");
    ASSERT_TRUE(ks.WaitReady(60s)) << "kube-scheduler (" << binary << ") did not become ready:\n"
                                   << ks.process().Log();
    kube = Schedule(*admin, kube_pods, kube_ns.name(), name, nodes.id(),
                    [&] { return ks.process().Log(); });
  }
  DeletePods(*admin, kube_ns.name());

  testing::TestNamespace berth_ns(admin, "e2e-vdiff-berth");
  const auto berth_pods = Prepare(objects, berth_ns.name(), nodes.id(), names);
  ASSERT_TRUE(objects.WaitForBindings(&unbound)) << "the controller did not bind " << unbound;
  Outcome berth;
  {
    const std::string name = "vdiff-berth-" + nodes.id();
    BerthProcess b(name, SchedulerConfig(name, false));
    ASSERT_TRUE(
        testing::Eventually([&] { return HttpGet(b.url() + "/readyz").status == 200; }, 60s))
        << b.Log();
    berth =
        Schedule(*admin, berth_pods, berth_ns.name(), name, nodes.id(), [&] { return b.Log(); });
  }
  ASSERT_EQ(ForeignNodes(*admin, nodes.id()), foreign)
      << "nodes other than this test's came or went while it ran; the node counts in the "
         "messages would differ for that alone";

  for (const auto& [who, outcome] : std::vector<std::pair<std::string, const Outcome*>>{
           {"kube-scheduler", &kube}, {"berth-scheduler", &berth}}) {
    for (const auto& p : kube_pods) {
      auto bound = outcome->node.find(p.name);
      if (p.pending) {
        EXPECT_EQ(bound, outcome->node.end()) << who << " bound " << p.name;
        continue;
      }
      if (bound == outcome->node.end()) {
        auto pending = outcome->pending.find(p.name);
        ADD_FAILURE() << who << " did not bind " << p.name << ": "
                      << (pending == outcome->pending.end() ? "(no such pod)" : pending->second);
        continue;
      }
      if (!p.node.empty()) {
        EXPECT_EQ(bound->second, p.node) << who << ": " << p.name;
      }
      if (!p.zone.empty()) {
        EXPECT_EQ(zone_of[bound->second], p.zone) << who << ": " << p.name;
      }
    }
  }
  // One known difference: for a pod turned away at PreFilter, kube-scheduler's DynamicResources
  // PostFilter (ahead of DefaultPreemption, and on by default) finds no state of its own, since
  // its PreFilter never ran, and ends PostFilter with the error "not found" before preemption is
  // tried. Berth's DynamicResources reads the missing state as nothing to free (an error there
  // would also keep preemption from ever running for such pods), so its preemption finds that no
  // node can help.
  const std::string all_nodes = std::to_string(names.size() + foreign.size());
  std::map<std::string, std::string> kube_expected = kube.pending;
  for (auto& [pod, message] : kube_expected) {
    const std::string quirk = ". not found";
    if (message.size() > quirk.size() &&
        message.compare(message.size() - quirk.size(), quirk.size(), quirk) == 0) {
      std::string ending = ". preemption: 0/";
      ending.append(all_nodes).append(" nodes are available: ").append(all_nodes);
      ending.append(" Preemption is not helpful for scheduling.");
      message.replace(message.size() - quirk.size(), quirk.size(), ending);
    }
  }
  EXPECT_EQ(berth.pending, kube_expected)
      << "Pending pods and their messages (berth-scheduler first, kube-scheduler second with "
         "its PreFilter \"not found\" ending replaced)";
  std::printf(
      "volume diff: %zu pods bound and %zu Pending by kube-scheduler, %zu and %zu by "
      "berth-scheduler\n",
      kube.node.size(), kube.pending.size(), berth.node.size(), berth.pending.size());
  KeepLogsIfFailed(dir, HasFailure(), "volume diff");
}

}  // namespace
}  // namespace berth::e2e
