// Preemption for gangs through the whole scheduler without an apiserver: nodes, pods and PodGroups
// reach it through client-less informers, a binder sends bound pods back as the watch would, and
// a client deletes evicted pods from the pod informer as the apiserver would.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pkg/api/podgroup.h"
#include "pkg/api/workload_podgroup.h"
#include "pkg/config/load.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/extenders.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_handle.h"
#include "test/testing/feedback_binder.h"
#include "test/testing/informer_scheduler.h"
#include "test/testing/objects.h"
#include "test/testing/podgroups.h"
#include "test/testing/unused_client.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupObject;

// Evicts by removing the pod from the informer, as the apiserver's deletion would reach it; status
// patches are accepted and dropped.
class InformerEvictingClient : public testing::UnusedClient {
 public:
  explicit InformerEvictingClient(informer::SharedInformerFactory& informers)
      : informers_(informers) {}
  nlohmann::json Patch(const std::string&, const nlohmann::json&, client::PatchType) override {
    return nlohmann::json::object();
  }
  void Delete(const std::string& path, const client::DeleteOptions&) override {
    // /api/v1/namespaces/<ns>/pods/<name>
    const std::string name = path.substr(path.rfind('/') + 1);
    {
      std::lock_guard lock(mu_);
      deleted_.insert(name);
    }
    informers_.Pods().Remove("default/" + name);
  }
  std::set<std::string> deleted() {
    std::lock_guard lock(mu_);
    return deleted_;
  }

 private:
  informer::SharedInformerFactory& informers_;
  std::mutex mu_;
  std::set<std::string> deleted_;
};

// An extender with a preempt verb only: it records what it is shown, and answers with it less the
// node `drop` names, or with `error`. Thread-safe.
class PreemptingExtender : public framework::Extender {
 public:
  explicit PreemptingExtender(const std::string& name) : name_(name) {}
  const framework::PluginName& Name() const override { return name_; }
  bool IsFilter() const override { return false; }
  bool IsPrioritizer() const override { return false; }
  bool IsBinder() const override { return false; }
  bool SupportsPreemption() const override { return true; }
  bool IsIgnorable() const override { return ignorable; }
  int64_t Weight() const override { return 0; }
  bool IsInterested(const api::Pod& pod) const override {
    return !pod.meta.labels.Contains("not-for-extenders");
  }
  framework::Status Filter(const api::Pod&, std::span<const framework::NodeInfo* const>,
                           FilterResult*) const override {
    return framework::Status::Error("not a filter");
  }
  std::unique_ptr<PendingScores> StartPrioritize(
      const api::Pod&, std::span<const framework::NodeInfo* const>) const override {
    return nullptr;
  }
  framework::Status ProcessPreemption(
      const api::Pod&, const std::map<std::string, framework::ExtenderVictims>& victims,
      const framework::NodeInfoLister&,
      std::map<std::string, framework::ExtenderVictims>* out) const override {
    std::lock_guard lock(mu_);
    std::map<std::string, std::set<std::string>> shown;
    for (const auto& [node, v] : victims) {
      for (const auto& p : v.pods) shown[node].insert(p->pod->meta.name);
    }
    asked_.push_back(std::move(shown));
    if (!error.empty()) return framework::Status::Error(error);
    *out = victims;
    out->erase(drop);
    return {};
  }
  framework::Status Bind(const api::Pod&, const std::string&) const override {
    return framework::Status::Error("not a binder");
  }
  // Each call's victims' names by node.
  std::vector<std::map<std::string, std::set<std::string>>> asked() const {
    std::lock_guard lock(mu_);
    return asked_;
  }

  std::string drop;
  std::string error;
  bool ignorable = false;

 private:
  framework::PluginName name_;
  mutable std::mutex mu_;
  mutable std::vector<std::map<std::string, std::set<std::string>>> asked_;
};

class GangPreemptionTest : public testing::InformerSchedulerTest {
 protected:
  void SetUp() override { Build({}); }
  // The scheduler, not yet running, with these extenders.
  void Build(Extenders extenders) {
    SchedulerDeps deps;
    deps.client = client_;
    deps.extenders = std::move(extenders);
    StartScheduler(config::DefaultConfiguration(), std::move(deps), {}, /*run=*/false);
  }

