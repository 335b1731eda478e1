// Informers and the client against the real local control plane (deploy/local-cluster.sh):
// etcd + kube-apiserver with TLS and RBAC.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/protobuf.h"
#include "pkg/client/client.h"
#include "pkg/informer/factory.h"
#include "pkg/informer/informer.h"
#include "test/testing/cluster.h"
#include "test/testing/stale_watch_client.h"

namespace berth::informer {
namespace {

using namespace std::chrono_literals;
using testing::AdminClient;
using testing::Eventually;
using testing::PodManifest;
using testing::StaleWatchClient;
using testing::TestNamespace;

// What handlers saw, in order: "add ns/name", "update ns/name", "delete ns/name".
class Recorder {
 public:
  EventHandler<api::Pod> Handler() {
    EventHandler<api::Pod> h;
    h.on_add = [this](const auto& pod) { Record("add " + pod->Key(), pod); };
    h.on_update = [this](const auto&, const auto& pod) { Record("update " + pod->Key(), pod); };
    h.on_delete = [this](const auto& pod) { Record("delete " + pod->Key(), pod); };
    return h;
  }
  std::vector<std::string> Events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  api::PodPtr Last() {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  void Record(std::string event, const api::PodPtr& pod) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(event));
    last_ = pod;
  }
  std::mutex mu_;
  std::vector<std::string> events_;
  api::PodPtr last_;
};

ReflectorOptions PodsIn(const std::string& ns) {
  ReflectorOptions options;
  options.resource = client::PodsResource();
  options.namespace_ = ns;
  options.initial_backoff = 100ms;
  options.max_backoff = 2s;
  return options;
}

// Keys and resourceVersions of the pods a fresh LIST returns.
std::map<std::string, std::string> FreshList(client::Client& client, const std::string& ns) {
  std::map<std::string, std::string> out;
  client::ListOptions options;
  std::string token;
  do {
    auto page = nlohmann::json::parse(
        client.ListPageRaw(client::PodsResource().Path(ns), options, token).body);
    for (const auto& item : page["items"]) {
      out[item["metadata"]["namespace"].get<std::string>() + "/" +
          item["metadata"]["name"].get<std::string>()] =
          item["metadata"]["resourceVersion"].get<std::string>();
    }
    token = page["metadata"].value("continue", "");
  } while (!token.empty());
  return out;
}

std::map<std::string, std::string> StoreContents(Informer<api::Pod>& informer) {
  std::map<std::string, std::string> out;
  for (const auto& pod : informer.store().List()) out[pod->Key()] = pod->meta.resource_version;
  return out;
}

TEST(InformerIntegration, SeesAddUpdateDeleteInOrder) {
  auto client = AdminClient();
  TestNamespace ns(client, "inf-order");
  Informer<api::Pod> informer(client, PodsIn(ns.name()), api::DecodePod);
  Recorder recorder;
  informer.AddEventHandler(recorder.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));

  const std::string pods = client::PodsResource().Path(ns.name());
  client->Post(pods, PodManifest(ns.name(), "p1"));
  client->Patch(pods + "/p1", {{"metadata", {{"labels", {{"tier", "gold"}}}}}},
                client::PatchType::kMerge);
  client->Delete(pods + "/p1?gracePeriodSeconds=0");

  const std::string key = ns.name() + "/p1";
  ASSERT_TRUE(Eventually(
      [&] {
        auto events = recorder.Events();
        return !events.empty() && events.back().rfind("delete ", 0) == 0;
      },
      30s));
  // The apiserver first marks the pod deleted (an update carrying deletionTimestamp), then
  // removes it: add, the label update, any such updates, then exactly one delete.
  auto events = recorder.Events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front(), "add " + key);
  EXPECT_EQ(events[1], "update " + key);
  EXPECT_EQ(events.back(), "delete " + key);
  for (size_t i = 1; i + 1 < events.size(); i++) EXPECT_EQ(events[i], "update " + key);
  EXPECT_EQ(informer.store().Size(), 0u);
}

