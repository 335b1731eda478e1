#include "pkg/queue/scheduling_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/queue/events.h"
#include "test/testing/objects.h"

namespace berth::queue {
namespace {

using framework::ClusterEvent;
using framework::EventObjects;
using framework::EventResource;
using framework::QueuedPodInfoPtr;
using framework::QueueingHint;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr char kProfile[] = "berth-scheduler";  // PodBuilder's schedulerName.

bool PrioritySortLess(const framework::QueuedPodInfo& a, const framework::QueuedPodInfo& b) {
  int32_t pa = a.pod().spec.priority;
  int32_t pb = b.pod().spec.priority;
  return pa > pb || (pa == pb && a.timestamp < b.timestamp);
}

// Gates pods that still carry scheduling gates, as the SchedulingGates plugin does.
framework::Status GateOnSchedulingGates(const api::Pod& pod) {
  if (pod.spec.scheduling_gates.empty()) return framework::Status::Success();
  framework::Status status(framework::Code::kUnschedulableAndUnresolvable, "waiting for gates");
  status.WithPlugin("SchedulingGates");
  return status;
}

QueueingHintEntry Entry(std::string plugin, EventResource resource, uint32_t actions,
                        framework::QueueingHintFn hint = nullptr) {
  return {std::move(plugin), ClusterEvent{resource, actions, ""}, std::move(hint)};
}

QueueingHint Always(QueueingHint h, const api::Pod&, const EventObjects&) { return h; }

framework::QueueingHintFn Returns(QueueingHint h) {
  return [h](const api::Pod& pod, const EventObjects& objects) { return Always(h, pod, objects); };
}

const ClusterEvent kNodeAdd{EventResource::kNode, framework::kAdd, "NodeAdd"};
const ClusterEvent kAssignedPodAdd{EventResource::kPod, framework::kAdd, "AssignedPodAdd"};
const ClusterEvent kWildcard{EventResource::kWildcard, framework::kAll, "Wildcard"};

EventObjects NodeObjects(api::NodePtr node) {
  EventObjects objects;
  objects.new_node = std::move(node);
  return objects;
}

std::vector<std::string> Names(const std::vector<QueuedPodInfoPtr>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p->pod().meta.name);
  std::sort(out.begin(), out.end());
  return out;
}

class SchedulingQueueTest : public ::testing::Test {
 protected:
  std::unique_ptr<SchedulingQueue> MakeQueue(QueueingHintMap hints = {},
                                             PreEnqueueFn pre_enqueue = nullptr,
                                             QueueOptions options = {}) {
    return std::make_unique<SchedulingQueue>(options, PrioritySortLess, std::move(pre_enqueue),
                                             std::move(hints), clock_);
  }

  // Pops the head (which must be `name`) and reports it rejected by `plugins`.
  static QueuedPodInfoPtr PopAndReject(SchedulingQueue& q, const std::string& name,
                                       std::set<std::string> plugins,
                                       std::set<std::string> pending = {}) {
    QueuedPodInfoPtr pinfo = q.Pop();
    EXPECT_EQ(pinfo->pod().meta.name, name);
    pinfo->unschedulable_plugins = std::move(plugins);
    pinfo->pending_plugins = std::move(pending);
    q.AddUnschedulableIfNotPresent(pinfo, /*had_error=*/false);
    return pinfo;
  }

  struct Spread {
    api::PodPtr backoff, pool, gated;
  };
  // One pod in backoffQ (after an error), one in the pool (rejected by NodeAffinity) and one
  // gated, in a queue that registers NodeAffinity and gates on scheduling gates.
  static Spread SpreadPods(SchedulingQueue& q) {
    Spread spread{PodBuilder("backoff").Priority(2).Build(), PodBuilder("pool").Priority(1).Build(),
                  PodBuilder("gated").SchedulingGate("g").Build()};
    q.Add(spread.backoff);
    q.Add(spread.pool);
    q.AddUnschedulableIfNotPresent(q.Pop(), true);
    PopAndReject(q, "pool", {"NodeAffinity"});
    q.Add(spread.gated);
    return spread;
  }

  static void ExpectCounts(const SchedulingQueue& q, size_t active, size_t backoff,
                           size_t unschedulable, size_t gated) {
    SchedulingQueue::Counts c = q.PendingPods();
    EXPECT_EQ(c.active, active) << "active";
    EXPECT_EQ(c.backoff, backoff) << "backoff";
    EXPECT_EQ(c.unschedulable, unschedulable) << "unschedulable";
    EXPECT_EQ(c.gated, gated) << "gated";
  }

