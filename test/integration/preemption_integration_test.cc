// DefaultPreemption in the real berth-scheduler binary against the local control plane: a pod of
// a higher PriorityClass that fits nowhere evicts the fewest lower-priority pods, is nominated to
// their node and bound there; what upstream says when it may not preempt; budgets and nominations
// honoured; and, run in process, a preemption whose victims' names were taken by new pods. The
// control plane runs no kubelet: a deleted pod with a grace period stays Terminating until a test
// deletes it with gracePeriodSeconds=0, which the victims without one need not.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/client/client.h"
#include "pkg/plugins/defaultpreemption/executor.h"
#include "test/integration/scheduler_fixture.h"
#include "test/testing/cluster.h"
#include "test/testing/fake_handle.h"

namespace berth {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::Eventually;
using testing::SchedulerIntegration;

// The nominatedNodeName values a pod's status went through: the apiserver clears the field when
// the pod is bound, which may follow the nomination within milliseconds.
class NominationWatch {
 public:
  NominationWatch(client::Client& client, const std::string& ns, const std::string& pod) {
    client::WatchOptions options;
    options.field_selector = "metadata.name=" + pod;
    stream_ = client.Watch(client::PodsResource().Path(ns), options);
    thread_ = std::thread([this] {
      client::WatchEvent event;
      try {
        while (stream_->Next(&event)) {
          const std::string node =
              event.object.value("status", json::object()).value("nominatedNodeName", "");
          std::lock_guard lock(mu_);
          if (!node.empty()) seen_.push_back(node);
        }
      } catch (const std::exception&) {
      }
    });
  }
  ~NominationWatch() {
    stream_->Stop();
    thread_.join();
  }
  std::vector<std::string> Seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::unique_ptr<client::WatchStream> stream_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> seen_;
};

class PreemptionIntegration : public SchedulerIntegration {
 protected:
  void SetUp() override {
    SchedulerIntegration::SetUp();
    classes_ = std::make_unique<testing::PriorityClasses>(client_);
  }

  // A pod of `priority_class`, already bound to `node` when one is given.
  json ClassPod(const std::string& name, const std::string& cpu, const std::string& priority_class,
                const std::string& node = "", int grace_seconds = 0) {
    json pod = Pod(name, cpu);
    pod["spec"]["priorityClassName"] = priority_class;
    pod["spec"]["terminationGracePeriodSeconds"] = grace_seconds;
    if (!node.empty()) pod["spec"]["nodeName"] = node;
    return pod;
  }

  bool Exists(const std::string& pod) {
    for (const auto& [name, node] : Placement()) {
      if (name == pod) return true;
    }
    return false;
  }

  json Get(const std::string& pod) { return client_->Get(PodsPath() + "/" + pod); }