TEST(InformerIntegration, UpdateCarriesNewContent) {
  auto client = AdminClient();
  TestNamespace ns(client, "inf-content");
  Informer<api::Pod> informer(client, PodsIn(ns.name()), api::DecodePod);
  Recorder recorder;
  informer.AddEventHandler(recorder.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));

  const std::string pods = client::PodsResource().Path(ns.name());
  client->Post(pods, PodManifest(ns.name(), "p1", "berth-scheduler", "250m", "1Gi"));
  client->Patch(pods + "/p1", {{"metadata", {{"labels", {{"tier", "gold"}}}}}},
                client::PatchType::kMerge);
  ASSERT_TRUE(Eventually([&] { return recorder.Events().size() >= 2; }, 30s));
  auto pod = informer.store().Get(ns.name() + "/p1");
  ASSERT_NE(pod, nullptr);
  ASSERT_NE(pod->meta.labels.Find("tier"), nullptr);
  EXPECT_EQ(*pod->meta.labels.Find("tier"), "gold");
  EXPECT_EQ(pod->spec.scheduler_name, "berth-scheduler");
  EXPECT_EQ(pod->requests.milli_cpu, 250);
  EXPECT_EQ(pod->requests.memory, 1LL << 30);
}

TEST(InformerIntegration, NodesAreSeenAddedUpdatedDeleted) {
  auto client = AdminClient();
  const std::string name = "inf-node-" + testing::UniqueSuffix();
  ReflectorOptions options;
  options.resource = client::NodesResource();
  options.label_selector = "berth-informer-test=" + name;
  Informer<api::Node> informer(client, options, api::DecodeNode);
  std::mutex mu;
  std::vector<std::string> events;
  EventHandler<api::Node> handler;
  handler.on_add = [&](const auto& n) {
    std::lock_guard lock(mu);
    events.push_back("add " + n->Name() +
                     " cpu=" + std::to_string(n->status.allocatable.milli_cpu));
  };
  handler.on_update = [&](const auto&, const auto& n) {
    std::lock_guard lock(mu);
    events.push_back("update " + n->Name() +
                     " unschedulable=" + std::to_string(n->spec.unschedulable));
  };
  handler.on_delete = [&](const auto& n) {
    std::lock_guard lock(mu);
    events.push_back("delete " + n->Name());
  };
  informer.AddEventHandler(handler);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));

  auto node = testing::NodeManifest(name, "4", "8Gi");
  node["metadata"]["labels"]["berth-informer-test"] = name;
  client->Post("/api/v1/nodes", node);
  client->Patch("/api/v1/nodes/" + name, {{"spec", {{"unschedulable", true}}}},
                client::PatchType::kStrategicMerge);
  client->Delete("/api/v1/nodes/" + name);
  ASSERT_TRUE(Eventually(
      [&] {
        std::lock_guard lock(mu);
        return events.size() >= 3;
      },
      30s));
  std::lock_guard lock(mu);
  EXPECT_EQ(events,
            (std::vector<std::string>{"add " + name + " cpu=4000",
                                      "update " + name + " unschedulable=1", "delete " + name}));
}