  std::shared_ptr<util::FakeClock> clock_ = std::make_shared<util::FakeClock>();
};

// ---- Ordering ----

TEST_F(SchedulingQueueTest, PopReturnsHighestPriorityThenOldest) {
  auto q = MakeQueue();
  q->Add(PodBuilder("low").Priority(1).Build());
  clock_->Step(milliseconds(1));
  q->Add(PodBuilder("high").Priority(10).Build());
  clock_->Step(milliseconds(1));
  q->Add(PodBuilder("mid-first").Priority(5).Build());
  clock_->Step(milliseconds(1));
  q->Add(PodBuilder("mid-second").Priority(5).Build());
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(q->Pop()->pod().meta.name);
  // Equal priorities: the pod queued first goes first.
  EXPECT_EQ(order, (std::vector<std::string>{"high", "mid-first", "mid-second", "low"}));
}

TEST_F(SchedulingQueueTest, PopCountsAttemptsAndCycles) {
  auto q = MakeQueue();
  q->Add(PodBuilder("a").Build());
  EXPECT_EQ(q->SchedulingCycle(), 0);
  QueuedPodInfoPtr pinfo = q->Pop();
  EXPECT_EQ(pinfo->attempts, 1);
  EXPECT_EQ(q->SchedulingCycle(), 1);
  EXPECT_TRUE(pinfo->initial_attempt_set);
  EXPECT_EQ(q->InFlightPodUids(), (std::vector<std::string>{pinfo->pod().meta.uid}));
  q->Done(pinfo->pod().meta.uid);
  EXPECT_TRUE(q->InFlightPodUids().empty());
}

// ---- Backoff ----

TEST_F(SchedulingQueueTest, BackoffDoublesAndIsCapped) {
  auto q = MakeQueue();
  EXPECT_EQ(q->BackoffDuration(0), milliseconds(0));
  q->Add(PodBuilder("p").Build());
  const std::vector<int> expected_seconds = {1, 2, 4, 8, 10, 10, 10};
  for (size_t i = 0; i < expected_seconds.size(); ++i) {
    SCOPED_TRACE("attempt " + std::to_string(i + 1));
    const milliseconds expected = seconds(expected_seconds[i]);
    QueuedPodInfoPtr pinfo = q->Pop();
    ASSERT_EQ(pinfo->attempts, static_cast<int>(i + 1));
    EXPECT_EQ(q->BackoffDuration(pinfo->attempts), expected);
    q->AddUnschedulableIfNotPresent(pinfo, /*had_error=*/true);
    ExpectCounts(*q, 0, 1, 0, 0);

    clock_->Step(expected - milliseconds(1));
    q->FlushBackoffQCompleted();
    ExpectCounts(*q, 0, 1, 0, 0);
    clock_->Step(milliseconds(1));
    q->FlushBackoffQCompleted();
    ExpectCounts(*q, 1, 0, 0, 0);
  }
}

TEST_F(SchedulingQueueTest, BackoffQFlushesInExpiryOrder) {
  auto q = MakeQueue();
  q->Add(PodBuilder("twice").Priority(10).Build());
  q->Add(PodBuilder("once").Priority(1).Build());
  // "twice" fails twice (2s backoff), "once" fails once (1s backoff).
  QueuedPodInfoPtr twice = q->Pop();
  q->AddUnschedulableIfNotPresent(twice, true);
  clock_->Step(seconds(1));
  q->FlushBackoffQCompleted();
  EXPECT_EQ(q->Pop()->pod().meta.name, "twice");
  q->AddUnschedulableIfNotPresent(twice, true);
  QueuedPodInfoPtr once = q->Pop();
  EXPECT_EQ(once->pod().meta.name, "once");
  q->AddUnschedulableIfNotPresent(once, true);

  clock_->Step(seconds(1));
  q->FlushBackoffQCompleted();
  EXPECT_EQ(Names(q->PodsInActiveQ()), (std::vector<std::string>{"once"}));
  EXPECT_EQ(Names(q->PodsInBackoffQ()), (std::vector<std::string>{"twice"}));
  clock_->Step(seconds(1));
  q->FlushBackoffQCompleted();
  EXPECT_EQ(Names(q->PodsInActiveQ()), (std::vector<std::string>{"once", "twice"}));
}

// A pod a plugin rejected is taken from backoffQ when activeQ is empty (upstream
// SchedulerPopFromBackoffQ), after any pod of activeQ; a pod that failed with an error waits out
// its backoff.
TEST_F(SchedulingQueueTest, PopTakesRejectedPodsFromBackoffQOnlyWhenActiveQIsEmpty) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}});
  q->Add(PodBuilder("rejected").Priority(10).Build());
  q->Add(PodBuilder("failed").Priority(5).Build());
  PopAndReject(*q, "rejected", {"NodeAffinity"});
  q->AddUnschedulableIfNotPresent(q->Pop(), /*had_error=*/true);
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 2, 0, 0);
  q->Add(PodBuilder("new").Priority(1).Build());

  EXPECT_EQ(q->Pop()->pod().meta.name, "new");
  QueuedPodInfoPtr early = q->Pop();
  EXPECT_EQ(early->pod().meta.name, "rejected");
  EXPECT_EQ(early->attempts, 2);
  ExpectCounts(*q, 0, 1, 0, 0);
  auto blocked = std::async(std::launch::async, [&] { return q->Pop(); });
  EXPECT_EQ(blocked.wait_for(milliseconds(50)), std::future_status::timeout)
      << "a pod that failed with an error was popped during its backoff";
  clock_->Step(seconds(1));
  q->FlushBackoffQCompleted();
  EXPECT_EQ(blocked.get()->pod().meta.name, "failed");
}

// Since Pop may take a pod straight from backoffQ, a pod is admitted by its PreEnqueue plugins
// on its way in, not only on its way to activeQ.
TEST_F(SchedulingQueueTest, PodGatedOnItsWayIntoBackoffQStaysInThePool) {
  std::atomic<bool> admit{true};
  auto pre_enqueue = [&](const api::Pod&) {
    if (admit) return framework::Status::Success();
    framework::Status status(framework::Code::kUnschedulableAndUnresolvable, "busy");
    status.WithPlugin("DefaultPreemption");
    return status;
  };
  auto q = MakeQueue({{kProfile,
                       {Entry("NodeResourcesFit", EventResource::kPod, framework::kDelete),
                        Entry("DefaultPreemption", EventResource::kPod, framework::kDelete,
                              Returns(QueueingHint::kSkip))}}},
                     pre_enqueue);
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeResourcesFit"});
  admit = false;
  const ClusterEvent pod_delete{EventResource::kPod, framework::kDelete, "AssignedPodDelete"};
  q->MoveAllToActiveOrBackoffQueue(pod_delete, {});
  ExpectCounts(*q, 0, 0, 0, 1);
  admit = true;
  q->MoveAllToActiveOrBackoffQueue(pod_delete, {});
  ExpectCounts(*q, 0, 1, 0, 0);
  EXPECT_EQ(q->Pop()->pod().meta.name, "p");
}

// ---- The unschedulable pool and queueing hints ----

