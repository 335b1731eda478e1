// Decode benchmark: one LIST response of N realistic pods (shaped as kube-apiserver serves it,
// managedFields and status included) fed through the real informer path (reflector list ->
// decode -> api::Pod -> store), in JSON and in protobuf (berth's default), reporting MB/s,
// pods/s and bytes held per stored pod; then a protobuf LIST of M realistic nodes (1,000 unless
// told, 0 for none), decoded through JSON trees and straight into api::Node.
//
//   _output/bin/decode_bench [--pods N] [--nodes M] [--repeat R] [--encoding json|protobuf|both]
//                            [--json]

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/json_sax.h"
#include "pkg/api/list_parser.h"
#include "pkg/api/protobuf.h"
#include "pkg/informer/informer.h"
#include "test/testing/proto_writer.h"
#include "test/testing/unused_client.h"

namespace berth::perf {
namespace {

std::string Hex(uint64_t v, int width) {
  static const char* digits = "0123456789abcdef";
  std::string s(width, '0');
  for (int i = width - 1; i >= 0; i--, v >>= 4) s[i] = digits[v & 15];
  return s;
}

std::string Uid(uint64_t i) {
  return Hex(i * 2654435761u, 8) + "-" + Hex(i, 4) + "-4" + Hex(i >> 3, 3) + "-8" + Hex(i, 3) +
         "-" + Hex(i * 40503u, 12);
}

// The values that vary from pod to pod, shared by the JSON and the protobuf form.
struct PodValues {
  explicit PodValues(int i)
      : app("app-" + std::to_string(i % 50)),
        name(app + "-7d9c8b6f5-" + Hex(i, 5)),
        node("node-" + std::to_string(i % 5000)),
        ns("team-" + std::to_string(i % 20)),
        uid(Uid(i)),
        owner_uid(Uid(i / 10)),
        resource_version(std::to_string(100000 + i)),
        tier(i % 3 ? "web" : "batch"),
        image("registry.example/team/" + app + ":v1." + std::to_string(i % 7)),
        volume("kube-api-access-" + Hex(i, 5)),
        host_ip("10.1." + std::to_string(i % 250) + ".1"),
        pod_ip("10.244." + std::to_string(i % 250) + "." + std::to_string(i % 200 + 2)),
        image_id("registry.example/team/" + app + "@sha256:" + Hex(i, 16) + Hex(i * 7ULL, 16) +
                 Hex(i * 13ULL, 16) + Hex(i * 17ULL, 16)),
        container_id("containerd://" + Hex(i, 16) + Hex(i * 3ULL, 16)) {}
  std::string app, name, node, ns, uid, owner_uid, resource_version, tier, image, volume, host_ip,
      pod_ip, image_id, container_id;
};

constexpr const char* kConditionTypes[] = {"PodReadyToStartContainers", "Initialized", "Ready",
                                           "ContainersReady", "PodScheduled"};

// A pod as a Deployment's ReplicaSet creates it and the apiserver serves it after the kubelet
// reported status: two containers, probes, env, volume mounts, the default tolerations,
// managedFields from two managers.
nlohmann::json RealisticPod(int i) {
  const PodValues v(i);
  const std::string& app = v.app;
  const std::string& name = v.name;
  const std::string& node = v.node;
  nlohmann::json container = {
      {"name", "server"},
      {"image", v.image},
      {"ports", {{{"containerPort", 8080}, {"name", "http"}, {"protocol", "TCP"}}}},
      {"env",
       {{{"name", "POD_NAME"},
         {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "metadata.name"}}}}}},
        {{"name", "LOG_LEVEL"}, {"value", "info"}}}},
      {"resources",
       {{"requests", {{"cpu", "250m"}, {"memory", "256Mi"}}},
        {"limits", {{"cpu", "1"}, {"memory", "512Mi"}}}}},
      {"readinessProbe",
       {{"httpGet", {{"path", "/healthz"}, {"port", 8080}, {"scheme", "HTTP"}}},
        {"periodSeconds", 10},
        {"timeoutSeconds", 1},
        {"successThreshold", 1},
        {"failureThreshold", 3}}},
      {"volumeMounts",
       {{{"name", v.volume},
         {"readOnly", true},
         {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "File"},
      {"imagePullPolicy", "IfNotPresent"}};
  nlohmann::json sidecar = {{"name", "log-shipper"},
                            {"image", "registry.example/infra/shipper:2.3"},
                            {"resources", {{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}}}},
                            {"terminationMessagePath", "/dev/termination-log"},
                            {"terminationMessagePolicy", "File"},
                            {"imagePullPolicy", "IfNotPresent"}};
  nlohmann::json tolerations = {{{"key", "node.kubernetes.io/not-ready"},
                                 {"operator", "Exists"},
                                 {"effect", "NoExecute"},
                                 {"tolerationSeconds", 300}},
                                {{"key", "node.kubernetes.io/unreachable"},
                                 {"operator", "Exists"},
                                 {"effect", "NoExecute"},
                                 {"tolerationSeconds", 300}}};
  nlohmann::json conditions = nlohmann::json::array();
  for (const char* type : kConditionTypes) {
    conditions.push_back({{"type", type},
                          {"status", "True"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", "2026-11-20T10:11:12Z"}});
  }
  nlohmann::json statuses = nlohmann::json::array();
  for (const char* c : {"server", "log-shipper"}) {
    statuses.push_back({{"name", c},
                        {"state", {{"running", {{"startedAt", "2026-11-20T10:11:15Z"}}}}},
                        {"lastState", nlohmann::json::object()},
                        {"ready", true},
                        {"restartCount", 0},
                        {"image", "registry.example/team/" + app},
                        {"imageID", v.image_id},
                        {"containerID", v.container_id},
                        {"started", true}});
  }
  nlohmann::json managed = {
      {{"manager", "kube-controller-manager"},
       {"operation", "Update"},
       {"apiVersion", "v1"},
       {"time", "2026-11-20T10:11:12Z"},
       {"fieldsType", "FieldsV1"},
       {"fieldsV1",
        {{"f:metadata",
          {{"f:generateName", nlohmann::json::object()},
           {"f:labels", {{".", nlohmann::json::object()}, {"f:app", nlohmann::json::object()}}},
           {"f:ownerReferences", {{".", nlohmann::json::object()}}}}},
         {"f:spec",
          {{"f:containers", {{"k:{\"name\":\"server\"}", {{".", nlohmann::json::object()}}}}},
           {"f:dnsPolicy", nlohmann::json::object()},
           {"f:restartPolicy", nlohmann::json::object()}}}}}},
      {{"manager", "kubelet"},
       {"operation", "Update"},
       {"apiVersion", "v1"},
       {"time", "2026-11-20T10:11:16Z"},
       {"fieldsType", "FieldsV1"},
       {"subresource", "status"},
       {"fieldsV1",
        {{"f:status",
          {{"f:conditions", nlohmann::json::object()},
           {"f:containerStatuses", nlohmann::json::object()},
           {"f:hostIP", nlohmann::json::object()},
           {"f:phase", nlohmann::json::object()},
           {"f:podIP", nlohmann::json::object()},
           {"f:startTime", nlohmann::json::object()}}}}}}};
  return {{"metadata",
           {{"name", name},
            {"generateName", app + "-7d9c8b6f5-"},
            {"namespace", v.ns},
            {"uid", v.uid},
            {"resourceVersion", v.resource_version},
            {"creationTimestamp", "2026-11-20T10:11:12Z"},
            {"labels", {{"app", app}, {"pod-template-hash", "7d9c8b6f5"}, {"tier", v.tier}}},
            {"annotations", {{"kubectl.kubernetes.io/restartedAt", "2026-11-19T08:00:00Z"}}},
            {"ownerReferences",
             {{{"apiVersion", "apps/v1"},
               {"kind", "ReplicaSet"},
               {"name", app + "-7d9c8b6f5"},
               {"uid", v.owner_uid},
               {"controller", true},
               {"blockOwnerDeletion", true}}}},
            {"managedFields", managed}}},
          {"spec",
           {{"volumes",
             {{{"name", v.volume},
               {"projected",
                {{"sources",
                  {{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
                   {{"configMap",
                     {{"name", "kube-root-ca.crt"},
                      {"items", {{{"key", "ca.crt"}, {"path", "ca.crt"}}}}}}}}},
                 {"defaultMode", 420}}}}}},
            {"containers", {container, sidecar}},
            {"restartPolicy", "Always"},
            {"terminationGracePeriodSeconds", 30},
            {"dnsPolicy", "ClusterFirst"},
            {"serviceAccountName", "default"},
            {"serviceAccount", "default"},
            {"nodeName", node},
            {"securityContext", nlohmann::json::object()},
            {"schedulerName", "berth-scheduler"},
            {"tolerations", tolerations},
            {"priority", 0},
            {"enableServiceLinks", true},
            {"preemptionPolicy", "PreemptLowerPriority"}}},
          {"status",
           {{"phase", "Running"},
            {"conditions", conditions},
            {"hostIP", v.host_ip},
            {"hostIPs", {{{"ip", v.host_ip}}}},
            {"podIP", v.pod_ip},
            {"podIPs", {{{"ip", v.pod_ip}}}},
            {"startTime", "2026-11-20T10:11:12Z"},
            {"containerStatuses", statuses},
            {"qosClass", "Burstable"}}}};
}

// The same pod in the apiserver's protobuf encoding (field numbers of k8s.io/api core/v1 and
// apimachinery meta/v1 generated.proto), every field the JSON form has, unread ones included.
std::string RealisticPodProto(int i) {
  using testing::Proto;
  const PodValues v(i);
  constexpr int64_t kCreated = 1795169472;  // 2026-11-20T10:11:12Z
  const auto time = [](int64_t seconds) { return Proto().Varint(1, seconds); };
  const auto int_or_string = [](int64_t value) { return Proto().Varint(1, 0).Varint(2, value); };

  const auto fields_v1 = [](std::string_view raw) { return Proto().Bytes(1, raw); };
  Proto meta;
  meta.Bytes(1, v.name)
      .Bytes(2, v.app + "-7d9c8b6f5-")
      .Bytes(3, v.ns)
      .Bytes(5, v.uid)
      .Bytes(6, v.resource_version)
      .Message(8, time(kCreated))
      .Entry(11, "app", v.app)
      .Entry(11, "pod-template-hash", "7d9c8b6f5")
      .Entry(11, "tier", v.tier)
      .Entry(12, "kubectl.kubernetes.io/restartedAt", "2026-11-19T08:00:00Z")
      .Message(13, Proto()
                       .Bytes(5, "apps/v1")
                       .Bytes(1, "ReplicaSet")
                       .Bytes(3, v.app + "-7d9c8b6f5")
                       .Bytes(4, v.owner_uid)
                       .Varint(6, 1)
                       .Varint(7, 1))
      .Message(17, Proto()
                       .Bytes(1, "kube-controller-manager")
                       .Bytes(2, "Update")
                       .Bytes(3, "v1")
                       .Message(4, time(kCreated))
                       .Bytes(6, "FieldsV1")
                       .Message(7, fields_v1(R"({"f:metadata":{"f:generateName":{},"f:labels":)"
                                             R"({".":{},"f:app":{}},"f:ownerReferences":)"
                                             R"({".":{}}},"f:spec":{"f:containers":)"
                                             R"({"k:{\"name\":\"server\"}":{".":{}}},)"
                                             R"("f:dnsPolicy":{},"f:restartPolicy":{}}})")))
      .Message(17, Proto()
                       .Bytes(1, "kubelet")
                       .Bytes(2, "Update")
                       .Bytes(3, "v1")
                       .Message(4, time(kCreated + 4))
                       .Bytes(6, "FieldsV1")
                       .Message(7, fields_v1(R"({"f:status":{"f:conditions":{},)"
                                             R"("f:containerStatuses":{},"f:hostIP":{},)"
                                             R"("f:phase":{},"f:podIP":{},"f:startTime":{}}})"))
                       .Bytes(8, "status"));

  const auto lifecycle_fields = [](Proto& container) {
    container.Bytes(13, "/dev/termination-log").Bytes(20, "File").Bytes(14, "IfNotPresent");
  };
  Proto server;
  server.Bytes(1, "server")
      .Bytes(2, v.image)
      .Message(6, Proto().Bytes(1, "http").Varint(3, 8080).Bytes(4, "TCP"))
      .Message(
          7, Proto()
                 .Bytes(1, "POD_NAME")
                 .Message(3, Proto().Message(1, Proto().Bytes(1, "v1").Bytes(2, "metadata.name"))))
      .Message(7, Proto().Bytes(1, "LOG_LEVEL").Bytes(2, "info"))
      .Message(8, Proto()
                      .QuantityEntry(1, "cpu", "1")
                      .QuantityEntry(1, "memory", "512Mi")
                      .QuantityEntry(2, "cpu", "250m")
                      .QuantityEntry(2, "memory", "256Mi"))
      .Message(9, Proto()
                      .Bytes(1, v.volume)
                      .Varint(2, 1)
                      .Bytes(3, "/var/run/secrets/kubernetes.io/serviceaccount"))
      .Message(11, Proto()
                       .Message(1, Proto().Message(2, Proto()
                                                          .Bytes(1, "/healthz")
                                                          .Message(2, int_or_string(8080))
                                                          .Bytes(4, "HTTP")))
                       .Varint(3, 1)
                       .Varint(4, 10)
                       .Varint(5, 1)
                       .Varint(6, 3));
  lifecycle_fields(server);
  Proto shipper;
  shipper.Bytes(1, "log-shipper")
      .Bytes(2, "registry.example/infra/shipper:2.3")
      .Message(8, Proto().QuantityEntry(2, "cpu", "50m").QuantityEntry(2, "memory", "64Mi"));
  lifecycle_fields(shipper);

  Proto spec;
  spec.Message(
          1,
          Proto()
              .Bytes(1, v.volume)
              .Message(
                  2,
                  Proto().Message(
                      26,
                      Proto()
                          .Message(1, Proto().Message(4, Proto().Varint(2, 3607).Bytes(3, "token")))
                          .Message(
                              1,
                              Proto().Message(
                                  3,
                                  Proto()
                                      .Message(1, Proto().Bytes(1, "kube-root-ca.crt"))
                                      .Message(2, Proto().Bytes(1, "ca.crt").Bytes(2, "ca.crt"))))
                          .Varint(2, 420))))
      .Message(2, server)
      .Message(2, shipper)
      .Bytes(3, "Always")
      .Varint(4, 30)
      .Bytes(6, "ClusterFirst")
      .Bytes(8, "default")
      .Bytes(9, "default")
      .Bytes(10, v.node)
      .Message(14, Proto())
      .Bytes(19, "berth-scheduler");
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    spec.Message(22, Proto().Bytes(1, key).Bytes(2, "Exists").Bytes(4, "NoExecute").Varint(5, 300));
  }
  spec.Varint(25, 0).Varint(30, 1).Bytes(31, "PreemptLowerPriority");

  Proto status;
  status.Bytes(1, "Running");
  for (const char* type : kConditionTypes) {
    status.Message(2, Proto().Bytes(1, type).Bytes(2, "True").Message(4, time(kCreated)));
  }
  status.Bytes(5, v.host_ip)
      .Message(16, Proto().Bytes(1, v.host_ip))
      .Bytes(6, v.pod_ip)
      .Message(12, Proto().Bytes(1, v.pod_ip))
      .Message(7, time(kCreated));
  for (const char* c : {"server", "log-shipper"}) {
    status.Message(8, Proto()
                          .Bytes(1, c)
                          .Message(2, Proto().Message(2, Proto().Message(1, time(kCreated + 3))))
                          .Message(3, Proto())
                          .Varint(4, 1)
                          .Varint(5, 0)
                          .Bytes(6, "registry.example/team/" + v.app)
                          .Bytes(7, v.image_id)
                          .Bytes(8, v.container_id)
                          .Varint(9, 1));
  }
  status.Bytes(9, "Burstable");
  return Proto().Message(1, meta).Message(2, spec).Message(3, status).str();
}

// The protobuf LIST body of `pods` realistic pods, enveloped as the apiserver sends it.
std::string ProtobufPodList(int pods) {
  testing::Proto list;
  list.Message(1, testing::Proto().Bytes(2, "200000"));
  for (int i = 0; i < pods; i++) list.Bytes(2, RealisticPodProto(i));
  return list.Envelope("PodList");
}

// A v1.Node message as a kubelet keeps it: labels, annotations, managedFields (skipped by both
// paths), one taint on every tenth node, capacity and allocatable, five conditions, addresses,
// nodeInfo and twenty images.
std::string RealisticNodeProto(int i) {
  using testing::Proto;
  const std::string name = "node-" + std::to_string(i);
  Proto meta;
  meta.Bytes(1, name)
      .Bytes(5, "3f6c1a52-9d0e-4f3a-8b1c-" + std::to_string(100000000000 + i))
      .Bytes(6, std::to_string(100000 + i))
      .Message(8, Proto().Varint(1, 1714557600))
      .Entry(11, "beta.kubernetes.io/arch", "amd64")
      .Entry(11, "beta.kubernetes.io/os", "linux")
      .Entry(11, "kubernetes.io/arch", "amd64")
      .Entry(11, "kubernetes.io/hostname", name)
      .Entry(11, "kubernetes.io/os", "linux")
      .Entry(11, "node.kubernetes.io/instance-type", "m5.2xlarge")
      .Entry(11, "topology.kubernetes.io/region", "eu-west-1")
      .Entry(11, "topology.kubernetes.io/zone", std::string("eu-west-1") + "abc"[i % 3])
      .Entry(12, "node.alpha.kubernetes.io/ttl", "0")
      .Entry(12, "volumes.kubernetes.io/controller-managed-attach-detach", "true")
      .Message(17, Proto()
                       .Bytes(1, "kubelet")
                       .Bytes(2, "Update")
                       .Bytes(3, "v1")
                       .Bytes(7, "FieldsV1")
                       .Message(6, Proto().Bytes(1, std::string(600, 'f'))));
  Proto spec;
  spec.Bytes(1, "10.244." + std::to_string(i % 250) + ".0/24")
      .Bytes(3, "aws:///eu-west-1a/i-0" + std::to_string(i));
  if (i % 10 == 0)
    spec.Message(5, Proto().Bytes(1, "dedicated").Bytes(2, "batch").Bytes(3, "NoSchedule"));
  Proto status;
  for (uint32_t field : {1u, 2u}) {
    status.QuantityEntry(field, "cpu", field == 1 ? "8" : "7910m")
        .QuantityEntry(field, "ephemeral-storage", "104845292Ki")
        .QuantityEntry(field, "hugepages-1Gi", "0")
        .QuantityEntry(field, "hugepages-2Mi", "0")
        .QuantityEntry(field, "memory", field == 1 ? "32386524Ki" : "31369692Ki")
        .QuantityEntry(field, "pods", "110");
  }
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    const bool ready = std::string_view(type) == "Ready";
    status.Message(4, Proto()
                          .Bytes(1, type)
                          .Bytes(2, ready ? "True" : "False")
                          .Message(3, Proto().Varint(1, 1714560000))
                          .Message(4, Proto().Varint(1, 1714557600))
                          .Bytes(5, ready ? "KubeletReady" : "KubeletHasSufficientMemory")
                          .Bytes(6, ready ? "kubelet is posting ready status"
                                          : "kubelet has sufficient memory available"));
  }
  status.Message(5, Proto().Bytes(1, "InternalIP").Bytes(2, "10.0.3." + std::to_string(i % 250)))
      .Message(5, Proto().Bytes(1, "Hostname").Bytes(2, name))
      .Message(6, Proto().Message(1, Proto().Varint(1, 10250)))
      .Message(7, Proto()
                      .Bytes(1, "ec2d1a3f0b6e4c2a9e1f3b5d7c9a1e3f")
                      .Bytes(2, "ec2d1a3f-0b6e-4c2a-9e1f-3b5d7c9a1e3f")
                      .Bytes(3, "c0ffee00-1234-5678-9abc-def012345678")
                      .Bytes(4, "6.1.0-18-cloud-amd64")
                      .Bytes(5, "Debian GNU/Linux 12 (bookworm)")
                      .Bytes(6, "containerd://1.7.13")
                      .Bytes(7, "v1.37.2")
                      .Bytes(8, "v1.37.2")
                      .Bytes(9, "linux")
                      .Bytes(10, "amd64"));
  for (int image = 0; image < 20; image++) {
    const std::string repository = "registry.example/team-" + std::to_string(image) + "/service";
    status.Message(8, Proto()
                          .Bytes(1, repository + "@sha256:" + std::string(64, "abcdef"[image % 6]))
                          .Bytes(1, repository + ":v" + std::to_string(image))
                          .Varint(2, 20000000 + 1000003 * static_cast<uint64_t>(image)));
  }
  return Proto().Message(1, meta).Message(2, spec).Message(3, status).str();
}

// The protobuf LIST body of `nodes` realistic nodes, enveloped as the apiserver sends it.
std::string ProtobufNodeList(int nodes) {
  testing::Proto list;
  list.Message(1, testing::Proto().Bytes(2, "200000"));
  for (int i = 0; i < nodes; i++) list.Bytes(2, RealisticNodeProto(i));
  return list.Envelope("NodeList");
}

// What scheduling reads of a pod, as text: two encodings of the same pod must give the same.
std::string Summary(const api::Pod& pod) {
  std::string out;
  for (const std::string& part :
       {pod.meta.Key(), pod.meta.uid, pod.meta.resource_version, pod.meta.creation_timestamp,
        pod.spec.node_name, pod.spec.scheduler_name, std::to_string(pod.requests.milli_cpu),
        std::to_string(pod.requests.memory), std::to_string(pod.non_zero_milli_cpu),
        pod.status.phase}) {
    out.append(part).append(" ");
  }
  const auto add = [&out](std::string_view a, std::string_view separator, std::string_view b) {
    out.append(" ").append(a).append(separator).append(b);
  };
  for (const auto& [key, value] : pod.meta.labels) add(key, "=", value);
  for (const auto& owner : pod.meta.owner_references) add(owner.kind, ":", owner.uid);
  for (const auto& c : pod.spec.containers) add(c.name, ":", c.image);
  for (const auto& t : pod.spec.tolerations) add(t.key, "", "");
  for (const auto& volume : pod.spec.volumes) add(volume.name, ":", volume.source);
  for (const auto& c : pod.status.conditions) add(c.type, "=", c.status);
  return out;
}

// Serves one pre-built LIST body; watches block until stopped.
class OneListClient : public testing::UnusedClient {
 public:
  OneListClient(std::string body, std::string content_type)
      : body_(std::move(body)), content_type_(std::move(content_type)) {}
  client::ListPage ListPageRaw(const std::string&, const client::ListOptions&,
                               const std::string&) override {
    return {body_, content_type_};
  }
  std::unique_ptr<client::WatchStream> Watch(const std::string&,
                                             const client::WatchOptions&) override {
    return std::make_unique<Idle>();
  }

 private:
  class Idle : public client::WatchStream {
   public:
    bool Next(client::WatchEvent*) override {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopped_; });
      return false;
    }
    void Stop() override {
      std::lock_guard lock(mu_);
      stopped_ = true;
      cv_.notify_all();
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopped_ = false;
  };
  std::string body_;
  std::string content_type_;
};

