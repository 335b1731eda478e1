// Gangs through the whole scheduler (queue, scheduling thread, binding cycles) without an
// apiserver: pods, nodes and PodGroups reach it through client-less informers, and a binder that
// stands in for the binding subresource sends the bound pod back as the informer would.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "pkg/api/podgroup.h"
#include "pkg/api/workload_podgroup.h"
#include "pkg/config/load.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/dra_builders.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_handle.h"
#include "test/testing/feedback_binder.h"
#include "test/testing/informer_scheduler.h"
#include "test/testing/objects.h"
#include "test/testing/podgroups.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupObject;

using testing::FeedbackBinder;

class GangSchedulerTest : public testing::InformerSchedulerTest {
 protected:
  // Without `run`, no cycle runs: the informers, queue and cache are fed, and dry runs see them.
  void Start(int permit_wait_seconds, int binding_workers = 32, bool run = true) {
    config::Configuration cfg = config::DefaultConfiguration();
    cfg.profiles[0].plugin_config.push_back(
        {"Coscheduling", {{"permitWaitingTimeSeconds", permit_wait_seconds}}});
    SchedulerOptions options;
    options.binding_workers = binding_workers;
    StartScheduler(cfg, {}, options, run);
  }

  void Node(const std::string& name, const std::string& cpu) {
    informers_.Nodes().Upsert(NodeBuilder(name).Capacity(cpu, "64Gi").Build());
  }
  void Group(const std::string& name, int min_member) {
    informers_.For<api::PodGroup>().Upsert(PodGroupObject(name, min_member));
  }
  void Pod(const std::string& name, const std::string& group, const std::string& cpu,
           const std::string& gate = "") {
    PodBuilder pod(name);
    if (!group.empty()) pod.Label(std::string(api::kPodGroupLabel), group);
    if (!gate.empty()) pod.SchedulingGate(gate);
    informers_.Pods().Upsert(pod.Container(cpu, "1Gi").Build());
  }
  // Upstream's PodGroup (scheduling.k8s.io), and a pod that joins one by spec.schedulingGroup.
  void WorkloadGroup(const std::string& name, int min_count) {
    informers_.For<api::WorkloadPodGroup>().Upsert(
        std::make_shared<api::WorkloadPodGroup>(api::DecodeWorkloadPodGroup(
            {{"metadata",
              {{"name", name},
               {"namespace", "default"},
               {"uid", "uid-" + name},
               {"creationTimestamp", "2025-01-01T00:00:00Z"}}},
             {"spec", {{"schedulingPolicy", {{"gang", {{"minCount", min_count}}}}}}}})));
  }
  void WorkloadPod(const std::string& name, const std::string& group, const std::string& cpu) {
    PodBuilder pod(name);
    pod.pod().spec.scheduling_group = group;
    informers_.Pods().Upsert(pod.Container(cpu, "1Gi").Build());
  }
  // A pod of `priority` taking `cpu`, bound to `node`, or of gang `group` when it is not empty.
  void PriorityPod(const std::string& name, int32_t priority, const std::string& cpu,
                   const std::string& node, const std::string& group = "") {
    PodBuilder pod(name);
    if (!group.empty()) pod.Label(std::string(api::kPodGroupLabel), group);
    if (!node.empty()) pod.Node(node);
    informers_.Pods().Upsert(pod.Container(cpu, "1Gi").Priority(priority).Build());
  }
  bool EventContains(const std::string& kind, const std::string& part) {
    return EventSays(kind, part);
  }
};

TEST_F(GangSchedulerTest, AGangThatDoesNotFitBindsNothingUntilANodeMakesRoom) {
  Start(60);
  Node("n1", "2");
  Node("n2", "1");
  Group("train", 4);
  for (int i = 0; i < 4; i++) Pod("train-" + std::to_string(i), "train", "1");
  // Three of the four fit: they are placed, and given back the moment the fourth fits nowhere.
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& e : recorder_.events()) {
          if (e.kind == "PodGroup" &&
              e.note.find("with 3 of 4 required pods placed") != std::string::npos) {
            return true;
          }
        }
        return false;
      },
      10s));
  EXPECT_EQ(Bound("train-"), 0);
  // The pod that fit nowhere says why, and that its gang was rejected for it.
  EXPECT_TRUE(Eventually(
      [&] {
        for (const auto& e : recorder_.events()) {
          if (e.kind == "Pod" && e.reason == "FailedScheduling" &&
              e.note.find("Insufficient cpu. pod group \"default/train\" rejected: pod ") !=
                  std::string::npos) {
            return true;
          }
        }
        return false;
      },
      10s));
  Node("n3", "1");
  EXPECT_TRUE(Eventually([&] { return Bound("train-") == 4; }, 20s)) << Bound("train-");
}

