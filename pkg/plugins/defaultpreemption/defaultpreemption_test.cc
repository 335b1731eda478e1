// DefaultPreemption end to end in one scheduling cycle: eligibility, which nodes are tried, the
// messages, the nomination, and the eviction carried out off the scheduling thread.

#include "pkg/plugins/defaultpreemption/defaultpreemption.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/preemption_test_util.h"

namespace berth::plugins::defaultpreemption {
namespace {

using berth::testing::NodeBuilder;
using berth::testing::PodBuilder;
using framework::Code;
using framework::PostFilterResult;
using json = nlohmann::json;
using testing::Info;
using testing::Pod;

std::string ParseError(const json& args) {
  try {
    ParseArgs(args);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ParseArgs, DefaultsAndUpstreamValidation) {
  const Args defaults = ParseArgs(nullptr);
  EXPECT_EQ(defaults.min_candidate_nodes_percentage, 10);
  EXPECT_EQ(defaults.min_candidate_nodes_absolute, 100);
  const Args set = ParseArgs(json{{"minCandidateNodesPercentage", 0},
                                  {"minCandidateNodesAbsolute", 7},
                                  {"apiVersion", "kubescheduler.config.k8s.io/v1"},
                                  {"kind", "DefaultPreemptionArgs"}});
  EXPECT_EQ(set.min_candidate_nodes_percentage, 0);
  EXPECT_EQ(set.min_candidate_nodes_absolute, 7);

  EXPECT_EQ(ParseError({{"minCandidateNodesPercentage", 101}}),
            "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]");
  EXPECT_EQ(ParseError({{"minCandidateNodesAbsolute", -1}}),
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)");
  EXPECT_EQ(ParseError({{"minCandidateNodesPercentage", 0}, {"minCandidateNodesAbsolute", 0}}),
            "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot be "
            "zero at the same time as minCandidateNodesPercentage]");
  EXPECT_EQ(ParseError({{"minCandidateNodesAbsolute", "ten"}}),
            "minCandidateNodesAbsolute: Invalid value: \"ten\": must be a 32-bit integer");
  EXPECT_EQ(ParseError({{"minCandidates", 1}}), "minCandidates: unknown field");
  EXPECT_EQ(ParseError(json::array()), "args: Invalid value: []: must be an object");
}

TEST(NumCandidates, PercentageOfNodesAtLeastTheAbsoluteAtMostAll) {
  berth::testing::FakeHandle handle;
  auto make = [&](int32_t percentage, int32_t absolute) {
    return DefaultPreemption({percentage, absolute}, handle,
                             handle.informers().ListerFor<api::Pod>(),
                             handle.informers().ListerFor<api::PodDisruptionBudget>());
  };
  EXPECT_EQ(make(10, 100).NumCandidates(5000), 500);
  EXPECT_EQ(make(10, 100).NumCandidates(500), 100);
  EXPECT_EQ(make(10, 100).NumCandidates(30), 30);
  EXPECT_EQ(make(0, 3).NumCandidates(30), 3);
  EXPECT_EQ(make(50, 0).NumCandidates(31), 15);
}

class PostFilterTest : public ::testing::Test {
 protected:
  // Runs the cycle of `pod`, then waits for the eviction it started.
  framework::Status Cycle(const api::PodPtr& pod, PostFilterResult* result) {
    framework::Status s = fixture_.Cycle(pod, result);
    fixture_.plugin_->executor().Drain();
    return s;
  }
  // One node, n1, of 2 cpus, holding low-1 and low-2 of 900m each at priority 1: a preemptor of
  // 1800m needs both evicted, one of 900m just one.
  void BuildTwoLowPodsNode() {
    fixture_.Build(
        {NodeBuilder("n1")
             .Capacity("2", "8Gi")
             .Info({Info(Pod("low-1", "900m", 1, "n1")), Info(Pod("low-2", "900m", 1, "n1"))})});
  }

  testing::Fixture fixture_;
};

TEST_F(PostFilterTest, PreemptionPolicyNeverNeitherEvictsNorNominates) {
  fixture_.Build(
      {NodeBuilder("n1").Capacity("2", "8Gi").Info({Info(Pod("low", "1500m", 1, "n1"))})});
  PodBuilder never("never");
  never.Container("900m", "64Mi").Priority(10).pod().spec.preemption_policy =
      api::PreemptionPolicy::kNever;
  PostFilterResult result;
  framework::Status s = Cycle(never.Build(), &result);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.Message(), "preemption: not eligible due to preemptionPolicy=Never.");
  EXPECT_EQ(s.plugin(), "DefaultPreemption");
  EXPECT_TRUE(result.nominated_node_name.empty());
  EXPECT_FALSE(result.clear_nomination);
  EXPECT_TRUE(fixture_.client_.calls().empty());
  EXPECT_EQ(fixture_.metrics_.attempts.load(), 1);
}

TEST_F(PostFilterTest, EvictsTheOneVictimNeededAndNominatesThePreemptor) {
  BuildTwoLowPodsNode();
  PostFilterResult result;
  framework::Status s = Cycle(Pod("high", "900m", 10), &result);
  ASSERT_TRUE(s.IsSuccess()) << s.Message();
  EXPECT_EQ(s.Message(),
            "preemption: found a potential placement for pod on node n1, preempting 1 victims");
  EXPECT_EQ(result.nominated_node_name, "n1");
  const std::vector<std::string> calls = fixture_.client_.calls();
  ASSERT_EQ(calls.size(), 2u);
  // Of two pods of equal priority neither of which started, the first on the node is kept. The
  // DisruptionTarget condition comes first, then the deletion.
  const std::string patch_prefix = "PATCH /api/v1/namespaces/default/pods/low-2/status ";
  ASSERT_EQ(calls[0].rfind(patch_prefix, 0), 0u) << calls[0];
  const json condition =
      json::parse(calls[0].substr(patch_prefix.size()))["status"]["conditions"][0];
  EXPECT_EQ(condition["type"], "DisruptionTarget");
  EXPECT_EQ(condition["status"], "True");
  EXPECT_EQ(condition["reason"], "PreemptionByScheduler");
  EXPECT_EQ(condition["message"],
            "berth-scheduler: preempting to accommodate a higher priority pod");
  EXPECT_EQ(calls[1], "DELETE /api/v1/namespaces/default/pods/low-2 uid=uid-default-low-2");
  const auto events = fixture_.recorder_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].pod_key, "default/low-2");
  EXPECT_EQ(events[0].reason, "Preempted");
  EXPECT_EQ(events[0].note, "Preempted by pod uid-default-high on node n1");
  EXPECT_EQ(fixture_.metrics_.attempts.load(), 1);
  EXPECT_EQ(fixture_.metrics_.victim_counts(), std::vector<size_t>{1});
  // The deletion event will bring it back; nothing else needs to.
  EXPECT_TRUE(fixture_.activated().empty());
}