// Accepts every SAX event, skips nothing and keeps nothing: what tokenizing the whole body costs.
struct TokenizeOnly {
  bool SkipNextValue() { return false; }
  using json = nlohmann::json;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(std::string&) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
};

double Seconds(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return 0;
}

long PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return 0;
}

size_t HeapInUse() { return mallinfo2().uordblks; }

struct Measured {
  double best = 0;
  double median = 0;
  size_t heap_per_pod = 0;
  long rss_per_pod = 0;
};

// Lists `body` through a real informer into its store, `repeat` times.
Measured MeasureInformer(const std::string& body, const std::string& content_type, int pods,
                         int repeat) {
  std::vector<double> seconds;
  Measured m;
  for (int r = 0; r < repeat; r++) {
    auto fake = std::make_shared<OneListClient>(body, content_type);
    informer::ReflectorOptions options;
    options.resource = client::PodsResource();
    options.prefer_protobuf = content_type == api::kProtobufMediaType;
    malloc_trim(0);
    size_t heap_before = HeapInUse();
    long rss_before = RssBytes();
    auto start = std::chrono::steady_clock::now();
    // Built as SharedInformerFactory builds berth-scheduler's pod informer.
    auto informer = std::make_unique<informer::Informer<api::Pod>>(fake, options, api::DecodePod,
                                                                   api::TryDecodeProtobufPod);
    informer->Start();
    informer->WaitForSync(std::chrono::minutes(5));
    auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    informer->Stop();
    if (informer->store().Size() != static_cast<size_t>(pods)) {
      std::fprintf(stderr, "decode_bench: %s: store holds %zu pods, expected %d\n",
                   content_type.c_str(), informer->store().Size(), pods);
      std::exit(1);
    }
    malloc_trim(0);
    m.heap_per_pod = (HeapInUse() - heap_before) / pods;
    m.rss_per_pod = (RssBytes() - rss_before) / pods;
    seconds.push_back(took);
  }
  std::sort(seconds.begin(), seconds.end());
  m.best = seconds.front();
  m.median = seconds[seconds.size() / 2];
  return m;
}