  void Node(const std::string& name) {
    informers_.Nodes().Upsert(NodeBuilder(name).Capacity("1", "8Gi").Build());
  }
  void Group(const std::string& name, int min_member) {
    informers_.For<api::PodGroup>().Upsert(PodGroupObject(name, min_member));
  }
  // A pod taking a whole node's cpu; bound to `node` when one is given.
  void Pod(const std::string& name, const std::string& group, int32_t priority,
           const std::string& node = "", bool for_extenders = true) {
    PodBuilder pod(name);
    if (!group.empty()) pod.Label(std::string(api::kPodGroupLabel), group);
    if (!for_extenders) pod.Label("not-for-extenders", "true");
    pod.Container("1", "64Mi").Priority(priority);
    if (!node.empty()) pod.Node(node);
    informers_.Pods().Upsert(pod.Build());
  }
  // An upstream PodGroup (scheduling.k8s.io/v1beta1) of priority 1 under `policy` (`gang` with a
  // minCount, or `basic`), disrupted only as a whole when `whole`; its pods are `<name>-<i>`, bound
  // to n1, n2, ... in turn.
  void UpstreamGroup(const std::string& name, const nlohmann::json& policy, bool whole, int pods) {
    nlohmann::json spec = {{"schedulingPolicy", policy}, {"priority", 1}};
    if (whole) spec["disruptionMode"] = {{"all", nlohmann::json::object()}};
    informers_.For<api::WorkloadPodGroup>().Upsert(std::make_shared<api::WorkloadPodGroup>(
        api::DecodeWorkloadPodGroup({{"metadata",
                                      {{"name", name},
                                       {"namespace", "default"},
                                       {"uid", "uid-" + name},
                                       {"creationTimestamp", "2025-01-01T00:00:00Z"}}},
                                     {"spec", spec}})));
    for (int i = 0; i < pods; i++) {
      PodBuilder pod(name + "-" + std::to_string(i));
      pod.pod().spec.scheduling_group = name;
      pod.Container("1", "64Mi").Priority(1).Node("n" + std::to_string(i + 1));
      informers_.Pods().Upsert(pod.Build());
    }
  }
  bool PodEventContains(const std::string& pod, const std::string& part) {
    return EventSays("Pod", part, pod);
  }
  // Whether an event of one of the pods `<prefix>0` to `<prefix><count - 1>` says `part`.
  bool AnyPodSays(const std::string& prefix, int count, const std::string& part) {
    for (int i = 0; i < count; i++) {
      if (PodEventContains(prefix + std::to_string(i), part)) return true;
    }
    return false;
  }

  std::shared_ptr<InformerEvictingClient> client_ =
      std::make_shared<InformerEvictingClient>(informers_);
};

// Issue 43: four nodes full of low-priority pods, a high-priority gang of five that cannot fit
// even if every one of them goes. Evicting any of them cannot complete the gang.
TEST_F(GangPreemptionTest, AGangThatCannotFitEvenAfterPreemptionEvictsNothing) {
  for (int i = 1; i <= 4; i++) {
    Node("n" + std::to_string(i));
    Pod("low-" + std::to_string(i), "", 1, "n" + std::to_string(i));
  }
  Group("big", 5);
  for (int i = 0; i < 5; i++) Pod("big-" + std::to_string(i), "big", 100);
  scheduler_->Run();

  EXPECT_TRUE(Eventually(
      [&] {
        return AnyPodSays("big-", 5, "preemption: gang needs 5 places, at most 4 can be freed");
      },
      10s))
      << "no pod of the gang said why preemption could not help it";
  EXPECT_EQ(client_->deleted(), std::set<std::string>{});
  EXPECT_EQ(Bound("big-"), 0);
}

// The same gang with four members fits once all four low-priority pods go: exactly those are
// evicted, and the gang binds whole.
TEST_F(GangPreemptionTest, AGangThatFitsAfterPreemptionEvictsWhatItNeedsAndBindsWhole) {
  for (int i = 1; i <= 4; i++) {
    Node("n" + std::to_string(i));
    Pod("low-" + std::to_string(i), "", 1, "n" + std::to_string(i));
  }
  Node("n5");
  Group("fit", 5);
  for (int i = 0; i < 5; i++) Pod("fit-" + std::to_string(i), "fit", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("fit-") == 5; }, 20s))
      << Bound("fit-") << " of 5 bound";
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"low-1", "low-2", "low-3", "low-4"}));
}