TEST_F(SchedulingQueueTest, RejectedPodWaitsForMatchingEventWhoseHintQueues) {
  // NodeAffinity only cares about nodes labelled zone=a.
  auto hint = [](const api::Pod&, const EventObjects& objects) {
    const std::string* zone =
        objects.new_node ? objects.new_node->meta.labels.Find("zone") : nullptr;
    return zone && *zone == "a" ? QueueingHint::kQueue : QueueingHint::kSkip;
  };
  auto q = MakeQueue({{kProfile,
                       {Entry("NodeAffinity", EventResource::kNode, framework::kAdd, hint),
                        Entry("Other", EventResource::kPod, framework::kAdd)}}});
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeAffinity"});
  ExpectCounts(*q, 0, 0, 1, 0);

  // An event of interest to another plugin only.
  q->MoveAllToActiveOrBackoffQueue(kAssignedPodAdd, {});
  ExpectCounts(*q, 0, 0, 1, 0);
  // The right event, but the hint says the new node does not help.
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n1").Build()));
  ExpectCounts(*q, 0, 0, 1, 0);
  // A node in zone a: the pod moves, to backoffQ while its 1s backoff runs.
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd,
                                   NodeObjects(NodeBuilder("n2").Label("zone", "a").Build()));
  ExpectCounts(*q, 0, 1, 0, 0);
}

TEST_F(SchedulingQueueTest, MovedPodSkipsBackoffQWhenBackoffExpired) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}});
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeAffinity"});
  clock_->Step(seconds(1));
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 1, 0, 0, 0);
  EXPECT_EQ(q->Pop()->pod().meta.name, "p");
}

TEST_F(SchedulingQueueTest, SkipHintLeavesPodInPool) {
  auto q = MakeQueue({{kProfile,
                       {Entry("NodeAffinity", EventResource::kNode, framework::kAdd,
                              Returns(QueueingHint::kSkip))}}});
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeAffinity"});
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 0, 1, 0);
}

TEST_F(SchedulingQueueTest, OnlyRejectingPluginsHintsAreConsulted) {
  // Fit would queue on a node add, but Fit did not reject the pod.
  auto q =
      MakeQueue({{kProfile,
                  {Entry("Fit", EventResource::kNode, framework::kAdd),
                   Entry("NodeAffinity", EventResource::kNode, framework::kUpdateNodeLabel)}}});
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeAffinity"});
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 0, 1, 0);
  q->MoveAllToActiveOrBackoffQueue(
      ClusterEvent{EventResource::kNode, framework::kUpdateNodeLabel, "NodeUpdate"},
      NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 1, 0, 0);
}

// In a pool of pods rejected by different plugins, an event moves exactly the pods one of whose
// rejectors (unschedulable or pending) registered it, whichever of their rejectors that is.
TEST_F(SchedulingQueueTest, EventMovesThePodsAnyOfWhoseRejectorsRegisteredIt) {
  auto q = MakeQueue({{kProfile,
                       {Entry("Zeta", EventResource::kNode, framework::kAdd),
                        Entry("Alpha", EventResource::kPod, framework::kAdd)}}});
  const std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> rejectors = {
      {"a", {{"Alpha", "Beta"}, {}}},
      {"b", {{"Beta", "Zeta"}, {}}},
      {"c", {{"Beta"}, {"Zeta"}}},
      {"d", {{"Alpha"}, {}}}};
  for (const auto& [name, plugins] : rejectors) {
    q->Add(PodBuilder(name).Build());
    PopAndReject(*q, name, plugins.first, plugins.second);
  }
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  EXPECT_EQ(Names(q->UnschedulablePods()), (std::vector<std::string>{"a", "d"}));
  q->MoveAllToActiveOrBackoffQueue(kAssignedPodAdd, {});
  EXPECT_TRUE(q->UnschedulablePods().empty());
}

TEST_F(SchedulingQueueTest, ErrorGoesToBackoffQNotPool) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}});
  q->Add(PodBuilder("p").Build());
  QueuedPodInfoPtr pinfo = q->Pop();
  pinfo->unschedulable_plugins = {"NodeAffinity"};  // Stale from an earlier attempt.
  q->AddUnschedulableIfNotPresent(pinfo, /*had_error=*/true);
  ExpectCounts(*q, 0, 1, 0, 0);
  EXPECT_TRUE(pinfo->unschedulable_plugins.empty());
}

TEST_F(SchedulingQueueTest, PodWithoutRejectorsMovesOnAnyEvent) {
  // Only "Other" registers the event, and its hint says Skip; a pod rejected by no plugin
  // moves anyway.
  auto q = MakeQueue(
      {{kProfile,
        {Entry("NodeAffinity", EventResource::kNode, framework::kAdd),
         Entry("Other", EventResource::kPod, framework::kAdd, Returns(QueueingHint::kSkip))}}});
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeAffinity"});
  ASSERT_EQ(q->UnschedulablePods().size(), 1u);
  // The pool's pod loses its rejectors (nothing in the queue does this; the test reaches in to
  // get a pod without rejectors into the pool).
  q->UnschedulablePods()[0]->unschedulable_plugins.clear();
  q->MoveAllToActiveOrBackoffQueue(kAssignedPodAdd, {});
  ExpectCounts(*q, 0, 1, 0, 0);
}

TEST_F(SchedulingQueueTest, EventOfNoInterestMovesNothing) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}});
  q->Add(PodBuilder("p").Build());
  QueuedPodInfoPtr pinfo = PopAndReject(*q, "p", {"NodeAffinity"});
  pinfo->unschedulable_plugins.clear();
  // No plugin registered assigned-pod events: not even a pod without rejectors moves.
  q->MoveAllToActiveOrBackoffQueue(kAssignedPodAdd, {});
  ExpectCounts(*q, 0, 0, 1, 0);
}

TEST_F(SchedulingQueueTest, PendingPluginQueueSkipsBackoff) {
  auto q = MakeQueue({{kProfile,
                       {Entry("Volume", EventResource::kPersistentVolumeClaim, framework::kAdd),
                        Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}});
  q->Add(PodBuilder("pending").Priority(2).Build());
  q->Add(PodBuilder("rejected").Priority(1).Build());
  PopAndReject(*q, "pending", {}, {"Volume"});
  PopAndReject(*q, "rejected", {"NodeAffinity"});
  // Both are within their 1s backoff.
  q->MoveAllToActiveOrBackoffQueue(
      ClusterEvent{EventResource::kPersistentVolumeClaim, framework::kAdd, "PVCAdd"}, {});
  EXPECT_EQ(Names(q->PodsInActiveQ()), (std::vector<std::string>{"pending"}));
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  EXPECT_EQ(Names(q->PodsInBackoffQ()), (std::vector<std::string>{"rejected"}));
}

TEST_F(SchedulingQueueTest, ThrowingHintCountsAsQueue) {
  auto q = MakeQueue({{kProfile,
                       {Entry("NodeAffinity", EventResource::kNode, framework::kAdd,
                              [](const api::Pod&, const EventObjects&) -> QueueingHint {
                                throw std::runtime_error("boom");
                              })}}});
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeAffinity"});
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 1, 0, 0);
}