TEST_F(GangSchedulerTest, GangsThatFitAloneButNotTogetherNeverDeadlock) {
  Start(5);
  Node("n1", "4");
  Node("n2", "4");
  Group("a", 4);
  Group("b", 4);
  // Interleaved: neither gang's pods all arrive before the other's begin.
  for (int i = 0; i < 4; i++) {
    Pod("a-" + std::to_string(i), "a", "1500m");
    Pod("b-" + std::to_string(i), "b", "1500m");
    if (i == 1) Pod("small", "", "500m");
  }
  ASSERT_TRUE(Eventually([&] { return Bound("a-") == 4 || Bound("b-") == 4; }, 5s))
      << "a: " << Bound("a-") << ", b: " << Bound("b-");
  EXPECT_TRUE(Eventually([&] { return Bound("small") == 1; }, 5s));
  // Within a wait of 5s, the other gang never gets a pod bound: it is all or nothing.
  std::this_thread::sleep_for(1s);
  const int a = Bound("a-");
  const int b = Bound("b-");
  EXPECT_TRUE((a == 4 && b == 0) || (a == 0 && b == 4)) << "a: " << a << ", b: " << b;
}

TEST_F(GangSchedulerTest, PodsWaitingAtPermitHoldNoBindingThread) {
  Start(60, /*binding_workers=*/2);
  Node("n1", "64");
  Group("wide", 21);
  // 20 members are placed and wait at Permit for the 21st, which a scheduling gate holds back.
  for (int i = 0; i < 20; i++) Pod("wide-" + std::to_string(i), "wide", "1");
  Pod("wide-20", "wide", "1", "example.com/hold");
  auto waiting = [&] {
    int n = 0;
    scheduler_->FrameworkFor("berth-scheduler")->IterateOverWaitingPods([&](auto&) { n++; });
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return waiting() == 20; }, 10s)) << waiting();
  Pod("plain", "", "1");
  EXPECT_TRUE(Eventually([&] { return Bound("plain") == 1; }, 5s))
      << "two binding threads, 20 gang members waiting: a pod ready to bind must not queue behind "
         "them";
  EXPECT_EQ(Bound("wide-"), 0);
  Pod("wide-20", "wide", "1");
  EXPECT_TRUE(Eventually([&] { return Bound("wide-") == 21; }, 10s)) << Bound("wide-");
}

TEST_F(GangSchedulerTest, AWaitingPodThatStartsTerminatingIsNeverBound) {
  Start(60);
  Node("n1", "8");
  Group("job", 3);
  Pod("job-0", "job", "1");
  Pod("job-1", "job", "1");
  Pod("job-2", "job", "1", "example.com/hold");
  auto waiting = [&] {
    int n = 0;
    scheduler_->FrameworkFor("berth-scheduler")->IterateOverWaitingPods([&](auto&) { n++; });
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return waiting() == 2; }, 10s)) << waiting();
  // A finalizer holds the pod: its deletion arrives as an update that sets deletionTimestamp.
  PodBuilder terminating("job-0");
  terminating.Label(std::string(api::kPodGroupLabel), "job");
  auto pod = terminating.Container("1", "1Gi").Build();
  auto copy = std::make_shared<api::Pod>(*pod);
  copy->meta.deletion_timestamp = "2025-01-01T00:00:10Z";
  informers_.Pods().Upsert(copy);
  EXPECT_TRUE(Eventually([&] { return waiting() == 0; }, 5s))
      << "the gang's waiting pods are released with the terminating one";
  Pod("job-2", "job", "1");
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(Bound("job-0"), 0) << "the apiserver refuses to bind a pod being deleted";
}

