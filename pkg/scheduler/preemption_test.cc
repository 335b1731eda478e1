// Preemption through the whole scheduler without an apiserver: the default profile's
// DefaultPreemption evicts through a client that feeds each deletion back as the pod informer
// would, and the preemptor is bound once its victim is gone.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"
#include "test/testing/unused_client.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using framework::Status;
using testing::NodeBuilder;
using testing::PodBuilder;

class Binder : public framework::BindPlugin {
 public:
  std::string_view Name() const override { return "Binder"; }
  Status Bind(framework::CycleState&, const api::Pod& pod, const std::string& node) override {
    std::lock_guard lock(mu_);
    bound_[pod.meta.name] = node;
    return {};
  }
  std::map<std::string, std::string> bound() {
    std::lock_guard lock(mu_);
    return bound_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> bound_;
};

// Deletes the pods it knows at once and reports the deletion to the scheduler.
class EvictingClient : public testing::UnusedClient {
 public:
  void Add(const api::PodPtr& pod) {
    std::lock_guard lock(mu_);
    pods_["/api/v1/namespaces/" + pod->meta.namespace_ + "/pods/" + pod->meta.name] = pod;
  }
  void Attach(Scheduler* scheduler) { scheduler_ = scheduler; }
  nlohmann::json Patch(const std::string& path, const nlohmann::json&, client::PatchType) override {
    std::lock_guard lock(mu_);
    calls_.push_back("PATCH " + path);
    return nlohmann::json::object();
  }
  void Delete(const std::string& path, const client::DeleteOptions&) override {
    api::PodPtr pod;
    {
      std::lock_guard lock(mu_);
      calls_.push_back("DELETE " + path);
      pod = pods_.at(path);
    }
    scheduler_->OnPodDelete(pod);
  }
  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  Scheduler* scheduler_ = nullptr;
  std::map<std::string, api::PodPtr> pods_;
  std::vector<std::string> calls_;
};

class RecordingStatusWriter : public PodStatusWriter {
 public:
  void SetUnschedulable(const api::Pod& pod, const std::string&, const std::string& message,
                        const std::optional<std::string>& nominated_node_name) override {
    std::lock_guard lock(mu_);
    messages_[pod.meta.name] = message;
    if (nominated_node_name) nominations_[pod.meta.name] = *nominated_node_name;
  }
  std::map<std::string, std::string> messages() {
    std::lock_guard lock(mu_);
    return messages_;
  }
  std::map<std::string, std::string> nominations() {
    std::lock_guard lock(mu_);
    return nominations_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> messages_;
  std::map<std::string, std::string> nominations_;
};

TEST(SchedulerPreemption, HigherPriorityPodEvictsOneVictimAndIsBoundOnItsNominatedNode) {
  auto binder = std::make_shared<Binder>();
  auto registry = plugins::registry::InTree();
  registry["Binder"] = [binder](const nlohmann::json&, framework::Handle&) { return binder; };
  config::Configuration cfg = config::DefaultConfiguration();
  cfg.profiles[0].plugins.bind.disabled.push_back({"*", 0});
  cfg.profiles[0].plugins.bind.enabled.push_back({"Binder", 0});
  auto client = std::make_shared<EvictingClient>();
  testing::FakeRecorder recorder;
  RecordingStatusWriter writer;
  SchedulerDeps deps;
  deps.client = client;
  deps.recorder = &recorder;
  deps.status_writer = &writer;
  Scheduler scheduler(cfg, registry, deps);
  client->Attach(&scheduler);

  scheduler.OnNodeAdd(NodeBuilder("n1").Capacity("2", "8Gi").Build());
  for (const char* name : {"low-1", "low-2"}) {
    auto pod = PodBuilder(name).Container("900m", "64Mi").Priority(1).Node("n1").Build();
    client->Add(pod);
    scheduler.OnPodAdd(pod);
  }
  scheduler.OnPodAdd(PodBuilder("high").Container("900m", "64Mi").Priority(10).Build());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (binder->bound().empty() && std::chrono::steady_clock::now() < deadline) {
    const auto pending = scheduler.queue().PendingPods();
    if (pending.active + pending.backoff > 0) {
      scheduler.ScheduleOne();
    } else {
      std::this_thread::sleep_for(1ms);
    }
  }

  EXPECT_EQ(binder->bound(), (std::map<std::string, std::string>{{"high", "n1"}}));
  EXPECT_EQ(client->calls(),
            (std::vector<std::string>{"PATCH /api/v1/namespaces/default/pods/low-2/status",
                                      "DELETE /api/v1/namespaces/default/pods/low-2"}));
  for (int i = 0; i < 200 && writer.messages().empty(); i++) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(writer.nominations(), (std::map<std::string, std::string>{{"high", "n1"}}));
  EXPECT_EQ(writer.messages()["high"],
            "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential "
            "placement for pod on node n1, preempting 1 victims");
}

}  // namespace
}  // namespace berth::scheduler