TEST_F(SchedulingQueueTest, HintsAreLookedUpInThePodsProfile) {
  auto q = MakeQueue({{"other-profile",
                       {Entry("NodeAffinity", EventResource::kNode, framework::kAdd,
                              Returns(QueueingHint::kQueue))}},
                      {kProfile,
                       {Entry("NodeAffinity", EventResource::kNode, framework::kAdd,
                              Returns(QueueingHint::kSkip))}}});
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {"NodeAffinity"});
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 0, 1, 0);
}

TEST_F(SchedulingQueueTest, WildcardEventMovesRejectedPodsAndCanTargetOne) {
  auto q = MakeQueue({{kProfile,
                       {Entry("NodeAffinity", EventResource::kNode, framework::kAdd,
                              Returns(QueueingHint::kSkip))}}});
  q->Add(PodBuilder("a").Priority(2).Build());
  q->Add(PodBuilder("b").Priority(1).Build());
  PopAndReject(*q, "a", {"NodeAffinity"});
  PopAndReject(*q, "b", {"NodeAffinity"});
  api::PodPtr b = PodBuilder("b").Build();
  EventObjects b_changed;
  b_changed.new_pod = b;
  q->MoveAllToActiveOrBackoffQueue(kWildcard, b_changed);
  EXPECT_EQ(Names(q->PodsInBackoffQ()), (std::vector<std::string>{"b"}));
  q->MoveAllToActiveOrBackoffQueue(kWildcard, {});
  EXPECT_EQ(Names(q->PodsInBackoffQ()), (std::vector<std::string>{"a", "b"}));
}

// ---- Gated pods ----

TEST_F(SchedulingQueueTest, GatedPodIsCountedAndNeverPopped) {
  auto q = MakeQueue({{kProfile,
                       {Entry("SchedulingGates", EventResource::kUnscheduledPod,
                              framework::kUpdatePodSchedulingGatesEliminated),
                        Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}},
                     GateOnSchedulingGates);
  q->Add(PodBuilder("gated").SchedulingGate("example.com/wait").Priority(100).Build());
  q->Add(PodBuilder("free").Build());
  ExpectCounts(*q, 1, 0, 0, 1);
  ASSERT_EQ(q->UnschedulablePods().size(), 1u);
  EXPECT_EQ(q->UnschedulablePods()[0]->gating_plugin, "SchedulingGates");

  EXPECT_EQ(q->Pop()->pod().meta.name, "free");
  // Nothing else can be popped: the gated pod never enters activeQ, not on events its gating
  // plugin did not register, not on backoff or leftover flushes.
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  q->MoveAllToActiveOrBackoffQueue(kWildcard, {});
  clock_->Step(minutes(10));
  q->FlushBackoffQCompleted();
  q->FlushUnschedulablePodsLeftover();
  ExpectCounts(*q, 0, 0, 0, 1);
  auto popped = std::async(std::launch::async, [&] { return q->Pop(); });
  EXPECT_EQ(popped.wait_for(milliseconds(50)), std::future_status::timeout);
  q->Close();
  EXPECT_EQ(popped.get(), nullptr);
}

TEST_F(SchedulingQueueTest, UpdateRemovingGateUngatesPod) {
  auto q = MakeQueue({}, GateOnSchedulingGates);
  PodBuilder gated("p");
  gated.SchedulingGate("example.com/wait");
  api::PodPtr v1 = gated.Build();
  q->Add(v1);
  ExpectCounts(*q, 0, 0, 0, 1);

  // Still gated after an unrelated change.
  PodBuilder relabelled("p");
  relabelled.SchedulingGate("example.com/wait").Label("x", "y");
  api::PodPtr v2 = relabelled.Build();
  q->Update(v1, v2);
  ExpectCounts(*q, 0, 0, 0, 1);

  api::PodPtr v3 = PodBuilder("p").Label("x", "y").Build();
  q->Update(v2, v3);
  ExpectCounts(*q, 1, 0, 0, 0);
  QueuedPodInfoPtr pinfo = q->Pop();
  EXPECT_EQ(pinfo->pod_info->pod, v3);
  EXPECT_TRUE(pinfo->gating_plugin.empty());
  EXPECT_EQ(pinfo->attempts, 1);
}

TEST_F(SchedulingQueueTest, GatedPodRerunsPreEnqueueOnlyOnGatingPluginEventWithQueueHint) {
  std::atomic<bool> admit{false};
  std::atomic<bool> hint_queues{false};
  auto pre_enqueue = [&](const api::Pod&) {
    if (admit) return framework::Status::Success();
    framework::Status status(framework::Code::kUnschedulable, "quota exhausted");
    status.WithPlugin("Quota");
    return status;
  };
  auto hint = [&](const api::Pod&, const EventObjects&) {
    return hint_queues ? QueueingHint::kQueue : QueueingHint::kSkip;
  };
  auto q = MakeQueue({{kProfile,
                       {Entry("Quota", EventResource::kNode, framework::kAdd, hint),
                        Entry("Other", EventResource::kPod, framework::kAdd)}}},
                     pre_enqueue);
  q->Add(PodBuilder("p").Build());
  ExpectCounts(*q, 0, 0, 0, 1);

  admit = true;
  // Registered by another plugin only.
  q->MoveAllToActiveOrBackoffQueue(kAssignedPodAdd, {});
  ExpectCounts(*q, 0, 0, 0, 1);
  // A wildcard moves rejected pods, not gated ones (the gating plugin did not register it).
  q->MoveAllToActiveOrBackoffQueue(kWildcard, {});
  ExpectCounts(*q, 0, 0, 0, 1);
  // Registered by the gating plugin, whose hint says Skip.
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 0, 0, 1);
  // Hint says Queue, but PreEnqueue still rejects: stays gated.
  admit = false;
  hint_queues = true;
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 0, 0, 1);
  admit = true;
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 1, 0, 0, 0);
}