TEST_F(GangSchedulerTest, AnUpstreamGangBindsWholeOnceItFitsAndAGroupOfAnotherKindNever) {
  Start(60);
  Node("n1", "2");
  WorkloadGroup("up", 3);
  for (int i = 0; i < 3; i++) WorkloadPod("up-" + std::to_string(i), "up", "1");
  ASSERT_TRUE(Eventually(
      [&] { return EventContains("PodGroup", "with 2 of 3 required pods placed"); }, 10s));
  EXPECT_EQ(Bound("up-"), 0);
  Node("n2", "1");
  EXPECT_TRUE(Eventually([&] { return Bound("up-") == 3; }, 20s)) << Bound("up-");

  // spec.schedulingGroup set without a PodGroup's name: a group Berth cannot honour.
  WorkloadPod("other", "", "100m");
  EXPECT_TRUE(Eventually(
      [&] {
        return EventContains("Pod",
                             "pod uses spec.schedulingGroup (a scheduling group that names no "
                             "PodGroup), which berth-scheduler does not support yet");
      },
      10s));
  Node("n3", "4");
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Bound("other"), 0);
}

// Coscheduling takes PrioritySort's place as the default QueueSort plugin. A profile that wants
// PrioritySort's queue says so at queueSort and disables Coscheduling there; naming PrioritySort
// alone is two QueueSort plugins, an error as in kube-scheduler.
TEST(GangSchedulerConfig, PrioritySortTakesTheQueueOnlyWithCoschedulingDisabledThere) {
  auto registry = plugins::registry::InTree();
  std::set<std::string> known;
  for (const auto& [name, factory] : registry) known.insert(name);
  const std::string head =
      "apiVersion: kubescheduler.config.k8s.io/v1\n"
      "kind: KubeSchedulerConfiguration\n"
      "profiles:\n"
      "- schedulerName: berth-scheduler\n"
      "  plugins:\n";
  testing::FakeRecorder recorder;
  SchedulerDeps deps;
  deps.recorder = &recorder;

  Scheduler defaults(config::DefaultConfiguration(), registry, deps);
  auto plugins = defaults.FrameworkFor("berth-scheduler")->ListPlugins();
  EXPECT_EQ(plugins["QueueSort"], std::vector<std::string>{"Coscheduling"});

  config::Configuration cfg = config::LoadString(head +
                                                     "    queueSort:\n"
                                                     "      enabled: [{name: PrioritySort}]\n"
                                                     "      disabled: [{name: Coscheduling}]\n",
                                                 "config.yaml", known);
  Scheduler sorted(cfg, registry, deps);
  plugins = sorted.FrameworkFor("berth-scheduler")->ListPlugins();
  EXPECT_EQ(plugins["QueueSort"], std::vector<std::string>{"PrioritySort"});
  EXPECT_EQ(plugins["Permit"], std::vector<std::string>{"Coscheduling"});

  cfg = config::LoadString(head + "    queueSort: {enabled: [{name: PrioritySort}]}\n",
                           "config.yaml", known);
  EXPECT_THROW(Scheduler(cfg, registry, deps), framework::runtime::FrameworkError);
}

// Explain's gang hint: how many pods the group still lacks, checked by placing its pods together
// with copies of this one for the missing; adding that many pods lets the real cycles bind it.
TEST_F(GangSchedulerTest, ExplainSaysHowManyPodsTheGangLacks) {
  Start(30);
  Node("n1", "4");
  Node("n2", "4");
  Group("g", 3);
  Pod("g-0", "g", "1");
  Pod("g-1", "g", "1");
  std::optional<explain::Explanation> e;
  const std::string hint =
      "pod group \"default/g\" lacks 1 pod: it has 2 of minMember 3 (3 pods fit together, on 2 "
      "nodes)";
  ASSERT_TRUE(Eventually(
      [&] {
        e = scheduler_->dry_runs().Explain("default/g-0");
        if (!e) return false;
        for (const auto& h : e->hints) {
          if (h.Text() == hint) return true;
        }
        return false;
      },
      10s))
      << (e ? explain::ToText(*e) : "no record");
  EXPECT_EQ(e->attempt->outcome, explain::Outcome::kUnschedulable);
  EXPECT_EQ(e->hints.front().plugin, "Coscheduling");

  Pod("g-2", "g", "1");
  ASSERT_TRUE(Eventually([&] { return binder_->bound().size() == 3; }, 10s));
  // A binding cycle keeps its decision after Bind returns.
  for (const char* pod : {"default/g-0", "default/g-1", "default/g-2"}) {
    explain::AttemptPtr record;
    ASSERT_TRUE(Eventually(
        [&] {
          record = scheduler_->attempts().Find(pod);
          return record != nullptr && record->outcome == explain::Outcome::kBound;
        },
        10s))
        << pod << ": " << (record ? record->message : "no record");
  }
  // The last member's cycle saw both nodes feasible, as the hint promised.
  EXPECT_GE(scheduler_->attempts().Find("default/g-2")->feasible, 2);
}