  std::unique_ptr<testing::PriorityClasses> classes_;
};

TEST_F(PreemptionIntegration, OneVictimIsEvictedAndThePreemptorNominatedThenBoundThere) {
  const std::string node = nodes_->Add("n", "2", "8Gi");
  const std::string low = classes_->Add("low", 100);
  const std::string high = classes_->Add("high", 1000);
  client_->Post(PodsPath(), ClassPod("low-1", "900m", low, node));
  client_->Post(PodsPath(), ClassPod("low-2", "900m", low, node));
  StartScheduler();
  NominationWatch nominations(*client_, ns_->name(), "high");
  const std::string uid =
      client_->Post(PodsPath(), ClassPod("high", "900m", high))["metadata"]["uid"];

  ASSERT_TRUE(WaitBound("high", 60s)) << "the preemptor was not bound";
  EXPECT_EQ(NodeOf("high"), node);
  const bool first_left = Exists("low-1");
  EXPECT_NE(first_left, Exists("low-2")) << "exactly one of the two low-priority pods must go";
  const std::string victim = first_left ? "low-2" : "low-1";
  ASSERT_TRUE(Eventually([&] { return !nominations.Seen().empty(); }, 10s))
      << "status.nominatedNodeName was never set";
  EXPECT_EQ(nominations.Seen().front(), node);
  // The victim's event, as kube-scheduler words it.
  std::string note;
  Eventually(
      [&] {
        const json events =
            client_->Get("/apis/events.k8s.io/v1/namespaces/" + ns_->name() + "/events");
        for (const auto& e : events["items"]) {
          if (e.value("reason", "") == "Preempted" && e["regarding"].value("name", "") == victim) {
            note = e.value("note", "");
          }
        }
        return !note.empty();
      },
      10s);
  EXPECT_EQ(note, "Preempted by pod " + uid + " on node " + node);
}

TEST_F(PreemptionIntegration, PreemptionPolicyNeverEvictsNothingAndSaysSo) {
  const std::string node = nodes_->Add("n", "2", "8Gi");
  const std::string low = classes_->Add("low", 100);
  const std::string never = classes_->Add("high-never", 1000, /*never_preempts=*/true);
  client_->Post(PodsPath(), ClassPod("low-1", "900m", low, node));
  client_->Post(PodsPath(), ClassPod("low-2", "900m", low, node));
  StartScheduler();
  client_->Post(PodsPath(), ClassPod("polite", "900m", never));

  const std::string message = UnschedulableMessage("polite", "preemption:");
  EXPECT_EQ(message.rfind("0/", 0), 0u) << message;
  EXPECT_NE(message.find(" 1 Insufficient cpu"), std::string::npos) << message;
  const std::string tail = ". preemption: not eligible due to preemptionPolicy=Never.";
  ASSERT_GE(message.size(), tail.size()) << message;
  EXPECT_EQ(message.substr(message.size() - tail.size()), tail) << message;
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(Exists("low-1"));
  EXPECT_TRUE(Exists("low-2"));
  EXPECT_EQ(NodeOf("polite"), "");
}

TEST_F(PreemptionIntegration, ADisruptionBudgetProtectsItsPodWhenAnotherVictimSuffices) {
  const std::string node = nodes_->Add("n", "2", "8Gi");
  // Without the budget "guarded", of the lowest priority, would be the victim.
  const std::string lowest = classes_->Add("lowest", 100);
  const std::string low = classes_->Add("low", 200);
  const std::string high = classes_->Add("high", 1000);
  json guarded = ClassPod("guarded", "900m", lowest, node);
  guarded["metadata"]["labels"]["app"] = "guarded";
  client_->Post(PodsPath(), guarded);
  client_->Post(PodsPath(), ClassPod("plain", "900m", low, node));
  const std::string budget =
      "/apis/policy/v1/namespaces/" + ns_->name() + "/poddisruptionbudgets/guarded";
  client_->Post(
      "/apis/policy/v1/namespaces/" + ns_->name() + "/poddisruptionbudgets",
      {{"apiVersion", "policy/v1"},
       {"kind", "PodDisruptionBudget"},
       {"metadata", {{"name", "guarded"}}},
       {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "guarded"}}}}}}}});
  // The disruption controller counts the budget's one pod (not healthy: no kubelet runs it, and
  // minAvailable 1 would allow no disruption of a healthy one either) and allows no disruption.
  ASSERT_TRUE(Eventually(
      [&] {
        const json pdb = client_->Get(budget);
        const json& status = pdb["status"];
        return status.value("observedGeneration", 0) == pdb["metadata"].value("generation", -1) &&
               status.value("expectedPods", 0) == 1 && status.value("disruptionsAllowed", -1) == 0;
      },
      30s))
      << client_->Get(budget).dump();
  StartScheduler();
  client_->Post(PodsPath(), ClassPod("high", "900m", high));

  ASSERT_TRUE(WaitBound("high", 60s)) << "the preemptor was not bound";
  EXPECT_TRUE(Exists("guarded"));
  EXPECT_FALSE(Exists("plain"));
}