TEST_F(PostFilterTest, NoCandidateSaysWhyPerNodeAndClearsTheNomination) {
  fixture_.Build({
      NodeBuilder("n1").Capacity("2", "8Gi").Info({Info(Pod("peer", "1500m", 10, "n1"))}),
      NodeBuilder("n2")
          .Capacity("2", "8Gi")
          .Taint("dedicated", "x", api::TaintEffect::kNoSchedule)
          .Info({Info(Pod("low", "1500m", 1, "n2"))}),
      NodeBuilder("n3")
          .Capacity("2", "8Gi")
          .Info({Info(Pod("keeper", "1500m", 20, "n3")), Info(Pod("small", "100m", 1, "n3"))}),
  });
  PostFilterResult result;
  framework::Status s = Cycle(Pod("high", "900m", 10), &result);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.Message(),
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims "
            "found for incoming pod, 1 Preemption is not helpful for scheduling.");
  EXPECT_TRUE(result.clear_nomination);
  EXPECT_TRUE(result.nominated_node_name.empty());
  EXPECT_TRUE(fixture_.client_.calls().empty());
}

TEST_F(PostFilterTest, TerminatingVictimOnTheNominatedNodeMakesThePreemptorWait) {
  PodBuilder victim("victim");
  victim.Container("1500m", "64Mi").Priority(1).Node("n1");
  victim.pod().meta.deletion_timestamp = "2024-01-01T00:00:00Z";
  victim.pod().status.conditions.push_back(
      {"DisruptionTarget", "True", "PreemptionByScheduler", ""});
  fixture_.Build(
      {NodeBuilder("n1").Capacity("2", "8Gi").Info({Info(victim.Build())}),
       NodeBuilder("n2").Capacity("2", "8Gi").Info({Info(Pod("low", "1500m", 1, "n2"))})});
  PodBuilder waiting("high");
  waiting.Container("900m", "64Mi").Priority(10).pod().status.nominated_node_name = "n1";
  PostFilterResult result;
  framework::Status s = Cycle(waiting.Build(), &result);
  EXPECT_EQ(s.code(), Code::kUnschedulable);
  EXPECT_EQ(s.Message(),
            "preemption: not eligible due to a terminating pod on the nominated node.");
  EXPECT_TRUE(result.nominated_node_name.empty());
  EXPECT_FALSE(result.clear_nomination);
  EXPECT_TRUE(fixture_.client_.calls().empty());

  // Once the nominated node can no longer take it whatever is evicted, it preempts elsewhere.
  fixture_.nodes_[0] = NodeBuilder("n1")
                           .Capacity("2", "8Gi")
                           .Taint("dedicated", "x", api::TaintEffect::kNoSchedule)
                           .Info({Info(victim.Build())});
  fixture_.lister_.Set(fixture_.nodes_);
  s = Cycle(waiting.Build(), &result);
  ASSERT_TRUE(s.IsSuccess()) << s.Message();
  EXPECT_EQ(result.nominated_node_name, "n2");
}