// kube-apiserver is SIGKILLed and restarted while the informer watches; changes made right after
// the restart must all arrive, and the store must end up equal to a fresh list.
TEST(InformerIntegration, ConvergesAfterApiserverKilledAndRestartedMidWatch) {
  auto client = AdminClient();
  TestNamespace ns(client, "inf-restart");
  const std::string pods = client::PodsResource().Path(ns.name());
  for (int i = 0; i < 5; i++) client->Post(pods, PodManifest(ns.name(), "p" + std::to_string(i)));

  Informer<api::Pod> informer(client, PodsIn(ns.name()), api::DecodePod);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));
  // The first list (resourceVersion 0) comes from the watch cache, which may not have seen the
  // last creation yet; the watch then delivers it.
  ASSERT_TRUE(Eventually([&] { return informer.store().Size() == 5u; }, 10s))
      << informer.store().Size() << " pods in the store";
  // Kill it mid-watch: only once the watch is open.
  ASSERT_TRUE(Eventually([&] { return informer.reflector().watches() >= 1; }, 10s));

  testing::RunClusterScript("restart-apiserver");

  client->Delete(pods + "/p0?gracePeriodSeconds=0");
  client->Patch(pods + "/p1", {{"metadata", {{"labels", {{"changed", "yes"}}}}}},
                client::PatchType::kMerge);
  client->Post(pods, PodManifest(ns.name(), "p-new"));

  bool converged =
      Eventually([&] { return StoreContents(informer) == FreshList(*client, ns.name()); }, 60s);
  EXPECT_TRUE(converged) << "store never matched a fresh list; last reflector error: "
                         << informer.reflector().last_error();
  EXPECT_EQ(informer.store().Get(ns.name() + "/p0"), nullptr);
  ASSERT_NE(informer.store().Get(ns.name() + "/p1"), nullptr);
  EXPECT_NE(informer.store().Get(ns.name() + "/p1")->meta.labels.Find("changed"), nullptr);
  EXPECT_NE(informer.store().Get(ns.name() + "/p-new"), nullptr);
  EXPECT_TRUE(Eventually([&] { return informer.reflector().watches() >= 2; }, 30s))
      << "the informer never watched again after the restart; lists="
      << informer.reflector().lists() << " last error: " << informer.reflector().last_error();
}

// The apiserver's watch cache replays every event it holds to a watch from any revision at or
// after the one its first list was at, and it holds all of them until its window fills. An
// apiserver started on an empty etcd listed at about revision 1, so until then a watch from "1" is
// served from the start rather than expired, and a test relying on 410 would pass only when some
// earlier test had restarted the apiserver. A restart makes the cache start at the current
// revision, which "1" is older than.
void StartWatchCacheAtCurrentRevision() { testing::RunClusterScript("restart-apiserver"); }

TEST(InformerIntegration, RelistsAndConvergesAfterGone) {
  StartWatchCacheAtCurrentRevision();
  auto real = AdminClient();
  TestNamespace ns(real, "inf-gone");
  const std::string pods = client::PodsResource().Path(ns.name());
  for (int i = 0; i < 4; i++) real->Post(pods, PodManifest(ns.name(), "p" + std::to_string(i)));

  auto stale = std::make_shared<StaleWatchClient>(real);
  Informer<api::Pod> informer(stale, PodsIn(ns.name()), api::DecodePod);
  Recorder recorder;
  informer.AddEventHandler(recorder.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));
  ASSERT_EQ(informer.reflector().lists(), 1u);

  // Changes made while the informer has no healthy watch are only found by the relist.
  ASSERT_TRUE(Eventually([&] { return stale->watching(); }, 10s));
  stale->ArmAndBreakWatch();
  real->Delete(pods + "/p0?gracePeriodSeconds=0");
  real->Post(pods, PodManifest(ns.name(), "p-late"));

  ASSERT_TRUE(Eventually([&] { return informer.reflector().lists() >= 2; }, 30s))
      << "no relist after 410; last error: " << informer.reflector().last_error();
  EXPECT_EQ(stale->gone_watches(), 1);
  ASSERT_TRUE(
      Eventually([&] { return StoreContents(informer) == FreshList(*real, ns.name()); }, 30s));
  auto events = recorder.Events();
  EXPECT_NE(std::find(events.begin(), events.end(), "delete " + ns.name() + "/p0"), events.end())
      << "the delete discovered by the relist must reach the handlers";
  EXPECT_NE(std::find(events.begin(), events.end(), "add " + ns.name() + "/p-late"), events.end());
}