TEST_F(SchedulingQueueTest, GatedPodNeverEntersBackoffQ) {
  std::atomic<bool> admit{true};
  auto pre_enqueue = [&](const api::Pod&) {
    if (admit) return framework::Status::Success();
    framework::Status status(framework::Code::kUnschedulable, "no");
    status.WithPlugin("Quota");
    return status;
  };
  auto q = MakeQueue({{kProfile,
                       {Entry("Volume", EventResource::kPersistentVolumeClaim, framework::kAdd),
                        Entry("Quota", EventResource::kNode, framework::kAdd)}}},
                     pre_enqueue);
  q->Add(PodBuilder("p").Build());
  PopAndReject(*q, "p", {}, {"Volume"});
  admit = false;
  // The Pending plugin's event sends the pod straight towards activeQ, where it is gated while
  // its 1s backoff still runs.
  q->MoveAllToActiveOrBackoffQueue(
      ClusterEvent{EventResource::kPersistentVolumeClaim, framework::kAdd, "PVCAdd"}, {});
  ExpectCounts(*q, 0, 0, 0, 1);
  // The gating plugin's event: PreEnqueue still says no, so it stays gated rather than going
  // to backoffQ as a backing-off pod would.
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 0, 0, 1);
  admit = true;
  q->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  ExpectCounts(*q, 0, 1, 0, 0);
}

TEST_F(SchedulingQueueTest, PodGatedWhenLeavingBackoffReturnsToPool) {
  std::atomic<bool> admit{true};
  auto pre_enqueue = [&](const api::Pod&) {
    if (admit) return framework::Status::Success();
    framework::Status status(framework::Code::kUnschedulable, "no");
    status.WithPlugin("Quota");
    return status;
  };
  auto q = MakeQueue({}, pre_enqueue);
  q->Add(PodBuilder("p").Build());
  q->AddUnschedulableIfNotPresent(q->Pop(), true);
  admit = false;
  clock_->Step(seconds(1));
  q->FlushBackoffQCompleted();
  ExpectCounts(*q, 0, 0, 0, 1);
}

// ---- Update ----

TEST_F(SchedulingQueueTest, UpdateInActiveQReplacesPodAndReorders) {
  auto q = MakeQueue();
  api::PodPtr a1 = PodBuilder("a").Priority(1).Build();
  q->Add(a1);
  const util::Clock::TimePoint added = clock_->Now();
  q->Add(PodBuilder("b").Priority(5).Build());
  clock_->Step(seconds(3));
  api::PodPtr a2 = PodBuilder("a").Priority(10).Build();
  q->Update(a1, a2);
  ExpectCounts(*q, 2, 0, 0, 0);
  QueuedPodInfoPtr pinfo = q->Pop();
  EXPECT_EQ(pinfo->pod_info->pod, a2);
  EXPECT_EQ(pinfo->timestamp, added);
  EXPECT_EQ(pinfo->initial_attempt_timestamp, added);
}

TEST_F(SchedulingQueueTest, UpdateInBackoffQKeepsAttemptsAndBackoff) {
  auto q = MakeQueue();
  api::PodPtr v1 = PodBuilder("p").Build();
  q->Add(v1);
  q->AddUnschedulableIfNotPresent(q->Pop(), true);
  api::PodPtr v2 = PodBuilder("p").Label("k", "v").Build();
  q->Update(v1, v2);
  ExpectCounts(*q, 0, 1, 0, 0);
  ASSERT_EQ(q->PodsInBackoffQ().size(), 1u);
  EXPECT_EQ(q->PodsInBackoffQ()[0]->attempts, 1);
  EXPECT_EQ(q->PodsInBackoffQ()[0]->pod_info->pod, v2);
  clock_->Step(seconds(1));
  q->FlushBackoffQCompleted();
  ExpectCounts(*q, 1, 0, 0, 0);
}

TEST_F(SchedulingQueueTest, UpdateInPoolMovesOnlyOnChangesTheHintsCareAbout) {
  auto q = MakeQueue(
      {{kProfile,
        {Entry("InterPodAffinity", EventResource::kUnscheduledPod, framework::kUpdatePodLabel)}}});
  api::PodPtr v1 = PodBuilder("p").Build();
  q->Add(v1);
  PopAndReject(*q, "p", {"InterPodAffinity"});

  // Status and resourceVersion only: not an update that matters.
  PodBuilder status_only("p");
  status_only.pod().meta.resource_version = "2";
  status_only.pod().status.phase = "Pending";
  status_only.pod().status.conditions.push_back({"PodScheduled", "False", "Unschedulable", ""});
  api::PodPtr v2 = status_only.Build();
  q->Update(v1, v2);
  ExpectCounts(*q, 0, 0, 1, 0);
  ASSERT_EQ(q->UnschedulablePods().size(), 1u);
  EXPECT_EQ(q->UnschedulablePods()[0]->pod_info->pod, v2);

  // A toleration: the plugin registered label changes only.
  api::PodPtr v3 = PodBuilder("p").Toleration(api::Toleration{}).Build();
  q->Update(v2, v3);
  ExpectCounts(*q, 0, 0, 1, 0);

  api::PodPtr v4 = PodBuilder("p").Toleration(api::Toleration{}).Label("app", "web").Build();
  q->Update(v3, v4);
  ExpectCounts(*q, 0, 1, 0, 0);
  ASSERT_EQ(q->PodsInBackoffQ().size(), 1u);
  EXPECT_EQ(q->PodsInBackoffQ()[0]->pod_info->pod, v4);
}

TEST_F(SchedulingQueueTest, UpdateOfUnknownPodAddsIt) {
  auto q = MakeQueue();
  api::PodPtr v2 = PodBuilder("p").Build();
  q->Update(nullptr, v2);
  ExpectCounts(*q, 1, 0, 0, 0);
}