// Nodes are tried from the offset on, until enough candidates were found: with one wanted, the
// node at the offset is chosen even though another node's victim has a lower priority.
TEST_F(PostFilterTest, DryRunTriesTheWantedNumberOfNodesFromTheOffset) {
  std::vector<framework::NodeInfoPtr> nodes;
  for (int i = 1; i <= 4; i++) {
    const std::string name = "n" + std::to_string(i);
    nodes.push_back(NodeBuilder(name)
                        .Capacity("2", "8Gi")
                        .Info({Info(Pod("low-" + name, "1500m", i == 1 ? 1 : 5, name))}));
  }
  fixture_.Build(nodes, {{"minCandidateNodesPercentage", 0}, {"minCandidateNodesAbsolute", 1}});
  fixture_.offset_ = 2;
  PostFilterResult result;
  ASSERT_TRUE(fixture_.Cycle(Pod("high", "900m", 10), &result).IsSuccess());
  EXPECT_EQ(result.nominated_node_name, "n3");

  fixture_.Build(nodes, {{"minCandidateNodesPercentage", 0}, {"minCandidateNodesAbsolute", 4}});
  fixture_.offset_ = 2;
  ASSERT_TRUE(fixture_.Cycle(Pod("high", "900m", 10), &result).IsSuccess());
  EXPECT_EQ(result.nominated_node_name, "n1");
}

TEST_F(PostFilterTest, LowerPriorityPodsNominatedToTheNodeLoseTheirNomination) {
  fixture_.Build(
      {NodeBuilder("n1").Capacity("4", "8Gi").Info({Info(Pod("low", "3500m", 1, "n1"))})});
  PodBuilder lower("lower");
  lower.Container("100m", "64Mi").Priority(5).pod().status.nominated_node_name = "n1";
  fixture_.nominator_.AddNominatedPod(Info(lower.Build()));
  PostFilterResult result;
  ASSERT_TRUE(Cycle(Pod("high", "900m", 10), &result).IsSuccess());
  const std::vector<std::string> calls = fixture_.client_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0],
            "PATCH /api/v1/namespaces/default/pods/lower/status "
            "{\"status\":{\"nominatedNodeName\":null}}");
  EXPECT_EQ(calls[2], "DELETE /api/v1/namespaces/default/pods/low uid=uid-default-low");
}