// Each pod of this gang fits a node, two fit at once, the third nowhere: the gang fails, backs
// off and tries again. Explain must not offer what lets one pod in while the others stay out (a
// pod rejected at Permit fits a node alone); it says how many of the gang's pods fit together and
// gives the change that, made to every pod, fits them all. Made by hand, it binds the gang.
TEST_F(GangSchedulerTest, ExplainHintsFitTheWholeGangNotOnePod) {
  Start(30);
  Node("n1", "2");
  Node("n2", "2");
  Group("g", 3);
  for (const char* name : {"g-0", "g-1", "g-2"}) Pod(name, "g", "1500m");
  const std::string change = "reduce cpu request by 1 in each pod of pod group \"default/g\"";
  std::optional<explain::Explanation> e;
  explain::Hint hint;
  ASSERT_TRUE(Eventually(
      [&] {
        e = scheduler_->dry_runs().Explain("default/g-0");
        if (!e) return false;
        for (const auto& h : e->hints) {
          if (h.change == change) hint = h;
        }
        return !hint.change.empty();
      },
      10s))
      << (e ? explain::ToText(*e) : "no record");
  EXPECT_EQ(e->group, "pod group \"default/g\"");
  EXPECT_EQ(e->group_needs, 3);
  EXPECT_LT(e->group_fit_now, 3);
  EXPECT_EQ(hint.plugin, "NodeResourcesFit");
  EXPECT_EQ(hint.group_pods, 3);
  for (const auto& h : e->hints) {
    EXPECT_NE(h.change.find(" in each pod of pod group"), std::string::npos) << h.Text();
  }
  const std::string text = explain::ToText(*e);
  EXPECT_EQ(text.find("its next attempt should place it."), std::string::npos) << text;
  EXPECT_NE(text.find("of the 3 pods pod group \"default/g\" needs fit together."),
            std::string::npos)
      << text;

  // The change, made by hand to each pod.
  for (const char* name : {"g-0", "g-1", "g-2"}) {
    informers_.Pods().Remove(std::string("default/") + name);
  }
  for (const char* name : {"h-0", "h-1", "h-2"}) Pod(name, "g", "500m");
  ASSERT_TRUE(Eventually([&] { return Bound("h-") == 3; }, 10s));
  EXPECT_EQ(Bound("g-"), 0);
}

// Devices for the DynamicResources tests: class "gpu" of every device of driver gpu.example.com,
// and `count` devices on `node`.
void PublishGpus(informer::SharedInformerFactory& informers, const std::string& node, int count) {
  namespace dra = testing::dra;
  informers.For<api::DeviceClass>().Upsert(dra::Class("gpu", "gpu.example.com"));
  api::ResourceSlicePtr slice =
      dra::SliceWithDevices(node + "-gpus", node, dra::Pool(node), "gpu.example.com", count);
  informers.For<api::ResourceSlice>().Upsert(slice);
}

// Claim default/<name> asking for `count` devices of class "gpu".
void GpuClaim(informer::SharedInformerFactory& informers, const std::string& name, int count) {
  api::ResourceClaim claim =
      testing::dra::Claim(name, {testing::dra::Request("gpu", "gpu", count)}).claim;
  claim.meta.namespace_ = "default";
  claim.meta.uid = "uid-" + name;
  informers.For<api::ResourceClaim>().Upsert(std::make_shared<api::ResourceClaim>(claim));
}