TEST_F(SchedulingQueueTest, RepeatedAddKeepsQueueState) {
  auto q = MakeQueue();
  api::PodPtr v1 = PodBuilder("p").Build();
  q->Add(v1);
  q->AddUnschedulableIfNotPresent(q->Pop(), true);
  q->Add(PodBuilder("p").Build());
  ExpectCounts(*q, 0, 1, 0, 0);
  ASSERT_EQ(q->PodsInBackoffQ().size(), 1u);
  EXPECT_EQ(q->PodsInBackoffQ()[0]->attempts, 1);
}

// ---- Events during the scheduling cycle ----

class InFlightTest : public SchedulingQueueTest {
 protected:
  void SetUp() override {
    q_ = MakeQueue({{kProfile,
                     {Entry("NodeAffinity", EventResource::kNode, framework::kAdd,
                            [](const api::Pod&, const EventObjects& objects) {
                              return objects.new_node &&
                                             objects.new_node->meta.labels.Contains("useful")
                                         ? QueueingHint::kQueue
                                         : QueueingHint::kSkip;
                            }),
                      Entry("InterPodAffinity", EventResource::kUnscheduledPod,
                            framework::kUpdatePodLabel)}}});
  }
  void Reject(const QueuedPodInfoPtr& pinfo, const std::string& plugin) {
    pinfo->unschedulable_plugins = {plugin};
    q_->AddUnschedulableIfNotPresent(pinfo, false);
  }
  std::unique_ptr<SchedulingQueue> q_;
};

TEST_F(InFlightTest, EventDuringCycleRequeuesOnFailure) {
  q_->Add(PodBuilder("p").Build());
  QueuedPodInfoPtr pinfo = q_->Pop();
  q_->MoveAllToActiveOrBackoffQueue(kNodeAdd,
                                    NodeObjects(NodeBuilder("n").Label("useful", "").Build()));
  EXPECT_EQ(q_->InFlightEventCount(), 1u);
  Reject(pinfo, "NodeAffinity");
  ExpectCounts(*q_, 0, 1, 0, 0);
  EXPECT_EQ(q_->InFlightEventCount(), 0u);
  EXPECT_TRUE(q_->InFlightPodUids().empty());
}

TEST_F(InFlightTest, EventDuringCycleGoesToActiveQWhenBackoffExpired) {
  q_->Add(PodBuilder("p").Build());
  QueuedPodInfoPtr pinfo = q_->Pop();
  q_->MoveAllToActiveOrBackoffQueue(kNodeAdd,
                                    NodeObjects(NodeBuilder("n").Label("useful", "").Build()));
  pinfo->unschedulable_plugins = {"NodeAffinity"};
  // The backoff runs from the failure, so it cannot have expired at requeue time: the pod goes
  // to backoffQ, and the flush moves it once 1s passed.
  q_->AddUnschedulableIfNotPresent(pinfo, false);
  clock_->Step(seconds(1));
  q_->FlushBackoffQCompleted();
  ExpectCounts(*q_, 1, 0, 0, 0);
}

TEST_F(InFlightTest, NoOrUselessEventDuringCycleParksPod) {
  q_->Add(PodBuilder("quiet").Priority(2).Build());
  q_->Add(PodBuilder("skipped").Priority(1).Build());
  QueuedPodInfoPtr quiet = q_->Pop();
  Reject(quiet, "NodeAffinity");
  ExpectCounts(*q_, 1, 0, 1, 0);

  QueuedPodInfoPtr skipped = q_->Pop();
  q_->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  Reject(skipped, "NodeAffinity");
  ExpectCounts(*q_, 0, 0, 2, 0);
}

TEST_F(InFlightTest, OnlyEventsAfterThePodWasPoppedCount) {
  q_->Add(PodBuilder("first").Priority(2).Build());
  q_->Add(PodBuilder("second").Priority(1).Build());
  QueuedPodInfoPtr first = q_->Pop();
  q_->MoveAllToActiveOrBackoffQueue(kNodeAdd,
                                    NodeObjects(NodeBuilder("n").Label("useful", "").Build()));
  QueuedPodInfoPtr second = q_->Pop();

  Reject(second, "NodeAffinity");
  EXPECT_EQ(Names(q_->UnschedulablePods()), (std::vector<std::string>{"second"}));
  // "first" is still in flight and needs the event.
  EXPECT_EQ(q_->InFlightEventCount(), 1u);
  Reject(first, "NodeAffinity");
  EXPECT_EQ(Names(q_->PodsInBackoffQ()), (std::vector<std::string>{"first"}));
  EXPECT_EQ(q_->InFlightEventCount(), 0u);
}

TEST_F(InFlightTest, EventsArePrunedWhenNoPodNeedsThem) {
  q_->Add(PodBuilder("p").Build());
  q_->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  EXPECT_EQ(q_->InFlightEventCount(), 0u);  // Nothing in flight: nothing kept.
  QueuedPodInfoPtr pinfo = q_->Pop();
  q_->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  q_->MoveAllToActiveOrBackoffQueue(kNodeAdd, NodeObjects(NodeBuilder("n").Build()));
  EXPECT_EQ(q_->InFlightEventCount(), 2u);
  q_->Done(pinfo->pod().meta.uid);
  EXPECT_EQ(q_->InFlightEventCount(), 0u);
}

TEST_F(InFlightTest, OwnUpdateDuringCycleIsReplayedForThatPodOnly) {
  q_->Add(PodBuilder("updated").Priority(2).Build());
  q_->Add(PodBuilder("other").Priority(1).Build());
  QueuedPodInfoPtr updated = q_->Pop();
  QueuedPodInfoPtr other = q_->Pop();
  api::PodPtr relabelled = PodBuilder("updated").Priority(2).Label("app", "web").Build();
  q_->Update(updated->pod_info->pod, relabelled);
  ExpectCounts(*q_, 0, 0, 0, 0);

  Reject(other, "InterPodAffinity");
  EXPECT_EQ(Names(q_->UnschedulablePods()), (std::vector<std::string>{"other"}));
  Reject(updated, "InterPodAffinity");
  EXPECT_EQ(Names(q_->PodsInBackoffQ()), (std::vector<std::string>{"updated"}));
  // Requeued as the newest version.
  ASSERT_EQ(q_->PodsInBackoffQ().size(), 1u);
  EXPECT_EQ(q_->PodsInBackoffQ()[0]->pod_info->pod, relabelled);
}