TEST_F(PostFilterTest, VictimWaitingInPermitIsRejectedInsteadOfDeleted) {
  const api::PodPtr parked = Pod("parked", "1500m", 1, "n1");
  fixture_.Build({NodeBuilder("n1").Capacity("2", "8Gi").Info({Info(parked)})});
  auto waiting = std::make_shared<framework::runtime::WaitingPodImpl>(
      parked,
      std::map<std::string, framework::runtime::WaitingPodImpl::Clock::time_point>{
          {"Gang", framework::runtime::WaitingPodImpl::Clock::now() + std::chrono::hours(1)}});
  fixture_.waiting_->Add(parked->meta.uid, waiting);
  PostFilterResult result;
  ASSERT_TRUE(Cycle(Pod("high", "900m", 10), &result).IsSuccess());
  EXPECT_TRUE(fixture_.client_.calls().empty());
  framework::Status rejected = waiting->Wait();
  EXPECT_EQ(rejected.code(), Code::kUnschedulable);
  EXPECT_EQ(rejected.plugin(), "DefaultPreemption");
  // No deletion event will come, so the preemptor is retried at once.
  EXPECT_EQ(fixture_.activated(), std::vector<std::string>{"uid-default-high"});
  EXPECT_EQ(fixture_.recorder_.events().at(0).note,
            "Preempted by pod uid-default-high on node n1 (in berth-scheduler memory).");
}