// A gang of three whose pods each claim one device, on a cluster of two devices: each pod fits
// alone, but explain's dry run counts the device each member's claim takes from the next, so it
// says that two of the three fit together.
TEST_F(GangSchedulerTest, ExplainCountsTheDevicesAGangsMembersTakeFromEachOther) {
  PublishGpus(informers_, "n1", 2);
  Start(30);
  Node("n1", "8");
  Group("g", 3);
  for (const char* name : {"g-0", "g-1", "g-2"}) {
    GpuClaim(informers_, std::string(name) + "-gpu", 1);
    PodBuilder pod(name);
    pod.Label(std::string(api::kPodGroupLabel), "g");
    pod.pod().spec.resource_claims.push_back({"gpu", std::string(name) + "-gpu", std::nullopt});
    informers_.Pods().Upsert(pod.Container("1", "1Gi").Build());
  }
  std::optional<explain::Explanation> e;
  // Asked once the scheduler has seen all three members: before that, copies of g-0 stand in for
  // the missing ones, and copies share g-0's claim.
  ASSERT_TRUE(Eventually(
      [&] {
        e = scheduler_->dry_runs().Explain("default/g-0");
        return e && e->hints_computed && e->group_stand_ins == 0;
      },
      10s));
  EXPECT_EQ(e->group, "pod group \"default/g\"");
  EXPECT_EQ(e->group_fit_now, 2) << explain::ToText(*e);
  // The note of the member that fits no node sees the devices the members before it took.
  const std::string text = explain::ToText(*e);
  EXPECT_NE(text.find("on 1 node (n1) the devices that match are allocated to others"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("could give its devices"), std::string::npos) << text;
  EXPECT_NE(explain::ToText(*e).find("2 of the 3 pods pod group \"default/g\" needs fit together."),
            std::string::npos)
      << explain::ToText(*e);
  EXPECT_EQ(Bound("g-"), 0);
}

// Not a gang: a pod whose claim asks for more devices than any node has. Explain offers the most
// one node gives, checked by a dry run with the claim so changed; a claim made that way binds.
TEST_F(GangSchedulerTest, ExplainChecksAClaimThatAsksForFewerDevices) {
  PublishGpus(informers_, "n1", 3);
  PublishGpus(informers_, "n2", 1);
  GpuClaim(informers_, "big", 5);
  Start(30);
  Node("n1", "8");
  Node("n2", "8");
  PodBuilder pod("p");
  pod.pod().spec.resource_claims.push_back({"gpu", "big", std::nullopt});
  informers_.Pods().Upsert(pod.Container("1", "1Gi").Build());
  const std::string text = "request gpu of claim default/big: ask for 3 devices instead of 5";
  std::optional<explain::Explanation> e;
  explain::Hint hint;
  ASSERT_TRUE(Eventually(
      [&] {
        e = scheduler_->dry_runs().Explain("default/p");
        for (const auto& h : e ? e->hints : std::vector<explain::Hint>{}) {
          if (h.change == text) hint = h;
        }
        return !hint.change.empty();
      },
      10s))
      << (e ? explain::ToText(*e) : "no record");
  EXPECT_EQ(hint.plugin, "DynamicResources");
  EXPECT_EQ(hint.nodes, 1);
  EXPECT_NE(explain::ToText(*e).find("  - " + text + " (fits 1 node)"), std::string::npos)
      << explain::ToText(*e);
}

// A gang short of a pod whose pods would not fit together even with it, nor with less cpu each
// (one fits the only node, then it is full): that it lacks a pod would not schedule it, so it is
// a note, with how far the gang is from fitting, and there is no hint.
TEST_F(GangSchedulerTest, ExplainSaysWhenEvenAWholeGangWouldNotFit) {
  Start(30);
  Node("n1", "1");
  Group("g", 3);
  Pod("g-0", "g", "1500m");
  Pod("g-1", "g", "1500m");
  std::optional<explain::Explanation> e;
  ASSERT_TRUE(Eventually(
      [&] {
        e = scheduler_->dry_runs().Explain("default/g-0");
        return e && !e->notes.empty();
      },
      10s))
      << (e ? explain::ToText(*e) : "no record");
  EXPECT_TRUE(e->hints.empty()) << explain::ToText(*e);
  EXPECT_EQ(e->group_fit_now, 0);
  ASSERT_EQ(e->notes.size(), 2u) << explain::ToText(*e);
  EXPECT_EQ(e->notes[0], "pod group \"default/g\" lacks 1 pod: it has 2 of minMember 3");
  EXPECT_EQ(e->notes[1],
            "pod group \"default/g\": 0 of the 3 pods it needs fit together, counting copies of "
            "this pod for those it lacks; then pod \"g-0\" fits no node: 0/1 nodes are "
            "available: 1 Insufficient cpu.");
}

// A high-priority gang of five on four full nodes: even with every low-priority pod gone, one
// member has no place. Explain says preemption cannot help, in the words of the gang's own
// preemption, and the cycles evict nothing either.
TEST_F(GangSchedulerTest, ExplainSaysWhenPreemptionCannotHelpTheGang) {
  Start(30);
  for (int i = 1; i <= 4; i++) {
    Node("n" + std::to_string(i), "1");
    PriorityPod("low-" + std::to_string(i), 1, "1", "n" + std::to_string(i));
  }
  Group("g", 5);
  for (int i = 0; i < 5; i++) PriorityPod("g-" + std::to_string(i), 100, "1", "", "g");
  const std::string note = "preemption cannot help: gang needs 5 places, at most 4 can be freed";
  std::optional<explain::Explanation> e;
  ASSERT_TRUE(Eventually(
      [&] {
        e = scheduler_->dry_runs().Explain("default/g-0");
        return e && std::find(e->notes.begin(), e->notes.end(), note) != e->notes.end();
      },
      10s))
      << (e ? explain::ToText(*e) : "no record");
  EXPECT_NE(explain::ToText(*e).find(note), std::string::npos) << explain::ToText(*e);
  for (int i = 1; i <= 4; i++) {
    EXPECT_NE(informers_.Pods().store().Get("default/low-" + std::to_string(i)), nullptr);
  }
}

// The same gang with a fifth, free node fits once the four low-priority pods go: explain says so,
// and only says it. The victims are still there, no member is nominated, and asking again gives
// the same answer.
TEST_F(GangSchedulerTest, ExplainSaysWhatPreemptionWouldEvictForTheGangAndChangesNothing) {
  Start(30, 32, /*run=*/false);
  for (int i = 1; i <= 4; i++) {
    Node("n" + std::to_string(i), "1");
    PriorityPod("low-" + std::to_string(i), 1, "1", "n" + std::to_string(i));
  }
  Node("n5", "1");
  Group("g", 5);
  for (int i = 0; i < 5; i++) PriorityPod("g-" + std::to_string(i), 100, "1", "", "g");
  const std::string note = "preemption would evict 4 pods on 4 nodes for pod group \"default/g\"";
  for (int round = 0; round < 2; round++) {
    const api::PodPtr pod = informers_.Pods().store().Get("default/g-0");
    ASSERT_NE(pod, nullptr);
    const explain::Explanation e = scheduler_->dry_runs().Simulate(*pod);
    EXPECT_NE(std::find(e.notes.begin(), e.notes.end(), note), e.notes.end()) << explain::ToText(e);
    EXPECT_NE(explain::ToText(e).find(note), std::string::npos) << explain::ToText(e);
    for (int i = 1; i <= 5; i++) {
      const std::string node = "n" + std::to_string(i);
      EXPECT_TRUE(scheduler_->queue().nominator().NominatedPodsForNode(node).empty()) << node;
      if (i == 5) continue;
      const api::PodPtr victim = informers_.Pods().store().Get("default/low-" + std::to_string(i));
      ASSERT_NE(victim, nullptr);
      EXPECT_EQ(victim->spec.node_name, node);
    }
    for (int i = 0; i < 5; i++) {
      const api::PodPtr member = informers_.Pods().store().Get("default/g-" + std::to_string(i));
      EXPECT_EQ(member->status.nominated_node_name, "") << member->meta.name;
    }
  }
}

// A gang whose pods may not preempt gets no word about preemption.
TEST_F(GangSchedulerTest, ExplainSaysNothingOfPreemptionForAGangThatMayNotPreempt) {
  Start(30, 32, /*run=*/false);
  Node("n1", "1");
  PriorityPod("low-1", 1, "1", "n1");
  Group("g", 1);
  PodBuilder pod("g-0");
  pod.Label(std::string(api::kPodGroupLabel), "g").Container("1", "1Gi").Priority(100);
  pod.pod().spec.preemption_policy = api::PreemptionPolicy::kNever;
  informers_.Pods().Upsert(pod.Build());
  const explain::Explanation e =
      scheduler_->dry_runs().Simulate(*informers_.Pods().store().Get("default/g-0"));
  for (const auto& n : e.notes) EXPECT_EQ(n.find("preemption"), std::string::npos) << n;
}

}  // namespace
}  // namespace berth::scheduler
