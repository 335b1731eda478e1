#include "e2e/pods.h"

namespace berth::e2e {

void CreatePods(client::Client& client, const std::string& ns, const std::string& prefix, int count,
                const std::string& scheduler_name, const testing::TestNodes& nodes) {
  testing::CreateMany(client, "/api/v1/namespaces/" + ns + "/pods", count, [&](int i) {
    auto pod = testing::PodManifest(ns, prefix + "-" + std::to_string(i), scheduler_name);
    pod["spec"]["nodeSelector"]["berth-it"] = nodes.id();
    return pod;
  });
}

std::map<std::string, std::string> PodNodes(client::Client& client, const std::string& ns) {
  std::map<std::string, std::string> out;
  auto list = client.Get("/api/v1/namespaces/" + ns + "/pods");
  for (const auto& item : list["items"]) {
    out[item["metadata"]["name"].get<std::string>()] =
        item["spec"].value("nodeName", std::string());
  }
  return out;
}

bool AllBound(client::Client& client, const std::string& ns, const std::string& prefix, int count) {
  int bound = 0;
  for (const auto& [name, node] : PodNodes(client, ns)) {
    if (name.rfind(prefix + "-", 0) != 0) continue;
    if (node.empty()) return false;
    bound++;
  }
  return bound == count;
}

std::map<std::string, int> ScheduledEvents(client::Client& client, const std::string& ns) {
  std::map<std::string, int> out;
  auto list = client.Get("/apis/events.k8s.io/v1/namespaces/" + ns + "/events");
  for (const auto& e : list["items"]) {
    if (e.value("reason", "") != "Scheduled") continue;
    int count = 1;
    if (e.contains("series") && e["series"].is_object()) count = e["series"].value("count", 1);
    out[e["regarding"]["name"].get<std::string>()] += count;
  }
  return out;
}

}  // namespace berth::e2e