// While the victim terminates, a pod of the victim's priority fits the room left on the node, but
// not with the nominated preemptor counted there: it stays Pending, and the preemptor gets the
// node once the victim is gone.
TEST_F(PreemptionIntegration, AReplacementOfTheVictimsPriorityDoesNotTakeTheNominatedRoom) {
  const std::string node = nodes_->Add("n", "3", "8Gi");
  const std::string low = classes_->Add("low", 100);
  const std::string mid = classes_->Add("mid", 200);
  const std::string high = classes_->Add("high", 1000);
  client_->Post(PodsPath(), ClassPod("victim", "900m", low, node, /*grace_seconds=*/30));
  client_->Post(PodsPath(), ClassPod("kept", "900m", mid, node));
  StartScheduler();
  client_->Post(PodsPath(), ClassPod("high", "2", high));

  ASSERT_TRUE(Eventually(
      [&] {
        const json pod = Get("victim");
        return pod["metadata"].contains("deletionTimestamp") &&
               Get("high")["status"].value("nominatedNodeName", "") == node;
      },
      30s))
      << "no eviction and nomination: " << Get("victim").dump() << "\n"
      << Get("high").dump();
  bool disrupted = false;
  for (const auto& c : Get("victim")["status"].value("conditions", json::array())) {
    if (c["type"] == "DisruptionTarget") {
      disrupted = c["status"] == "True" && c["reason"] == "PreemptionByScheduler";
    }
  }
  EXPECT_TRUE(disrupted) << Get("victim")["status"].dump();

  client_->Post(PodsPath(), ClassPod("replacement", "900m", low));
  const std::string message = UnschedulableMessage("replacement", "Insufficient cpu");
  EXPECT_NE(message.find("1 Insufficient cpu"), std::string::npos) << message;
  EXPECT_EQ(NodeOf("replacement"), "");
  EXPECT_EQ(NodeOf("high"), "");

  client_->Delete(PodsPath() + "/victim?gracePeriodSeconds=0");
  ASSERT_TRUE(WaitBound("high", 60s)) << "the preemptor was not bound once its victim was gone";
  EXPECT_EQ(NodeOf("high"), node);
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(NodeOf("replacement"), "");
  EXPECT_TRUE(Exists("kept"));
}

// The preemption works from the informer's copy of its victims, so a victim may be deleted and a
// pod created under its name (a StatefulSet replaces its pods so) before the preemption's calls
// arrive. The new pod is neither marked nor deleted, whether the first call to reach it is the
// DisruptionTarget patch or (the condition already set) the deletion, and the preemptor is
// retried. The preemption runs here in process, on exactly those stale copies.
TEST_F(PreemptionIntegration, APodCreatedUnderTheVictimsNameSurvivesThePreemption) {
  const std::string node = nodes_->Add("n", "2", "8Gi");
  const std::string low = classes_->Add("low", 100);
  const std::string high = classes_->Add("high", 1000);
  // A grace period, so a deletion would leave the pod Terminating for the test to see.
  auto victim = [&](const std::string& name) {
    return std::make_shared<api::Pod>(
        api::DecodePod(client_->Post(PodsPath(), ClassPod(name, "900m", low, node, 30))));
  };
  const api::PodPtr unmarked = victim("web-0");
  auto marked = std::make_shared<api::Pod>(*victim("web-1"));
  marked->status.conditions.push_back({"DisruptionTarget", "True", "PreemptionByScheduler",
                                       "berth-scheduler: preempting to accommodate a higher "
                                       "priority pod"});
  std::map<std::string, std::string> replacement_uids;
  for (const std::string name : {"web-0", "web-1"}) {
    client_->Delete(PodsPath() + "/" + name + "?gracePeriodSeconds=0");
    replacement_uids[name] =
        client_->Post(PodsPath(), ClassPod(name, "900m", low, node, 30))["metadata"]["uid"];
  }

  berth::testing::FakeHandle handle({}, client_.get());
  json preemptor_json = ClassPod("high", "900m", high);
  preemptor_json["metadata"]["uid"] = "preemptor-uid";
  const auto preemptor = std::make_shared<api::Pod>(api::DecodePod(preemptor_json));
  {
    plugins::defaultpreemption::Executor executor(handle, "DefaultPreemption",
                                                  handle.informers().ListerFor<api::Pod>());
    executor.Preempt(preemptor, node, {unmarked, marked});
    executor.Drain();
  }

  for (const auto& [name, uid] : replacement_uids) {
    const json pod = Get(name);
    EXPECT_EQ(pod["metadata"]["uid"], uid) << name;
    EXPECT_FALSE(pod["metadata"].contains("deletionTimestamp")) << name << " was deleted";
    for (const auto& c : pod["status"].value("conditions", json::array())) {
      EXPECT_NE(c["type"], "DisruptionTarget") << name << " was marked: " << pod["status"].dump();
    }
  }
  EXPECT_EQ(handle.activated(), std::vector<std::string>{"preemptor-uid"});
  EXPECT_TRUE(handle.recorder().events().empty()) << "a Preempted event for a victim already gone";
}

}  // namespace
}  // namespace berth
