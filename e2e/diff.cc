#include "e2e/diff.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "test/testing/cluster.h"
#include "test/testing/kube_scheduler.h"

namespace berth::e2e {

unsigned DiffSeed(unsigned seed, const std::string& what) {
  if (const char* s = std::getenv("BERTH_DIFF_SEED"); s != nullptr) seed = std::stoul(s);
  std::printf("%s: seed %u (BERTH_DIFF_SEED to replay)\n", what.c_str(), seed);
  return seed;
}

bool Settled(const nlohmann::json& pod) {
  if (!pod["spec"].value("nodeName", "").empty()) return true;
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return false;
  for (const auto& c : pod["status"]["conditions"]) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") return true;
  }
  return false;
}

std::string PodScheduledMessage(const nlohmann::json& pod) {
  std::string message = "(no PodScheduled condition)";
  if (pod.contains("status") && pod["status"].contains("conditions")) {
    for (const auto& c : pod["status"]["conditions"]) {
      if (c.value("type", "") == "PodScheduled") message = c.value("message", "");
    }
  }
  return message;
}

std::set<std::string> ForeignNodes(client::Client& client, const std::string& run) {
  std::set<std::string> out;
  const nlohmann::json list = client.Get("/api/v1/nodes");
  for (const auto& n : list["items"]) {
    const auto& labels = n["metadata"].value("labels", nlohmann::json::object());
    if (labels.value("berth-it", "") != run) out.insert(n["metadata"]["name"].get<std::string>());
  }
  return out;
}

void DeletePods(client::Client& client, const std::string& ns) {
  const std::string path = client::PodsResource().Path(ns);
  client.Delete(path + "?gracePeriodSeconds=0");
  ASSERT_TRUE(testing::Eventually([&] { return client.Get(path)["items"].empty(); },
                                  std::chrono::seconds(60)))
      << "the pods of " << ns << " were not deleted";
}

void KeepLogsIfFailed(const std::string& dir, bool failed, const std::string& what) {
  if (failed) {
    std::printf("%s: kube-scheduler's configuration and log are kept in %s\n", what.c_str(),
                dir.c_str());
  } else {
    std::filesystem::remove_all(dir);
  }
}

std::string KubeSchedulerDiffConfig(const std::string& scheduler_name) {
  return testing::KubeSchedulerConfigHead(testing::ClusterDir() + "/kubeconfig", 200) +
         "profiles:\n- schedulerName: " + scheduler_name + "\n";
}

}  // namespace berth::e2e