// The first list is served whole from the apiserver's watch cache (resourceVersion 0); the relist
// after a 410 is a consistent read, which the apiserver pages, and every page must arrive.
TEST(InformerIntegration, TwoThousandPodsArriveCompleteFromCacheListAndFromPagedRelist) {
  StartWatchCacheAtCurrentRevision();
  auto client = AdminClient();
  TestNamespace ns(client, "inf-paging");
  const std::string pods = client::PodsResource().Path(ns.name());
  constexpr int kPods = 2000;
  constexpr int kPageSize = 300;
  testing::CreateMany(*client, pods, kPods,
                      [&](int i) { return PodManifest(ns.name(), "p-" + std::to_string(i)); });

  std::atomic<int> lists{0};
  auto counting = client::NewClient(testing::AdminConfig());
  counting->SetRequestObserver([&](const std::string& verb, int code, auto) {
    if (verb == "LIST" && code == 200) lists++;
  });
  auto stale = std::make_shared<StaleWatchClient>(counting);
  auto options = PodsIn(ns.name());
  options.page_size = kPageSize;
  // What the scheduler runs with (SharedInformerFactory's default): protobuf pages.
  options.prefer_protobuf = true;
  Informer<api::Pod> informer(stale, options, api::DecodePod);
  std::atomic<int> adds{0};
  EventHandler<api::Pod> handler;
  handler.on_add = [&](const auto&) { adds++; };
  informer.AddEventHandler(handler);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(60s));
  // The cache may be a few creations behind when it serves the list; the watch brings the rest.
  EXPECT_TRUE(
      Eventually([&] { return informer.store().Size() == static_cast<size_t>(kPods); }, 30s))
      << informer.store().Size() << " pods in the store";
  EXPECT_EQ(adds.load(), kPods);
  EXPECT_EQ(lists.load(), 1) << "the first list should be served whole from the watch cache";
  EXPECT_EQ(StoreContents(informer), FreshList(*client, ns.name()));

  ASSERT_TRUE(Eventually([&] { return stale->watching(); }, 10s));
  stale->ArmAndBreakWatch();
  client->Delete(pods + "/p-0?gracePeriodSeconds=0");
  ASSERT_TRUE(Eventually([&] { return informer.reflector().lists() >= 2; }, 30s))
      << informer.reflector().last_error();
  EXPECT_EQ(lists.load(), 1 + (kPods + kPageSize - 1) / kPageSize)
      << "expected one LIST request per page of the consistent relist";
  ASSERT_TRUE(
      Eventually([&] { return StoreContents(informer) == FreshList(*client, ns.name()); }, 30s));
  EXPECT_EQ(informer.store().Size(), static_cast<size_t>(kPods - 1));
}

TEST(InformerIntegration, EtcdCompactionStillConverges) {
  auto client = AdminClient();
  TestNamespace ns(client, "inf-compact");
  const std::string pods = client::PodsResource().Path(ns.name());
  client->Post(pods, PodManifest(ns.name(), "before"));
  Informer<api::Pod> informer(client, PodsIn(ns.name()), api::DecodePod);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));
  for (int i = 0; i < 20; i++) client->Post(pods, PodManifest(ns.name(), "x" + std::to_string(i)));
  testing::RunClusterScript("compact");
  testing::RunClusterScript("restart-apiserver");
  client->Post(pods, PodManifest(ns.name(), "after"));
  EXPECT_TRUE(
      Eventually([&] { return StoreContents(informer) == FreshList(*client, ns.name()); }, 60s))
      << informer.reflector().last_error();
}

// Every item of one unpaged LIST of `path`, decoded with `decode`, in the encoding asked for.
template <typename T>
std::vector<T> ListDecoded(client::Client& client, const std::string& path,
                           const std::string& label_selector, bool protobuf,
                           T (*decode)(const nlohmann::json&), std::string* content_type) {
  client::ListOptions options;
  options.limit = 0;
  options.label_selector = label_selector;
  options.prefer_protobuf = protobuf;
  std::vector<T> out;
  ListPageItems(
      client, path, options, "", [&](nlohmann::json& item) { out.push_back(decode(item)); },
      content_type);
  return out;
}

