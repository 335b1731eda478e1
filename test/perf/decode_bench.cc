// Decode benchmark: one LIST response of N realistic pods (JSON shaped as kube-apiserver serves
// it, managedFields and status included) fed through the real informer path (reflector list ->
// JSON parse -> api::DecodePod -> store), reporting MB/s, pods/s and bytes held per stored pod.
//
//   _output/bin/decode_bench [--pods N] [--repeat R] [--json]

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/json_sax.h"
#include "pkg/api/list_parser.h"
#include "pkg/informer/informer.h"
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

// A pod as a Deployment's ReplicaSet creates it and the apiserver serves it after the kubelet
// reported status: two containers, probes, env, volume mounts, the default tolerations,
// managedFields from two managers.
nlohmann::json RealisticPod(int i) {
  const std::string app = "app-" + std::to_string(i % 50);
  const std::string name = app + "-7d9c8b6f5-" + Hex(i, 5);
  const std::string node = "node-" + std::to_string(i % 5000);
  nlohmann::json container = {
      {"name", "server"},
      {"image", "registry.example/team/" + app + ":v1." + std::to_string(i % 7)},
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
       {{{"name", "kube-api-access-" + Hex(i, 5)},
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
  for (const char* type :
       {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
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
                        {"imageID", "registry.example/team/" + app + "@sha256:" + Hex(i, 16) +
                                        Hex(i * 7, 16) + Hex(i * 13, 16) + Hex(i * 17, 16)},
                        {"containerID", "containerd://" + Hex(i, 16) + Hex(i * 3, 16)},
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
            {"namespace", "team-" + std::to_string(i % 20)},
            {"uid", Uid(i)},
            {"resourceVersion", std::to_string(100000 + i)},
            {"creationTimestamp", "2026-11-20T10:11:12Z"},
            {"labels",
             {{"app", app}, {"pod-template-hash", "7d9c8b6f5"}, {"tier", i % 3 ? "web" : "batch"}}},
            {"annotations", {{"kubectl.kubernetes.io/restartedAt", "2026-11-19T08:00:00Z"}}},
            {"ownerReferences",
             {{{"apiVersion", "apps/v1"},
               {"kind", "ReplicaSet"},
               {"name", app + "-7d9c8b6f5"},
               {"uid", Uid(i / 10)},
               {"controller", true},
               {"blockOwnerDeletion", true}}}},
            {"managedFields", managed}}},
          {"spec",
           {{"volumes",
             {{{"name", "kube-api-access-" + Hex(i, 5)},
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
            {"hostIP", "10.1." + std::to_string(i % 250) + ".1"},
            {"hostIPs", {{{"ip", "10.1." + std::to_string(i % 250) + ".1"}}}},
            {"podIP", "10.244." + std::to_string(i % 250) + "." + std::to_string(i % 200 + 2)},
            {"podIPs",
             {{{"ip", "10.244." + std::to_string(i % 250) + "." + std::to_string(i % 200 + 2)}}}},
            {"startTime", "2026-11-20T10:11:12Z"},
            {"containerStatuses", statuses},
            {"qosClass", "Burstable"}}}};
}

// Serves one pre-built LIST body; watches block until stopped.
class OneListClient : public testing::UnusedClient {
 public:
  explicit OneListClient(std::string body) : body_(std::move(body)) {}
  client::ListPage ListPageRaw(const std::string&, const client::ListOptions&,
                               const std::string&) override {
    return {body_, "application/json"};
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

}  // namespace
}  // namespace berth::perf

int main(int argc, char** argv) {
  using namespace berth;
  int pods = 10000;
  int repeat = 5;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--pods") && i + 1 < argc) {
      pods = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(stderr, "usage: %s [--pods N] [--repeat R] [--json]\n", argv[0]);
      return 2;
    }
  }

  std::string body;
  {
    nlohmann::json list = {{"kind", "PodList"},
                           {"apiVersion", "v1"},
                           {"metadata", {{"resourceVersion", "200000"}}},
                           {"items", nlohmann::json::array()}};
    for (int i = 0; i < pods; i++) list["items"].push_back(perf::RealisticPod(i));
    body = list.dump();
  }
  malloc_trim(0);

  std::vector<double> seconds;
  size_t heap_per_pod = 0;
  long rss_per_pod = 0;
  for (int r = 0; r < repeat; r++) {
    auto fake = std::make_shared<perf::OneListClient>(body);
    informer::ReflectorOptions options;
    options.resource = client::PodsResource();
    malloc_trim(0);
    size_t heap_before = perf::HeapInUse();
    long rss_before = perf::RssBytes();
    auto start = std::chrono::steady_clock::now();
    auto informer = std::make_unique<informer::Informer<api::Pod>>(fake, options, api::DecodePod);
    informer->Start();
    informer->WaitForSync(std::chrono::minutes(5));
    auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    informer->Stop();
    if (informer->store().Size() != static_cast<size_t>(pods)) {
      std::fprintf(stderr, "store holds %zu pods, expected %d\n", informer->store().Size(), pods);
      return 1;
    }
    malloc_trim(0);
    heap_per_pod = (perf::HeapInUse() - heap_before) / pods;
    rss_per_pod = (perf::RssBytes() - rss_before) / pods;
    seconds.push_back(took);
  }
  std::sort(seconds.begin(), seconds.end());
  // Where the time goes: tokenizing every byte (a reference point: the list parser skips the
  // subtrees it drops), parsing and building the kept items' trees, then decoding.
  const double tokenize = perf::Seconds([&] {
    perf::TokenizeOnly sax;
    api::JsonSaxParser(body, "list").Parse(&sax);
  });
  const double trees = perf::Seconds([&] { api::ParseList(body, [](nlohmann::json&) {}); });
  const double decoded = perf::Seconds(
      [&] { api::ParseList(body, [](nlohmann::json& item) { api::DecodePod(item); }); });
  double best = seconds.front();
  double median = seconds[seconds.size() / 2];
  double mb = body.size() / 1e6;
  if (json) {
    std::printf(
        "{\"pods\":%d,\"list_bytes\":%zu,\"best_seconds\":%.4f,\"median_seconds\":%.4f,"
        "\"mb_per_s\":%.1f,\"pods_per_s\":%.0f,\"heap_bytes_per_pod\":%zu,"
        "\"rss_bytes_per_pod\":%ld,\"peak_rss_bytes\":%ld,\"tokenize_seconds\":%.4f,"
        "\"item_trees_seconds\":%.4f,\"decode_seconds\":%.4f}\n",
        pods, body.size(), best, median, mb / median, pods / median, heap_per_pod, rss_per_pod,
        perf::PeakRssBytes(), tokenize, trees, decoded - trees);
  } else {
    std::printf("decode benchmark: LIST of %d pods, %.1f MB of JSON (%zu bytes/pod), %d runs\n",
                pods, mb, body.size() / pods, repeat);
    std::printf("  median %.3f s  best %.3f s\n", median, best);
    std::printf("  throughput  %.1f MB/s  %.0f pods/s (median)\n", mb / median, pods / median);
    std::printf("  held per stored pod: %zu bytes heap, %ld bytes RSS\n", heap_per_pod,
                rss_per_pod);
    std::printf("  peak RSS %.1f MiB (includes the JSON body)\n", perf::PeakRssBytes() / 1048576.0);
    std::printf(
        "  where the time goes (one pass each): parse, skipping unread subtrees, and build the "
        "kept item trees %.3f s (tokenizing every byte alone: %.3f s); decode into api::Pod "
        "%.3f s; the rest is the store and handlers\n",
        trees, tokenize, decoded - trees);
  }
  return 0;
}