// A victim that belongs to a lower-priority gang takes the gang with it rather than leaving it
// below its minimum.
TEST_F(GangPreemptionTest, AVictimGangIsNeverLeftBelowItsMinimum) {
  for (int i = 1; i <= 3; i++) Node("n" + std::to_string(i));
  Group("low", 2);
  Pod("low-0", "low", 1, "n1");
  Pod("low-1", "low", 1, "n2");
  Pod("solo", "", 5, "n3");
  Group("high", 1);
  Pod("high-0", "high", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("high-") == 1; }, 20s));
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"low-0", "low-1"}));
}

// A pod in no gang preempts as a single pod, and still never leaves a victim gang below its
// minimum: the gang's node is the cheapest (its victims have the lowest priority), so both of the
// gang's pods go rather than one.
TEST_F(GangPreemptionTest, APlainPodNeverLeavesAVictimGangBelowItsMinimum) {
  for (int i = 1; i <= 3; i++) Node("n" + std::to_string(i));
  Group("low", 2);
  Pod("low-0", "low", 1, "n1");
  Pod("low-1", "low", 1, "n2");
  Pod("solo", "", 5, "n3");
  Pod("plain", "", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("plain") == 1; }, 20s));
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"low-0", "low-1"}));
}

// An upstream PodGroup that may only be disrupted as a whole (disruptionMode: {all: {}}): its
// minimum of one would let a single pod go, but a preemptor that takes one takes both.
TEST_F(GangPreemptionTest, AVictimGangDisruptedOnlyAsAWholeGoesWhole) {
  for (int i = 1; i <= 3; i++) Node("n" + std::to_string(i));
  UpstreamGroup("whole", {{"gang", {{"minCount", 1}}}}, true, 2);
  Pod("solo", "", 5, "n3");
  Pod("plain", "", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("plain") == 1; }, 20s));
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"whole-0", "whole-1"}));
}

// The gang's preemption and its extender: four nodes, each full with one low-priority pod, a fifth
// free, and a gang of five that fits once the four go.
class GangPreemptionExtenderTest : public GangPreemptionTest {
 protected:
  void SetUp() override {}
  void FourFullNodesAndOneFree() {
    for (int i = 1; i <= 4; i++) {
      Node("n" + std::to_string(i));
      Pod("low-" + std::to_string(i), "", 1, "n" + std::to_string(i));
    }
    Node("n5");
    Group("fit", 5);
  }
  // What the gang's plan shows an extender: each node with victims, and its victims.
  const std::map<std::string, std::set<std::string>> plan_ = {
      {"n1", {"low-1"}}, {"n2", {"low-2"}}, {"n3", {"low-3"}}, {"n4", {"low-4"}}};
};

// An extender that returns every node of the plan with its victims lets the gang preempt and bind
// whole, as without it; it is shown the plan's victims node by node.
TEST_F(GangPreemptionExtenderTest, AnExtenderThatAcceptsThePlanLetsTheGangPreempt) {
  auto ext = std::make_shared<PreemptingExtender>("http://ext");
  Build({ext});
  FourFullNodesAndOneFree();
  for (int i = 0; i < 5; i++) Pod("fit-" + std::to_string(i), "fit", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("fit-") == 5; }, 20s))
      << Bound("fit-") << " of 5 bound";
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"low-1", "low-2", "low-3", "low-4"}));
  const auto asked = ext->asked();
  ASSERT_FALSE(asked.empty()) << "the extender was never asked";
  EXPECT_EQ(asked.front(), plan_);
}

// An extender that drops one node of the plan refuses it whole: the gang's simulation placed a
// member there with its victim gone. Nothing is evicted, and the gang's pods say who refused where.
TEST_F(GangPreemptionExtenderTest, AnExtenderThatDropsANodeOfThePlanStopsTheGangsPreemption) {
  auto ext = std::make_shared<PreemptingExtender>("http://ext");
  ext->drop = "n3";
  Build({ext});
  FourFullNodesAndOneFree();
  for (int i = 0; i < 5; i++) Pod("fit-" + std::to_string(i), "fit", 100);
  scheduler_->Run();

  EXPECT_TRUE(Eventually(
      [&] {
        return AnyPodSays("fit-", 5,
                          "preemption: extender \"http://ext\" did not accept the gang's "
                          "victims on node \"n3\"");
      },
      10s))
      << "no pod of the gang said which extender refused its preemption";
  EXPECT_EQ(client_->deleted(), std::set<std::string>{});
  EXPECT_EQ(Bound("fit-"), 0);
  ASSERT_FALSE(ext->asked().empty());
  EXPECT_EQ(ext->asked().front(), plan_);
}