// A pod that uses most of what Berth decodes: affinity of every kind, tolerations, spreading,
// volumes, a sidecar, host ports, gates, owner references and annotations.
nlohmann::json RichPod(const std::string& ns, const std::string& name) {
  nlohmann::json pod = PodManifest(ns, name);
  pod["metadata"]["labels"]["app"] = "rich";
  pod["metadata"]["annotations"] = {
      {"note", "kept"}, {"kubectl.kubernetes.io/last-applied-configuration", R"({"big":1})"}};
  pod["spec"]["nodeSelector"] = {{"disk", "ssd"}};
  pod["spec"]["affinity"] = nlohmann::json::parse(R"({
    "nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "a"]},
                              {"key": "cores", "operator": "Gt", "values": ["4"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 7, "preference": {"matchExpressions": [
          {"key": "gpu", "operator": "DoesNotExist"}]}}]},
    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
      {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone",
       "namespaces": ["other"], "namespaceSelector": {"matchExpressions": [
         {"key": "team", "operator": "NotIn", "values": ["x"]}]}}]},
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
      {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "rich"}},
                                          "topologyKey": "kubernetes.io/hostname"}}]}})");
  pod["spec"]["tolerations"] = nlohmann::json::parse(R"([
    {"key": "dedicated", "operator": "Equal", "value": "rich", "effect": "NoSchedule"},
    {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}])");
  pod["spec"]["topologySpreadConstraints"] = nlohmann::json::parse(R"([
    {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
     "labelSelector": {"matchLabels": {"app": "rich"}}, "nodeAffinityPolicy": "Ignore",
     "nodeTaintsPolicy": "Honor", "matchLabelKeys": ["pod-template-hash"]},
    {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "minDomains": 2,
     "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "rich"}}}])");
  pod["spec"]["volumes"] = nlohmann::json::parse(R"([
    {"name": "data", "persistentVolumeClaim": {"claimName": "data-claim", "readOnly": true}},
    {"name": "scratch", "emptyDir": {}},
    {"name": "config", "configMap": {"name": "cfg"}}])");
  pod["spec"]["containers"][0]["ports"] = nlohmann::json::parse(R"([
    {"containerPort": 80, "hostPort": 8080}, {"containerPort": 53, "protocol": "UDP",
     "hostPort": 5353, "hostIP": "127.0.0.1"}])");
  pod["spec"]["containers"][0]["resources"]["limits"] = {{"cpu", "1"}, {"memory", "128Mi"}};
  pod["spec"]["initContainers"] = nlohmann::json::parse(R"([
    {"name": "setup", "image": "registry.k8s.io/pause:3.10",
     "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
    {"name": "proxy", "image": "registry.k8s.io/pause:3.10", "restartPolicy": "Always",
     "resources": {"requests": {"cpu": "50m", "example.com/widget": "3"},
                   "limits": {"example.com/widget": "3"}}}])");
  pod["spec"]["schedulingGates"] = nlohmann::json::parse(R"([{"name": "example.com/wait"}])");
  return pod;
}