TEST_F(InFlightTest, PodDeletedDuringCycleIsNotRequeued) {
  api::PodPtr pod = PodBuilder("p").Build();
  q_->Add(pod);
  QueuedPodInfoPtr pinfo = q_->Pop();
  q_->Delete(*pod);
  Reject(pinfo, "NodeAffinity");
  ExpectCounts(*q_, 0, 0, 0, 0);
  EXPECT_TRUE(q_->InFlightPodUids().empty());
}

// ---- Unschedulable timeout ----

TEST_F(SchedulingQueueTest, PoolFlushMovesPodsAfterMaxInUnschedulable) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}});
  q->Add(PodBuilder("old").Priority(2).Build());
  q->Add(PodBuilder("young").Priority(1).Build());
  PopAndReject(*q, "old", {"NodeAffinity"});
  clock_->Step(minutes(1));
  PopAndReject(*q, "young", {"NodeAffinity"});

  clock_->Step(minutes(4));  // "old" has waited exactly 5 minutes.
  q->FlushUnschedulablePodsLeftover();
  ExpectCounts(*q, 0, 0, 2, 0);
  clock_->Step(milliseconds(1));
  q->FlushUnschedulablePodsLeftover();
  EXPECT_EQ(Names(q->PodsInActiveQ()), (std::vector<std::string>{"old"}));
  EXPECT_EQ(Names(q->UnschedulablePods()), (std::vector<std::string>{"young"}));
}

// ---- Delete ----

TEST_F(SchedulingQueueTest, DeleteRemovesFromEveryStructure) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}},
                     GateOnSchedulingGates);
  PodBuilder nominated("active");
  nominated.pod().status.nominated_node_name = "n1";
  api::PodPtr active = nominated.Priority(0).Build();
  auto [backoff, pool, gated] = SpreadPods(*q);
  q->Add(active);
  ExpectCounts(*q, 1, 1, 1, 1);
  EXPECT_EQ(q->nominator().NominatedPodsForNode("n1").size(), 1u);

  q->Delete(*active);
  ExpectCounts(*q, 0, 1, 1, 1);
  EXPECT_TRUE(q->nominator().NominatedPodsForNode("n1").empty());
  q->Delete(*backoff);
  ExpectCounts(*q, 0, 0, 1, 1);
  q->Delete(*pool);
  ExpectCounts(*q, 0, 0, 0, 1);
  q->Delete(*gated);
  ExpectCounts(*q, 0, 0, 0, 0);
}

// ---- Activate ----

TEST_F(SchedulingQueueTest, ActivateMovesPooledAndBackingOffPodsToActiveQAtOnce) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}},
                     GateOnSchedulingGates);
  auto [backoff, pool, gated] = SpreadPods(*q);
  ExpectCounts(*q, 0, 1, 1, 1);

  // Neither an event nor the end of the backoff is needed; a gated pod stays gated.
  q->Activate({backoff->meta.uid, pool->meta.uid, gated->meta.uid, "no-such-uid"});
  ExpectCounts(*q, 2, 0, 0, 1);
  EXPECT_EQ(q->Pop()->pod().meta.name, "backoff");
  EXPECT_EQ(q->Pop()->pod().meta.name, "pool");
}

TEST_F(SchedulingQueueTest, ActivateMovesWaitingPodsToActiveQAndRequeuesAPodInFlight) {
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}});
  api::PodPtr pooled = PodBuilder("pooled").Priority(3).Build();
  api::PodPtr erred = PodBuilder("erred").Priority(2).Build();
  api::PodPtr flying = PodBuilder("flying").Priority(1).Build();
  for (const auto& pod : {pooled, erred, flying}) q->Add(pod);
  PopAndReject(*q, "pooled", {"NodeAffinity"});
  q->AddUnschedulableIfNotPresent(q->Pop(), /*had_error=*/true);
  QueuedPodInfoPtr in_flight = q->Pop();
  ExpectCounts(*q, 0, 1, 1, 0);

  q->Activate({pooled->meta.uid, erred->meta.uid, flying->meta.uid, "unknown-uid"});
  ExpectCounts(*q, 2, 0, 0, 0);
  EXPECT_EQ(Names(q->PodsInActiveQ()), (std::vector<std::string>{"erred", "pooled"}));
  // No event its rejector cares about arrived, yet it is not parked in the pool.
  in_flight->unschedulable_plugins = {"NodeAffinity"};
  q->AddUnschedulableIfNotPresent(in_flight, false);
  ExpectCounts(*q, 2, 1, 0, 0);
}

// ---- Blocking and the flush threads ----

TEST_F(SchedulingQueueTest, PopBlocksUntilAddFromAnotherThread) {
  auto q = MakeQueue();
  auto popped = std::async(std::launch::async, [&] { return q->Pop(); });
  EXPECT_EQ(popped.wait_for(milliseconds(50)), std::future_status::timeout);
  std::thread adder([&] { q->Add(PodBuilder("p").Build()); });
  ASSERT_EQ(popped.wait_for(seconds(10)), std::future_status::ready);
  adder.join();
  QueuedPodInfoPtr pinfo = popped.get();
  ASSERT_NE(pinfo, nullptr);
  EXPECT_EQ(pinfo->pod().meta.name, "p");
}