// Both encodings of the first pods must decode to the same pod, through protobuf's general and
// direct paths alike, or the protobuf figures would measure something else than the JSON ones.
bool EncodingsAgree(int pods) {
  for (int i = 0; i < std::min(pods, 100); i++) {
    const std::string message = RealisticPodProto(i);
    const std::string from_json = Summary(api::DecodePod(RealisticPod(i)));
    const std::string from_protobuf = Summary(
        api::DecodePod(api::DecodeProtobufObject(testing::Proto().Raw(message).Envelope("Pod"))));
    const std::optional<api::Pod> direct = api::TryDecodeProtobufPod(message);
    const std::string from_direct = direct ? Summary(*direct) : "(left to the general path)";
    if (from_json != from_protobuf || from_json != from_direct) {
      std::fprintf(stderr,
                   "decode_bench: pod %d decodes differently\n  json:     %s\n  protobuf: %s\n"
                   "  direct:   %s\n",
                   i, from_json.c_str(), from_protobuf.c_str(), from_direct.c_str());
      return false;
    }
  }
  return true;
}

// A NodeList in protobuf, the first list berth-scheduler waits for at start: its items through
// the general path (JSON trees, then DecodeNode) against straight into api::Node, best of
// `repeat` each. Fails when the two paths give different nodes.
bool MeasureNodeList(int nodes, int repeat, bool json) {
  const std::string body = ProtobufNodeList(nodes);
  size_t decoded = 0;
  const auto general_pass = [&] {
    api::ProtobufListParser parser([&](nlohmann::json& item) {
      decoded += api::DecodeNode(item).status.allocatable.pods > 0 ? 1 : 0;
    });
    parser.Feed(body);
    parser.Finish();
  };
  const auto direct_pass = [&] {
    api::ProtobufListParser parser([](nlohmann::json&) {},
                                   [&](std::string_view message) {
                                     std::optional<api::Node> node =
                                         api::TryDecodeProtobufNode(message);
                                     if (node) decoded += node->status.allocatable.pods > 0 ? 1 : 0;
                                     return node.has_value();
                                   });
    parser.Feed(body);
    parser.Finish();
  };
  for (int i = 0; i < std::min(nodes, 100); i++) {
    const std::string message = RealisticNodeProto(i);
    const std::optional<api::Node> direct = api::TryDecodeProtobufNode(message);
    if (!direct || *direct != api::DecodeNode(api::DecodeProtobufObject(
                                  testing::Proto().Raw(message).Envelope("Node")))) {
      std::fprintf(stderr, "decode_bench: node %d decodes differently on the two paths\n", i);
      return false;
    }
  }
  double general = 0;
  double direct = 0;
  for (int r = 0; r < repeat; r++) {
    const double g = Seconds(general_pass);
    const double d = Seconds(direct_pass);
    general = r == 0 ? g : std::min(general, g);
    direct = r == 0 ? d : std::min(direct, d);
  }
  if (decoded != 2 * static_cast<size_t>(nodes) * static_cast<size_t>(repeat)) {
    std::fprintf(stderr, "decode_bench: %zu nodes decoded, expected %d per pass\n", decoded, nodes);
    return false;
  }
  if (json) {
    std::printf(
        "{\"encoding\":\"protobuf\",\"nodes\":%d,\"list_bytes\":%zu,"
        "\"general_seconds\":%.4f,\"direct_seconds\":%.4f}\n",
        nodes, body.size(), general, direct);
  } else {
    std::printf(
        "decode benchmark: LIST of %d nodes in protobuf, %.1f MB (%zu bytes/node), best of %d\n",
        nodes, static_cast<double>(body.size()) / 1e6, body.size() / nodes, repeat);
    std::printf(
        "  through JSON trees and DecodeNode %.4f s; berth's path, straight into api::Node %.4f s "
        "(%.1fx)\n",
        general, direct, direct > 0 ? general / direct : 0.0);
  }
  return true;
}

}  // namespace
}  // namespace berth::perf

