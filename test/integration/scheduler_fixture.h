#ifndef BERTH_TEST_INTEGRATION_SCHEDULER_FIXTURE_H_
#define BERTH_TEST_INTEGRATION_SCHEDULER_FIXTURE_H_

// The fixture of the tests that run the real berth-scheduler binary against the local control
// plane: a namespace and nodes of the test's own, the scheduler as a child process, and reads of
// where pods went and why the others wait.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth::testing {

class SchedulerIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ns_ = std::make_unique<TestNamespace>(client_, "sched");
    nodes_ = std::make_unique<TestNodes>(client_);
  }
  void TearDown() override {
    if (scheduler_ && scheduler_->Running()) scheduler_->Stop(SIGTERM, std::chrono::seconds(10));
    if (HasFailure() && scheduler_) {
      std::cerr << "---- berth-scheduler log ----\n" << scheduler_->Log() << "\n";
    }
  }

  // `extra_args` are added to the command line; the serving port is serving_url_.
  void StartScheduler(const std::string& config_yaml = "",
                      const std::vector<std::string>& extra_args = {}) {
    std::string config = config_yaml.empty() ? "apiVersion: kubescheduler.config.k8s.io/v1\n"
                                               "kind: KubeSchedulerConfiguration\n"
                                               "leaderElection:\n  leaderElect: false\n"
                                             : config_yaml;
    auto config_path = testing::WriteTempFile("config.yaml", config);
    const std::string port = std::to_string(testing::FreePort());
    serving_url_ = "https://127.0.0.1:" + port;
    std::vector<std::string> argv = {testing::BinaryPath("berth-scheduler"),
                                     "--kubeconfig",
                                     testing::ClusterDir() + "/kubeconfig",
                                     "--config",
                                     config_path,
                                     "--v",
                                     "2",
                                     "--bind-address",
                                     "127.0.0.1",
                                     "--secure-port",
                                     port};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    scheduler_ = std::make_unique<testing::ChildProcess>();
    scheduler_->Start(argv, config_path + ".log");
  }

  nlohmann::json Pod(const std::string& name, const std::string& cpu = "100m",
                     const std::string& scheduler = "berth-scheduler") {
    auto pod = PodManifest(ns_->name(), name, scheduler, cpu, "64Mi");
    pod["spec"]["nodeSelector"] = {{"berth-it", nodes_->id()}};
    return pod;
  }

  std::string PodsPath() const { return client::PodsResource().Path(ns_->name()); }

  // name -> nodeName ("" when unbound) of every pod in the namespace.
  std::map<std::string, std::string> Placement() {
    std::map<std::string, std::string> out;
    auto list = client_->Get(PodsPath());
    for (const auto& item : list["items"]) {
      out[item["metadata"]["name"].get<std::string>()] = item["spec"].value("nodeName", "");
    }
    return out;
  }

  std::string NodeOf(const std::string& pod) {
    return client_->Get(PodsPath() + "/" + pod)["spec"].value("nodeName", "");
  }

  bool WaitBound(const std::string& pod,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return Eventually([&] { return !NodeOf(pod).empty(); }, timeout);
  }

  // The message of the pod's PodScheduled=False condition once it contains `part`, or the last
  // message seen ("" when none) after `timeout`.
  std::string UnschedulableMessage(const std::string& pod, const std::string& part,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::string message;
    Eventually(
        [&] {
          auto object = client_->Get(PodsPath() + "/" + pod);
          for (const auto& c : object["status"].value("conditions", nlohmann::json::array())) {
            if (c["type"] == "PodScheduled" && c["status"] == "False") {
              message = c.value("message", "");
            }
          }
          return message.find(part) != std::string::npos;
        },
        timeout);
    return message;
  }

  // Names of the pods labelled app=<app>, split into bound (pod -> node) and pending.
  std::map<std::string, std::string> BoundWithApp(const std::string& app,
                                                  std::vector<std::string>* pending = nullptr) {
    std::map<std::string, std::string> bound;
    auto list = client_->Get(PodsPath() + "?labelSelector=app%3D" + app);
    for (const auto& item : list["items"]) {
      std::string name = item["metadata"]["name"];
      std::string node = item["spec"].value("nodeName", "");
      if (!node.empty()) {
        bound[name] = node;
      } else if (pending != nullptr) {
        pending->push_back(name);
      }
    }
    return bound;
  }

  // A pod labelled app=<app>.
  nlohmann::json AppPod(const std::string& name, const std::string& app) {
    auto pod = Pod(name);
    pod["metadata"]["labels"]["app"] = app;
    return pod;
  }

  std::shared_ptr<client::Client> client_;
  std::unique_ptr<TestNamespace> ns_;
  std::unique_ptr<TestNodes> nodes_;
  std::unique_ptr<testing::ChildProcess> scheduler_;
  std::string serving_url_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_INTEGRATION_SCHEDULER_FIXTURE_H_