TEST_F(SchedulingQueueTest, CloseUnblocksPopAndPopReturnsNullAfterwards) {
  auto q = MakeQueue();
  auto popped = std::async(std::launch::async, [&] { return q->Pop(); });
  EXPECT_EQ(popped.wait_for(milliseconds(50)), std::future_status::timeout);
  q->Close();
  ASSERT_EQ(popped.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_EQ(popped.get(), nullptr);
  q->Add(PodBuilder("late").Build());
  EXPECT_EQ(q->Pop(), nullptr);
  q->Close();  // Idempotent.
}

TEST_F(SchedulingQueueTest, RunFlushesBackoffQAndPoolInTheBackground) {
  QueueOptions options;
  options.backoff_flush_period = milliseconds(2);
  options.unschedulable_flush_period = milliseconds(2);
  auto q = MakeQueue({{kProfile, {Entry("NodeAffinity", EventResource::kNode, framework::kAdd)}}},
                     nullptr, options);
  q->Run();
  q->Add(PodBuilder("p").Build());
  q->AddUnschedulableIfNotPresent(q->Pop(), true);
  clock_->Step(seconds(1));
  auto popped = std::async(std::launch::async, [&] { return q->Pop(); });
  ASSERT_EQ(popped.wait_for(seconds(10)), std::future_status::ready);
  QueuedPodInfoPtr pinfo = popped.get();
  ASSERT_NE(pinfo, nullptr);

  pinfo->unschedulable_plugins = {"NodeAffinity"};
  q->AddUnschedulableIfNotPresent(pinfo, false);
  ExpectCounts(*q, 0, 0, 1, 0);
  clock_->Step(minutes(6));
  popped = std::async(std::launch::async, [&] { return q->Pop(); });
  ASSERT_EQ(popped.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_NE(popped.get(), nullptr);
  q->Close();
}

// ---- Event classification ----

TEST(PodEventsTest, IsPodUpdatedIgnoresStatusAndResourceVersion) {
  PodBuilder base("p");
  api::PodPtr v1 = base.Build();
  base.pod().meta.resource_version = "7";
  base.pod().meta.generation = 3;
  base.pod().status.nominated_node_name = "n";
  base.pod().status.phase = "Pending";
  EXPECT_FALSE(IsPodUpdated(*v1, *base.Build()));
  EXPECT_TRUE(IsPodUpdated(*v1, *PodBuilder("p").Label("a", "b").Build()));
  EXPECT_TRUE(IsPodUpdated(*v1, *PodBuilder("p").NodeSelector("a", "b").Build()));
  EXPECT_TRUE(IsPodUpdated(*v1, *PodBuilder("p").Container("1", "").Build()));
  PodBuilder affinity("p");
  affinity.pod().spec.affinity.emplace();
  affinity.pod().spec.affinity->node_affinity.emplace();
  EXPECT_TRUE(IsPodUpdated(*v1, *affinity.Build()));
  PodBuilder annotated("p");
  annotated.pod().meta.annotations.Set("k", "v");
  EXPECT_TRUE(IsPodUpdated(*v1, *annotated.Build()));
}

// The claim the resourceclaim controller made for a template entry is named in the pod's status;
// that part of the status decides where the pod may go, so it is an update of its own kind.
TEST(PodEventsTest, AGeneratedResourceClaimInTheStatusIsAnUpdate) {
  PodBuilder base("p");
  api::PodPtr v1 = base.Build();
  base.pod().status.resource_claim_statuses = {
      api::PodResourceClaimStatus{.name = "gpu", .resource_claim_name = "p-gpu-x"}};
  api::PodPtr v2 = base.Build();
  EXPECT_TRUE(IsPodUpdated(*v1, *v2));
  auto events = PodSchedulingPropertiesChange(*v2, *v1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].actions, framework::kUpdatePodGeneratedResourceClaim);
  EXPECT_EQ(events[0].resource, framework::EventResource::kUnscheduledPod);
}

// Fields added to the api types after the comparison was written count too: they are compared
// through the types' own operator==, not a list kept beside them.
TEST(PodEventsTest, IsPodUpdatedSeesFieldsAddedToThePodLater) {
  PodBuilder base("p");
  api::PodPtr v1 = base.Build();
  PodBuilder claims("p");
  claims.pod().spec.resource_claims = {api::PodResourceClaim{
      .name = "gpu", .resource_claim_name = "gpu", .resource_claim_template_name = std::nullopt}};
  claims.pod().meta.resource_version = "8";
  EXPECT_TRUE(IsPodUpdated(*v1, *claims.Build()));
  PodBuilder owned("p");
  owned.pod().meta.owner_references.push_back({"v1", "Job", "j", "uid-j", true});
  owned.pod().meta.generation = 2;
  EXPECT_TRUE(IsPodUpdated(*v1, *owned.Build()));
}

TEST(PodEventsTest, PodSchedulingPropertiesChangeClassifiesUpdates) {
  auto actions = [](const api::Pod& new_pod, const api::Pod& old_pod) {
    std::vector<uint32_t> out;
    for (const auto& e : PodSchedulingPropertiesChange(new_pod, old_pod)) {
      EXPECT_EQ(e.resource, new_pod.spec.node_name.empty() ? EventResource::kUnscheduledPod
                                                           : EventResource::kPod);
      out.push_back(e.actions);
    }
    return out;
  };
  api::PodPtr base = PodBuilder("p").Container("2", "1Gi").SchedulingGate("g").Build();
  EXPECT_EQ(
      actions(*PodBuilder("p").Container("2", "1Gi").SchedulingGate("g").Label("a", "b").Build(),
              *base),
      (std::vector<uint32_t>{framework::kUpdatePodLabel}));
  EXPECT_EQ(actions(*PodBuilder("p").Container("1", "1Gi").SchedulingGate("g").Build(), *base),
            (std::vector<uint32_t>{framework::kUpdatePodScaleDown}));
  EXPECT_EQ(actions(*PodBuilder("p").Container("2", "1Gi").Build(), *base),
            (std::vector<uint32_t>{framework::kUpdatePodSchedulingGatesEliminated}));
  EXPECT_EQ(actions(*PodBuilder("p")
                         .Container("2", "1Gi")
                         .SchedulingGate("g")
                         .Toleration(api::Toleration{})
                         .Build(),
                    *base),
            (std::vector<uint32_t>{framework::kUpdatePodTolerations}));
  EXPECT_EQ(actions(*PodBuilder("p").Container("4", "1Gi").SchedulingGate("g").Build(), *base),
            (std::vector<uint32_t>{framework::kUpdate}));
  EXPECT_EQ(
      actions(*PodBuilder("p").Container("2", "1Gi").SchedulingGate("g").Node("n").Build(), *base),
      (std::vector<uint32_t>{framework::kUpdate}));
}

}  // namespace
}  // namespace berth::queue