TEST_F(PostFilterTest, PreemptorIsHeldBackUntilItsLastVictimIsBeingDeleted) {
  BuildTwoLowPodsNode();
  auto& pods = fixture_.informers_.For<api::Pod>().store();
  fixture_.client_.OnDelete(
      [&](const std::string& path) { pods.Remove("default/" + path.substr(path.rfind('/') + 1)); });
  fixture_.client_.Hold(true);
  const api::PodPtr high = Pod("high", "1800m", 10);
  PostFilterResult result;
  ASSERT_TRUE(fixture_.Cycle(high, &result).IsSuccess());
  framework::Status held = fixture_.plugin_->PreEnqueue(*high);
  EXPECT_EQ(held.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(held.Message(), "waiting for the preemption for this pod to be finished");
  fixture_.client_.Hold(false);
  fixture_.plugin_->executor().Drain();
  EXPECT_TRUE(fixture_.plugin_->PreEnqueue(*high).IsSuccess());
  EXPECT_EQ(pods.Get("default/low-1"), nullptr);
  EXPECT_EQ(pods.Get("default/low-2"), nullptr);
  EXPECT_TRUE(fixture_.activated().empty());
}

TEST_F(PostFilterTest, FailedEvictionRetriesThePreemptorAtOnce) {
  BuildTwoLowPodsNode();
  fixture_.client_.FailDeletes();
  PostFilterResult result;
  const api::PodPtr high = Pod("high", "1800m", 10);
  ASSERT_TRUE(Cycle(high, &result).IsSuccess());
  // The first failure leaves the last victim alone.
  EXPECT_EQ(fixture_.client_.calls().size(), 2u);
  EXPECT_EQ(fixture_.activated(), std::vector<std::string>{"uid-default-high"});
  EXPECT_TRUE(fixture_.plugin_->PreEnqueue(*high).IsSuccess());
}

// A StatefulSet recreates a pod under the same name: the victim's condition and deletion are
// for the victim's uid only, which the apiserver checks.
TEST_F(PostFilterTest, VictimIsMarkedAndDeletedOnlyUnderItsUid) {
  fixture_.Build(
      {NodeBuilder("n1").Capacity("2", "8Gi").Info({Info(Pod("low", "1500m", 1, "n1"))})});
  PostFilterResult result;
  ASSERT_TRUE(Cycle(Pod("high", "900m", 10), &result).IsSuccess());
  const std::vector<std::string> calls = fixture_.client_.calls();
  ASSERT_EQ(calls.size(), 2u);
  const std::string patch_prefix = "PATCH /api/v1/namespaces/default/pods/low/status ";
  ASSERT_EQ(calls[0].rfind(patch_prefix, 0), 0u) << calls[0];
  EXPECT_EQ(json::parse(calls[0].substr(patch_prefix.size()))["metadata"],
            json({{"uid", "uid-default-low"}}));
  EXPECT_EQ(calls[1], "DELETE /api/v1/namespaces/default/pods/low uid=uid-default-low");
}

// 409 to a DELETE with a uid precondition: the name belongs to a pod created since, and the
// victim is gone. That is no failure: the next victim is still evicted, and the preemptor is
// retried at once, since the victim's deletion event may have come while it was held back.
TEST_F(PostFilterTest, VictimWhoseNameWasTakenByANewPodCountsAsGone) {
  BuildTwoLowPodsNode();
  fixture_.client_.FailDeletes(client::ApiError(
      client::ErrorReason::kConflict, 409,
      "Operation cannot be fulfilled on Pod \"low-1\": the UID in the precondition "
      "(uid-default-low-1) does not match the UID in record (other). The object might have been "
      "deleted and then recreated"));
  PostFilterResult result;
  const api::PodPtr high = Pod("high", "1800m", 10);
  ASSERT_TRUE(Cycle(high, &result).IsSuccess());
  int deletes = 0;
  for (const std::string& call : fixture_.client_.calls()) deletes += call.starts_with("DELETE ");
  EXPECT_EQ(deletes, 2) << "a victim found gone stopped the preemption";
  EXPECT_EQ(fixture_.activated(), std::vector<std::string>{"uid-default-high"});
  EXPECT_TRUE(fixture_.plugin_->PreEnqueue(*high).IsSuccess());
  // Nothing was preempted by this scheduler.
  EXPECT_TRUE(fixture_.recorder_.events().empty());
}

// The condition patch carries metadata.uid, which may not change: the apiserver refuses it for a
// pod created since under the victim's name, and that victim is gone, not deleted now.
TEST_F(PostFilterTest, ConditionPatchRefusedForANewPodsUidCountsAsGone) {
  BuildTwoLowPodsNode();
  fixture_.client_.FailConditionPatches(
      client::ApiError(client::ErrorReason::kInvalid, 422,
                       "Pod \"low-1\" is invalid: metadata.uid: Invalid value: "
                       "\"uid-default-low-1\": field is immutable"));
  PostFilterResult result;
  const api::PodPtr high = Pod("high", "1800m", 10);
  ASSERT_TRUE(Cycle(high, &result).IsSuccess());
  int patches = 0;
  for (const std::string& call : fixture_.client_.calls()) {
    EXPECT_FALSE(call.starts_with("DELETE ")) << call;
    patches += call.starts_with("PATCH ");
  }
  EXPECT_EQ(patches, 2) << "a victim found gone stopped the preemption";
  EXPECT_EQ(fixture_.activated(), std::vector<std::string>{"uid-default-high"});
}

TEST_F(PostFilterTest, VictimsAlreadyBeingDeletedAreLeftAlone) {
  PodBuilder leaving("leaving");
  leaving.Container("1500m", "64Mi").Priority(1).Node("n1");
  leaving.pod().meta.deletion_timestamp = "2024-01-01T00:00:00Z";
  fixture_.Build({NodeBuilder("n1").Capacity("2", "8Gi").Info({Info(leaving.Build())})});
  PostFilterResult result;
  const api::PodPtr high = Pod("high", "900m", 10);
  ASSERT_TRUE(Cycle(high, &result).IsSuccess());
  EXPECT_EQ(result.nominated_node_name, "n1");
  EXPECT_TRUE(fixture_.client_.calls().empty());
  EXPECT_TRUE(fixture_.plugin_->PreEnqueue(*high).IsSuccess());
  EXPECT_EQ(fixture_.metrics_.victim_counts(), std::vector<size_t>{1});
}

TEST(EventsToRegister, AssignedPodDeletionReRunsPreEnqueueButLeavesTheRetryToOthers) {
  berth::testing::FakeHandle handle;
  DefaultPreemption plugin({}, handle, handle.informers().ListerFor<api::Pod>(),
                           handle.informers().ListerFor<api::PodDisruptionBudget>());
  const auto events = plugin.EventsToRegister();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kPod);
  EXPECT_EQ(events[0].event.actions, framework::kDelete);
  EXPECT_EQ(events[0].hint(*Pod("p", "1", 1), {}), framework::QueueingHint::kSkip);
}

}  // namespace
}  // namespace berth::plugins::defaultpreemption