// An extender that is not interested in the gang's pods is not asked; the gang preempts as
// without it.
TEST_F(GangPreemptionExtenderTest, AnExtenderNotInterestedInTheGangIsNotAsked) {
  auto ext = std::make_shared<PreemptingExtender>("http://ext");
  ext->drop = "n3";
  Build({ext});
  FourFullNodesAndOneFree();
  for (int i = 0; i < 5; i++) Pod("fit-" + std::to_string(i), "fit", 100, "", false);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("fit-") == 5; }, 20s))
      << Bound("fit-") << " of 5 bound";
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"low-1", "low-2", "low-3", "low-4"}));
  EXPECT_TRUE(ext->asked().empty());
}

// A failing extender: when it is not ignorable its error is the preemption's outcome and nothing
// is evicted; an ignorable one is skipped.
TEST_F(GangPreemptionExtenderTest, AFailingExtenderStopsTheGangsPreemptionUnlessIgnorable) {
  auto strict = std::make_shared<PreemptingExtender>("http://strict");
  strict->error = "Post \"http://strict/preempt\": connection refused";
  Build({strict});
  FourFullNodesAndOneFree();
  for (int i = 0; i < 5; i++) Pod("fit-" + std::to_string(i), "fit", 100);
  scheduler_->Run();

  EXPECT_TRUE(Eventually(
      [&] {
        return AnyPodSays("fit-", 5,
                          "preemption: Post \"http://strict/preempt\": connection refused");
      },
      10s))
      << "no pod of the gang carried the extender's error";
  EXPECT_EQ(client_->deleted(), std::set<std::string>{});
  EXPECT_EQ(Bound("fit-"), 0);
}

TEST_F(GangPreemptionExtenderTest, AnIgnorableFailingExtenderIsSkipped) {
  auto ext = std::make_shared<PreemptingExtender>("http://ext");
  ext->error = "Post \"http://ext/preempt\": connection refused";
  ext->ignorable = true;
  Build({ext});
  FourFullNodesAndOneFree();
  for (int i = 0; i < 5; i++) Pod("fit-" + std::to_string(i), "fit", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("fit-") == 5; }, 20s))
      << Bound("fit-") << " of 5 bound";
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"low-1", "low-2", "low-3", "low-4"}));
  EXPECT_FALSE(ext->asked().empty());
}

// A group of the basic policy is placed pod by pod, but with disruptionMode: {all: {}} its placed
// pods are one victim: the plain pod that needs the room of one of them evicts both.
TEST_F(GangPreemptionTest, ABasicGroupDisruptedOnlyAsAWholeGoesWhole) {
  for (int i = 1; i <= 3; i++) Node("n" + std::to_string(i));
  UpstreamGroup("whole", {{"basic", nlohmann::json::object()}}, true, 2);
  Pod("solo", "", 5, "n3");
  Pod("plain", "", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("plain") == 1; }, 20s));
  EXPECT_EQ(client_->deleted(), (std::set<std::string>{"whole-0", "whole-1"}));
}

// Without disruptionMode all, a basic group's pods are victims one by one: only the one whose
// room the plain pod takes goes.
TEST_F(GangPreemptionTest, ABasicGroupLosesOnlyThePodWhoseRoomIsTaken) {
  for (int i = 1; i <= 3; i++) Node("n" + std::to_string(i));
  UpstreamGroup("single", {{"basic", nlohmann::json::object()}}, false, 2);
  Pod("solo", "", 5, "n3");
  Pod("plain", "", 100);
  scheduler_->Run();

  ASSERT_TRUE(Eventually([&] { return Bound("plain") == 1; }, 20s));
  const std::set<std::string> deleted = client_->deleted();
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_TRUE(deleted.contains("single-0") || deleted.contains("single-1")) << *deleted.begin();
}

}  // namespace
}  // namespace berth::scheduler