TEST(ProtobufIntegration, PodsAndNodesDecodeTheSameFromProtobufAsFromJson) {
  auto client = AdminClient();
  TestNamespace ns(client, "proto");
  const std::string pods = client::PodsResource().Path(ns.name());
  client->Post(pods, RichPod(ns.name(), "rich"));
  client->Post(pods, PodManifest(ns.name(), "plain"));
  client->Post(pods, PodManifest(ns.name(), "nominated"));
  client->Patch(pods + "/nominated/status",
                nlohmann::json::parse(R"({"status": {"nominatedNodeName": "n1", "conditions": [
                  {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                   "message": "0/1 nodes are available"}]}})"),
                client::PatchType::kStrategicMerge);
  testing::TestNodes nodes(client);
  nodes.Add("tainted", "4", "8Gi", [](nlohmann::json& node) {
    node["spec"] = nlohmann::json::parse(R"({"unschedulable": true, "taints": [
      {"key": "dedicated", "value": "rich", "effect": "NoSchedule"},
      {"key": "gpu", "effect": "PreferNoSchedule"}]})");
    node["status"]["images"] = nlohmann::json::parse(R"([
      {"names": ["registry.k8s.io/pause:3.10", "registry.k8s.io/pause@sha256:ab"],
       "sizeBytes": 300000}])");
    node["status"]["allocatable"]["example.com/widget"] = "10";
  });
  nodes.Add("plain", "2", "4Gi");

  std::string json_type;
  std::string protobuf_type;
  const auto from_json = ListDecoded(*client, pods, "", false, api::DecodePod, &json_type);
  const auto from_protobuf = ListDecoded(*client, pods, "", true, api::DecodePod, &protobuf_type);
  EXPECT_EQ(json_type, "application/json");
  EXPECT_TRUE(api::IsProtobufMediaType(protobuf_type)) << protobuf_type;
  ASSERT_EQ(from_json.size(), 3u);
  EXPECT_TRUE(from_protobuf == from_json);

  // The same list decoded straight into pods, as berth-scheduler's pod informer does: every item
  // is taken by the direct decoder and equals the JSON path's pod.
  std::vector<api::Pod> direct;
  client::ListOptions options;
  options.limit = 0;
  options.prefer_protobuf = true;
  ListPageItems(
      *client, pods, options, "",
      [&](nlohmann::json& item) { ADD_FAILURE() << "left to the JSON path: " << item.dump(); },
      nullptr,
      [&](std::string_view message) {
        std::optional<api::Pod> pod = api::TryDecodeProtobufPod(message);
        if (pod) direct.push_back(std::move(*pod));
        return pod.has_value();
      });
  EXPECT_TRUE(direct == from_json);
  for (const api::Pod& pod : from_protobuf) {
    if (pod.meta.name == "rich") {
      EXPECT_EQ(pod.spec.topology_spread_constraints.size(), 2u);
      EXPECT_EQ(pod.spec.volumes.at(0).claim_name, "data-claim");
      EXPECT_EQ(pod.requests.milli_cpu, 2000);  // The init container outweighs app + sidecar.
      EXPECT_EQ(pod.requests.Get("example.com/widget"), 3);
      EXPECT_FALSE(
          pod.meta.annotations.Contains("kubectl.kubernetes.io/last-applied-configuration"));
    }
    if (pod.meta.name == "nominated") {
      EXPECT_EQ(pod.status.nominated_node_name, "n1");
    }
  }

  const std::string selector = "berth-it=" + nodes.id();
  const std::string nodes_path = client::NodesResource().Path();
  const auto nodes_json =
      ListDecoded(*client, nodes_path, selector, false, api::DecodeNode, &json_type);
  const auto nodes_protobuf =
      ListDecoded(*client, nodes_path, selector, true, api::DecodeNode, &protobuf_type);
  EXPECT_TRUE(api::IsProtobufMediaType(protobuf_type)) << protobuf_type;
  ASSERT_EQ(nodes_json.size(), 2u);
  EXPECT_TRUE(nodes_protobuf == nodes_json);
  const api::Node& tainted =
      nodes_protobuf[0].meta.name.ends_with("tainted") ? nodes_protobuf[0] : nodes_protobuf[1];
  EXPECT_EQ(tainted.spec.taints.size(), 2u);
  EXPECT_EQ(tainted.status.allocatable.Get("example.com/widget"), 10);
  EXPECT_EQ(tainted.status.images.at(0).size_bytes, 300000);
}