int main(int argc, char** argv) {
  using namespace berth;
  int pods = 10000;
  int nodes = 1000;
  int repeat = 5;
  bool json = false;
  std::string encoding = "both";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--pods") && i + 1 < argc) {
      pods = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--nodes") && i + 1 < argc) {
      nodes = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--encoding") && i + 1 < argc) {
      encoding = argv[++i];
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      encoding = "";
      break;
    }
  }
  if (pods <= 0 || nodes < 0 || repeat <= 0 ||
      (encoding != "json" && encoding != "protobuf" && encoding != "both")) {
    std::fprintf(stderr,
                 "usage: %s [--pods N>0] [--nodes M>=0] [--repeat R>0] "
                 "[--encoding json|protobuf|both] [--json]\n",
                 argv[0]);
    return 2;
  }
  if (!perf::EncodingsAgree(pods)) return 1;

  for (const std::string name : {"json", "protobuf"}) {
    if (encoding != "both" && encoding != name) continue;
    const bool protobuf = name == "protobuf";
    std::string body;
    if (protobuf) {
      body = perf::ProtobufPodList(pods);
    } else {
      nlohmann::json list = {{"kind", "PodList"},
                             {"apiVersion", "v1"},
                             {"metadata", {{"resourceVersion", "200000"}}},
                             {"items", nlohmann::json::array()}};
      for (int i = 0; i < pods; i++) list["items"].push_back(perf::RealisticPod(i));
      body = list.dump();
    }
    malloc_trim(0);
    const perf::Measured m = perf::MeasureInformer(
        body, std::string(protobuf ? api::kProtobufMediaType : "application/json"), pods, repeat);

    // Where the time goes, one pass each: reading the body into the kept items' JSON trees
    // (subtrees scheduling never reads skipped), then decoding those into api::Pod. For JSON,
    // tokenizing every byte is a reference point.
    const auto parse = [&](const std::function<void(nlohmann::json&)>& on_item) {
      if (protobuf) {
        api::ProtobufListParser parser(on_item);
        parser.Feed(body);
        parser.Finish();
      } else {
        api::ParseList(body, on_item);
      }
    };
    const double tokenize = protobuf ? 0 : perf::Seconds([&] {
      perf::TokenizeOnly sax;
      api::JsonSaxParser(body, "list").Parse(&sax);
    });
    const double trees = perf::Seconds([&] { parse([](nlohmann::json&) {}); });
    const double decoded =
        perf::Seconds([&] { parse([](nlohmann::json& item) { api::DecodePod(item); }); });
    // What berth-scheduler does with a protobuf list: items straight into api::Pod.
    const double direct = !protobuf ? 0 : perf::Seconds([&] {
      api::ProtobufListParser parser(
          [](nlohmann::json&) {},
          [](std::string_view message) { return api::TryDecodeProtobufPod(message).has_value(); });
      parser.Feed(body);
      parser.Finish();
    });
    const double mb = static_cast<double>(body.size()) / 1e6;
    if (json) {
      std::printf(
          "{\"encoding\":\"%s\",\"pods\":%d,\"list_bytes\":%zu,\"best_seconds\":%.4f,"
          "\"median_seconds\":%.4f,\"mb_per_s\":%.1f,\"pods_per_s\":%.0f,"
          "\"heap_bytes_per_pod\":%zu,\"rss_bytes_per_pod\":%ld,\"peak_rss_bytes\":%ld,"
          "\"tokenize_seconds\":%.4f,\"item_trees_seconds\":%.4f,\"decode_seconds\":%.4f,"
          "\"direct_decode_seconds\":%.4f}\n",
          name.c_str(), pods, body.size(), m.best, m.median, mb / m.median, pods / m.median,
          m.heap_per_pod, m.rss_per_pod, perf::PeakRssBytes(), tokenize, trees, decoded - trees,
          direct);
      continue;
    }
    std::printf("decode benchmark: LIST of %d pods in %s, %.1f MB (%zu bytes/pod), %d runs\n", pods,
                name.c_str(), mb, body.size() / pods, repeat);
    std::printf("  median %.3f s  best %.3f s\n", m.median, m.best);
    std::printf("  throughput  %.1f MB/s  %.0f pods/s (median)\n", mb / m.median, pods / m.median);
    std::printf("  held per stored pod: %zu bytes heap, %ld bytes RSS\n", m.heap_per_pod,
                m.rss_per_pod);
    std::printf("  peak RSS so far %.1f MiB (includes the body)\n",
                static_cast<double>(perf::PeakRssBytes()) / 1048576.0);
    std::printf(
        "  where the time goes (one pass each): read the body into the kept item trees %.3f s",
        trees);
    if (!protobuf) std::printf(" (tokenizing every byte alone: %.3f s)", tokenize);
    std::printf("; decode into api::Pod %.3f s; the rest is the store and handlers\n",
                decoded - trees);
    if (protobuf) {
      std::printf("  berth's path, protobuf items straight into api::Pod (no trees): %.3f s\n",
                  direct);
    }
  }
  if (nodes > 0 && !perf::MeasureNodeList(nodes, repeat, json)) return 1;
  return 0;
}