TEST(ProtobufIntegration, WatchEventsDecodeTheSameFromProtobufAsFromJson) {
  auto client = AdminClient();
  TestNamespace ns(client, "proto-watch");
  const std::string pods = client::PodsResource().Path(ns.name());
  const std::string version =
      client->Post(pods, RichPod(ns.name(), "rich"))["metadata"]["resourceVersion"];
  const auto open = [&](bool protobuf, bool undecoded_pods) {
    client::WatchOptions options;
    options.resource_version = version;
    options.timeout_seconds = 30;
    options.prefer_protobuf = protobuf;
    options.undecoded_protobuf_pods = undecoded_pods;
    return client->Watch(pods, options);
  };
  auto json_watch = open(false, false);
  auto protobuf_watch = open(true, false);
  // As berth-scheduler's pod informer watches: pods left undecoded, then decoded directly.
  auto direct_watch = open(true, true);
  client->Patch(pods + "/rich", {{"metadata", {{"labels", {{"changed", "yes"}}}}}},
                client::PatchType::kMerge);
  client->Delete(pods + "/rich?gracePeriodSeconds=0");
  int undecoded = 0;
  const auto events = [&undecoded](client::WatchStream& watch) {
    std::vector<std::pair<client::WatchEventType, api::Pod>> seen;
    client::WatchEvent event;
    while (seen.size() < 2 && watch.Next(&event)) {
      if (event.type == client::WatchEventType::kBookmark) continue;
      if (event.protobuf_pod.empty()) {
        seen.emplace_back(event.type, api::DecodePod(event.object));
        continue;
      }
      undecoded++;
      std::optional<api::Pod> pod = api::TryDecodeProtobufPod(event.protobuf_pod);
      if (!pod) {
        ADD_FAILURE() << "a watched pod was left to the general path";
        break;
      }
      seen.emplace_back(event.type, std::move(*pod));
    }
    return seen;
  };
  const auto from_json = events(*json_watch);
  const auto from_protobuf = events(*protobuf_watch);
  EXPECT_EQ(undecoded, 0);
  const auto from_direct = events(*direct_watch);
  EXPECT_EQ(undecoded, 2);
  ASSERT_EQ(from_json.size(), 2u);
  EXPECT_EQ(from_json[0].first, client::WatchEventType::kModified);
  EXPECT_TRUE(from_json[0].second.meta.labels.Contains("changed"));
  EXPECT_TRUE(from_protobuf == from_json);
  EXPECT_TRUE(from_direct == from_json);
}

TEST(ClientIntegration, ForbiddenNamesVerbAndResource) {
  auto client = client::NewClient(testing::VariantConfig("noperms"));
  try {
    client->ListPageRaw(client::PodsResource().Path(), {}, "");
    FAIL() << "a user without RBAC rights listed pods";
  } catch (const client::ApiError& e) {
    EXPECT_EQ(e.reason(), client::ErrorReason::kForbidden);
    EXPECT_EQ(e.http_status(), 403);
    std::string message = e.what();
    EXPECT_NE(message.find("list"), std::string::npos) << message;
    EXPECT_NE(message.find("pods"), std::string::npos) << message;
    EXPECT_NE(message.find("berth-test-noperms"), std::string::npos) << message;
  }
}

TEST(ClientIntegration, WrongCertificateAuthorityFailsFastWithVerificationError) {
  auto client = client::NewClient(testing::VariantConfig("wrong-ca"));
  auto start = std::chrono::steady_clock::now();
  try {
    client->Get("/version");
    FAIL() << "TLS verification accepted a server certificate from another CA";
  } catch (const client::ApiError& e) {
    EXPECT_EQ(e.reason(), client::ErrorReason::kTLS) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(ClientIntegration, RightCertificateAuthorityAndClientCertificateWork) {
  auto client = AdminClient();
  auto version = client->Get("/version");
  EXPECT_EQ(version.value("major", ""), "1");
  EXPECT_EQ(version.value("gitVersion", "").rfind("v1.", 0), 0u) << version.dump();
}

}  // namespace
}  // namespace berth::informer
