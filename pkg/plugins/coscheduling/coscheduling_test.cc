// Coscheduling inside a real framework runtime (so Permit parks pods in real waiting pods), with
// PodGroups and pods put into client-less informers as the apiserver would send them.

#include "pkg/plugins/coscheduling/coscheduling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "pkg/api/podgroup.h"
#include "pkg/api/workload_podgroup.h"
#include "pkg/framework/runtime/framework.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::coscheduling {
namespace {

using namespace std::chrono_literals;
using framework::Code;
using framework::Status;
using json = nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr char kNs[] = "ml";

class TestBinder : public framework::BindPlugin {
 public:
  std::string_view Name() const override { return "TestBinder"; }
  Status Bind(framework::CycleState&, const api::Pod&, const std::string&) override { return {}; }
};

bool Eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 500; i++) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

class CoschedulingTest : public ::testing::Test {
 protected:
  void Build(const json& args = nullptr) {
    registry_["Coscheduling"] = New;
    registry_["TestBinder"] = [](const json&, framework::Handle&) {
      return std::make_shared<TestBinder>();
    };
    config::Profile profile;
    profile.plugins.multi_point.enabled = {{"Coscheduling", 0}, {"TestBinder", 0}};
    if (!args.is_null()) profile.plugin_config.push_back({"Coscheduling", args});
    framework::runtime::FrameworkDeps deps;
    deps.snapshot = &lister_;
    deps.informer_factory = &informers_;
    deps.recorder = &recorder_;
    deps.parallelizer = &parallelizer_;
    deps.nominator = &nominator_;
    deps.waiting_pods = waiting_;
    deps.activate = [this](const std::vector<std::string>& uids) {
      std::lock_guard lock(mu_);
      activated_.insert(uids.begin(), uids.end());
    };
    fwk_ = std::make_unique<framework::runtime::Framework>(registry_, profile, deps);
    plugin_ = dynamic_cast<Coscheduling*>(fwk_->GetPlugin("Coscheduling").get());
    ASSERT_NE(plugin_, nullptr);
  }

  void Group(const std::string& name, int min_member, json spec = json::object(),
             const std::string& created = "2025-01-01T00:00:00Z") {
    spec["minMember"] = min_member;
    informers_.For<api::PodGroup>().Upsert(
        std::make_shared<api::PodGroup>(api::DecodePodGroup({{"metadata",
                                                              {{"name", name},
                                                               {"namespace", kNs},
                                                               {"uid", "uid-" + name},
                                                               {"resourceVersion", "1"},
                                                               {"creationTimestamp", created}}},
                                                             {"spec", spec}})));
  }

  // A pod of `group` requesting one cpu, as the pod informer sends it.
  api::PodPtr Member(const std::string& name, const std::string& group, int32_t priority = 0) {
    auto pod = PodBuilder(name, kNs)
                   .Label(std::string(api::kPodGroupLabel), group)
                   .Priority(priority)
                   .Container("1", "1Gi")
                   .Build();
    informers_.Pods().Upsert(pod);
    return pod;
  }

  // Pods p-0 .. p-<N-1> of `group`, in that order.
  template <size_t N>
  std::array<api::PodPtr, N> Members(const std::string& group) {
    std::array<api::PodPtr, N> pods;
    for (size_t i = 0; i < N; i++) pods[i] = Member("p-" + std::to_string(i), group);
    return pods;
  }

  Status PreFilter(const api::PodPtr& pod) {
    framework::CycleState state;
    framework::PreFilterResult result;
    return fwk_->RunPreFilterPlugins(state, *pod, lister_.List(), &result);
  }

  // Reserve then Permit on node n1, as the scheduling cycle does once the pod is assumed.
  Status Place(const api::PodPtr& pod) {
    auto& state = states_[pod->meta.uid];
    state = std::make_unique<framework::CycleState>();
    Status reserve = fwk_->RunReservePluginsReserve(*state, *pod, "n1");
    if (!reserve.IsSuccess()) return reserve;
    Status permit = fwk_->RunPermitPlugins(*state, *pod, "n1");
    if (!permit.IsSuccess() && !permit.IsWait())
      fwk_->RunReservePluginsUnreserve(*state, *pod, "n1");
    return permit;
  }

  // What the binding cycle does: wait at Permit, and unreserve on failure.
  Status BindingCycle(const api::PodPtr& pod) {
    Status s = fwk_->WaitOnPermit(*pod);
    if (!s.IsSuccess()) fwk_->RunReservePluginsUnreserve(*states_[pod->meta.uid], *pod, "n1");
    return s;
  }

  Status PostFilter(const api::PodPtr& pod) {
    framework::CycleState state;
    framework::NodeToStatus statuses;
    framework::PostFilterResult result;
    return fwk_->RunPostFilterPlugins(state, *pod, statuses, &result);
  }

  std::set<std::string> Activated() {
    std::lock_guard lock(mu_);
    return activated_;
  }

  std::vector<testing::RecordedEvent> GroupEvents(const std::string& reason) {
    std::vector<testing::RecordedEvent> out;
    for (const auto& e : recorder_.events()) {
      if (e.kind == "PodGroup" && e.reason == reason) out.push_back(e);
    }
    return out;
  }

  framework::runtime::Registry registry_;
  testing::FakeLister lister_{{NodeBuilder("n1").Capacity("4", "16Gi").Info()}};
  informer::SharedInformerFactory informers_{nullptr};
  testing::FakeRecorder recorder_;
  testing::InlineParallelizer parallelizer_;
  testing::NoNominations nominator_;
  std::shared_ptr<framework::runtime::WaitingPods> waiting_ =
      std::make_shared<framework::runtime::WaitingPods>();
  std::mutex mu_;
  std::set<std::string> activated_;
  std::map<std::string, std::unique_ptr<framework::CycleState>> states_;
  std::unique_ptr<framework::runtime::Framework> fwk_;
  Coscheduling* plugin_ = nullptr;
};

// ---- Args ----

TEST(CoschedulingArgs, DefaultsValuesAndErrorsNamingTheField) {
  Args defaults = ParseArgs(nullptr);
  EXPECT_EQ(defaults.permit_waiting_time, 60s);
  EXPECT_EQ(defaults.pod_group_backoff, 1s);
  Args set = ParseArgs({{"permitWaitingTimeSeconds", 10},
                        {"podGroupBackoffSeconds", 0},
                        {"apiVersion", "kubescheduler.config.k8s.io/v1"},
                        {"kind", "CoschedulingArgs"}});
  EXPECT_EQ(set.permit_waiting_time, 10s);
  EXPECT_EQ(set.pod_group_backoff, 0s);

  auto error = [](const json& args) {
    try {
      ParseArgs(args);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{"permitWaitingTimeSeconds", 0}}),
            "permitWaitingTimeSeconds: Invalid value: 0: not in valid range [1, 900]");
  EXPECT_EQ(error({{"permitWaitingTimeSeconds", "60s"}}),
            "permitWaitingTimeSeconds: Invalid value: \"60s\": must be an integer");
  EXPECT_EQ(error({{"podGroupBackoffSeconds", -1}}),
            "podGroupBackoffSeconds: Invalid value: -1: not in valid range [0, 3600]");
  EXPECT_EQ(error({{"kubeConfigPath", "/x"}}), "kubeConfigPath: unknown field");
  EXPECT_EQ(error(json::array()), "args: Invalid value: []: must be an object");
  EXPECT_EQ(error({{"permitWaitingTimeSeconds", 0}, {"podGroupBackoffSeconds", -1}}),
            "[permitWaitingTimeSeconds: Invalid value: 0: not in valid range [1, 900], "
            "podGroupBackoffSeconds: Invalid value: -1: not in valid range [0, 3600]]");
}

// ---- Pods outside gangs ----

TEST_F(CoschedulingTest, PodsOutsideGangsPassUntouched) {
  Build();
  auto pod = PodBuilder("solo", kNs).Container("1", "1Gi").Build();
  informers_.Pods().Upsert(pod);
  EXPECT_TRUE(PreFilter(pod).IsSuccess());
  EXPECT_TRUE(Place(pod).IsSuccess());
  EXPECT_TRUE(PostFilter(pod).reasons().empty());
  EXPECT_TRUE(recorder_.events().empty());
}

// ---- PreFilter: gangs that cannot be attempted ----

TEST_F(CoschedulingTest, AGangMissingInvalidOrShortOfPodsIsNotAttempted) {
  Build();
  auto lone = Member("lone", "nowhere");
  Status missing = PreFilter(lone);
  EXPECT_EQ(missing.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(missing.Message(), "pod group \"ml/nowhere\" does not exist");
  EXPECT_EQ(missing.plugin(), "Coscheduling");

  Group("broken", 2, {{"minResources", {{"cpu", "plenty"}}}});
  Status invalid = PreFilter(Member("b-0", "broken"));
  EXPECT_EQ(invalid.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(invalid.Message().rfind(
                "pod group \"ml/broken\" is invalid: spec.minResources.cpu: invalid quantity", 0),
            0u)
      << invalid.Message();

  Group("train", 4);
  Member("t-0", "train");
  auto t1 = Member("t-1", "train");
  Status short_of_pods = PreFilter(t1);
  EXPECT_EQ(short_of_pods.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(short_of_pods.Message(), "pod group \"ml/train\" has 2 of 4 required pods");
  auto events = GroupEvents("FailedScheduling");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().pod_key, "ml/train");
  EXPECT_EQ(events.back().note, "pod group \"ml/train\" has 2 of 4 required pods");

  // Deleted and terminating pods do not count.
  Member("t-2", "train");
  PodBuilder leaving("t-3", kNs);
  leaving.Label(std::string(api::kPodGroupLabel), "train");
  leaving.pod().meta.deletion_timestamp = "2025-01-01T00:00:00Z";
  informers_.Pods().Upsert(leaving.Build());
  EXPECT_EQ(PreFilter(t1).Message(), "pod group \"ml/train\" has 3 of 4 required pods");
  Member("t-4", "train");
  EXPECT_TRUE(PreFilter(t1).IsSuccess()) << PreFilter(t1).Message();
}

TEST_F(CoschedulingTest, APodWhosePriorityOrPolicyDiffersFromItsUpstreamGroupsIsNotAttempted) {
  Build();
  informers_.For<api::WorkloadPodGroup>().Upsert(std::make_shared<api::WorkloadPodGroup>(
      api::DecodeWorkloadPodGroup({{"metadata",
                                    {{"name", "up"},
                                     {"namespace", kNs},
                                     {"uid", "uid-up"},
                                     {"creationTimestamp", "2025-01-01T00:00:00Z"}}},
                                   {"spec",
                                    {{"schedulingPolicy", {{"gang", {{"minCount", 1}}}}},
                                     {"priority", 10},
                                     {"preemptionPolicy", "Never"}}}})));
  auto member = [&](const std::string& name, int32_t priority, api::PreemptionPolicy policy) {
    PodBuilder b(name, kNs);
    b.Priority(priority).Container("1", "1Gi");
    b.pod().spec.scheduling_group = "up";
    b.pod().spec.preemption_policy = policy;
    auto pod = b.Build();
    informers_.Pods().Upsert(pod);
    return pod;
  };
  Status low = PreFilter(member("low", 0, api::PreemptionPolicy::kNever));
  EXPECT_EQ(low.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(low.Message(),
            "pod group \"ml/up\" requires priority 10 of its pods; pod \"low\" has 0");
  EXPECT_EQ(PreFilter(member("eager", 10, api::PreemptionPolicy::kPreemptLowerPriority)).Message(),
            "pod group \"ml/up\" requires preemptionPolicy Never of its pods; pod \"eager\" has "
            "PreemptLowerPriority");
  EXPECT_TRUE(PreFilter(member("right", 10, api::PreemptionPolicy::kNever)).IsSuccess());
}

TEST_F(CoschedulingTest, APodOfAnUpstreamGroupUnderTheBasicPolicyFailsAlone) {
  Build({{"podGroupBackoffSeconds", 600}});
  informers_.For<api::WorkloadPodGroup>().Upsert(
      std::make_shared<api::WorkloadPodGroup>(api::DecodeWorkloadPodGroup(
          {{"metadata",
            {{"name", "web"},
             {"namespace", kNs},
             {"uid", "uid-web"},
             {"creationTimestamp", "2025-01-01T00:00:00Z"}}},
           {"spec", {{"schedulingPolicy", {{"basic", json::object()}}}}}})));
  auto member = [&](const std::string& name) {
    PodBuilder b(name, kNs);
    b.Container("1", "1Gi");
    b.pod().spec.scheduling_group = "web";
    auto pod = b.Build();
    informers_.Pods().Upsert(pod);
    return pod;
  };
  auto big = member("big");
  auto small = member("small");
  ASSERT_TRUE(PreFilter(big).IsSuccess());
  Status post = PostFilter(big);
  EXPECT_TRUE(post.reasons().empty()) << post.Message();
  EXPECT_TRUE(PreFilter(small).IsSuccess()) << "the group does not back off for one pod";
}

// A basic group with disruptionMode: {all: {}} is still no gang (its pods are placed and fail one
// by one, and no gang preemption runs for them), but as victims its placed pods are one group:
// preemption takes all of them or none. Without it, each is a victim of its own.
TEST_F(CoschedulingTest, ABasicGroupDisruptedOnlyAsAWholeIsOneVictimButNoGang) {
  Build({{"podGroupBackoffSeconds", 600}});
  auto group = [&](const std::string& name, bool whole) {
    json spec = {{"schedulingPolicy", {{"basic", json::object()}}}};
    if (whole) spec["disruptionMode"] = {{"all", json::object()}};
    informers_.For<api::WorkloadPodGroup>().Upsert(std::make_shared<api::WorkloadPodGroup>(
        api::DecodeWorkloadPodGroup({{"metadata",
                                      {{"name", name},
                                       {"namespace", kNs},
                                       {"uid", "uid-" + name},
                                       {"creationTimestamp", "2025-01-01T00:00:00Z"}}},
                                     {"spec", spec}})));
  };
  auto member = [&](const std::string& name, const std::string& group_name, bool bound) {
    PodBuilder b(name, kNs);
    b.Container("1", "1Gi");
    if (bound) b.Node("n1");
    b.pod().spec.scheduling_group = group_name;
    auto pod = b.Build();
    informers_.Pods().Upsert(pod);
    return pod;
  };
  group("whole", true);
  auto placed_0 = member("whole-0", "whole", true);
  auto placed_1 = member("whole-1", "whole", true);
  auto pending = member("whole-2", "whole", false);

  EXPECT_FALSE(fwk_->GroupOf(*pending).has_value());
  EXPECT_FALSE(fwk_->GroupOf(*placed_0).has_value());
  ASSERT_TRUE(PreFilter(pending).IsSuccess());
  Status post = PostFilter(pending);
  EXPECT_TRUE(post.reasons().empty()) << post.Message();

  std::optional<framework::PodGroupHint> victim = fwk_->VictimGroupOf(*placed_0);
  ASSERT_TRUE(victim.has_value());
  EXPECT_TRUE(victim->disrupted_whole);
  EXPECT_EQ(victim->plugin, "Coscheduling");
  std::set<std::string> placed(victim->placed_uids.begin(), victim->placed_uids.end());
  EXPECT_EQ(placed, (std::set<std::string>{placed_0->meta.uid, placed_1->meta.uid}));

  group("single", false);
  auto alone = member("single-0", "single", true);
  member("single-1", "single", true);
  EXPECT_FALSE(fwk_->VictimGroupOf(*alone).has_value());
}

TEST_F(CoschedulingTest, MinResourcesAreCheckedAgainstFreeCapacityBeforeAnyPodIsPlaced) {
  Build();
  // n1 has 4 cpu, 1 of them used by a pod outside the gang.
  lister_.Set({NodeBuilder("n1")
                   .Capacity("4", "16Gi")
                   .Info({PodBuilder("other", kNs).Node("n1").Container("1", "1Gi").Info()})});
  Group("big", 2, {{"minResources", {{"cpu", "8"}, {"memory", "4Gi"}}}});
  auto a = Member("a", "big");
  Member("b", "big");
  Status refused = PreFilter(a);
  EXPECT_EQ(refused.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(refused.Message(),
            "pod group \"ml/big\" needs more than the cluster has free: cpu 8 (3 free)");

  lister_.Set({NodeBuilder("n1").Capacity("4", "16Gi").Info(),
               NodeBuilder("n2").Capacity("4", "16Gi").Info()});
  EXPECT_TRUE(PreFilter(a).IsSuccess());
}

TEST_F(CoschedulingTest, AMinimumPastInt64IsNeverFreeHoweverLargeTheNodes) {
  Build();
  // Two nodes of 8E memory: 1.6 * 10^19 bytes free in all, past int64. A minimum of 10^30 bytes
  // reads as int64's maximum, as a saturated free total used to; it must not count as free.
  lister_.Set(
      {NodeBuilder("n1").Capacity("4", "8E").Info(), NodeBuilder("n2").Capacity("4", "8E").Info()});
  Group("huge", 1, {{"minResources", {{"memory", "1e30"}}}});
  auto a = Member("a", "huge");
  Status refused = PreFilter(a);
  EXPECT_EQ(refused.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(refused.Message().rfind(
                "pod group \"ml/huge\" needs more than the cluster has free: memory ", 0),
            0u)
      << refused.Message();

  Group("large", 1, {{"minResources", {{"memory", "9E"}}}});
  EXPECT_TRUE(PreFilter(Member("b", "large")).IsSuccess());
}

TEST_F(CoschedulingTest, AGangsOwnPodsGiveBackOnlyWhatTheyHoldWhereANodesSumIsPastInt64) {
  Build();
  // n1's requests sum past int64: another pod's max-10 millicores and the gang's bound 100m. Only
  // 10m is free on it for the gang; handing the gang's 100m back to the clamped sum made it 100m.
  Group("edge", 2, {{"minResources", {{"cpu", "50m"}}}});
  auto gang_pod = [] {
    return PodBuilder("e-0", kNs)
        .Label(std::string(api::kPodGroupLabel), "edge")
        .Node("n1")
        .Container("100m", "1");
  };
  informers_.Pods().Upsert(gang_pod().Build());
  lister_.Set(
      {NodeBuilder("n1")
           .Capacity("9223372036854775807m", "16Gi")
           .Info({PodBuilder("other", kNs).Node("n1").Container("9223372036854775797m", "1").Info(),
                  gang_pod().Info()})});
  Status refused = PreFilter(Member("e-1", "edge"));
  EXPECT_EQ(refused.code(), Code::kUnschedulableAndUnresolvable) << refused.Message();
  EXPECT_EQ(refused.Message().rfind(
                "pod group \"ml/edge\" needs more than the cluster has free: cpu ", 0),
            0u)
      << refused.Message();
}

// ---- Permit: wait for minMember, then allow all at once ----

TEST_F(CoschedulingTest, PlacedPodsWaitUntilMinMemberThenAllBindTogether) {
  Build();
  Group("train", 3);
  const auto [p0, p1, p2] = Members<3>("train");
  auto extra = Member("p-3", "train");
  // The worker's activation of the completed gang, out of the way of the one tested here.
  ASSERT_TRUE(Eventually([&, uid = p2->meta.uid] { return Activated().count(uid) == 1; }));
  {
    std::lock_guard lock(mu_);
    activated_.clear();
  }

  EXPECT_TRUE(Place(p0).IsWait());
  // The first pod to wait brings the rest of its gang to the front of the queue.
  EXPECT_EQ(Activated(), (std::set<std::string>{p1->meta.uid, p2->meta.uid, extra->meta.uid}));
  EXPECT_TRUE(Place(p1).IsWait());
  EXPECT_NE(fwk_->GetWaitingPod(p0->meta.uid), nullptr);
  EXPECT_NE(fwk_->GetWaitingPod(p1->meta.uid), nullptr);

  EXPECT_TRUE(Place(p2).IsSuccess());
  EXPECT_TRUE(BindingCycle(p0).IsSuccess());
  EXPECT_TRUE(BindingCycle(p1).IsSuccess());
  ASSERT_EQ(GroupEvents("Scheduled").size(), 1u);
  EXPECT_EQ(GroupEvents("Scheduled")[0].note, "all 3 required pods placed; binding them");

  // A pod beyond minMember binds at once: its gang has its quorum.
  EXPECT_TRUE(Place(extra).IsSuccess());
}

TEST_F(CoschedulingTest, BoundPodsCountTowardsMinMember) {
  Build();
  Group("train", 3);
  PodBuilder bound("p-0", kNs);
  bound.Label(std::string(api::kPodGroupLabel), "train").Node("n1");
  informers_.Pods().Upsert(bound.Build());
  auto p1 = Member("p-1", "train");
  auto p2 = Member("p-2", "train");
  EXPECT_TRUE(Place(p1).IsWait());
  EXPECT_TRUE(Place(p2).IsSuccess());
  EXPECT_TRUE(BindingCycle(p1).IsSuccess());
}

// ---- Rejections release every waiting pod ----

TEST_F(CoschedulingTest, APodThatFitsNowhereRejectsEveryWaitingPodAndTheGangBacksOff) {
  Build({{"podGroupBackoffSeconds", 600}});
  Group("train", 4);
  const auto [p0, p1, p2, p3] = Members<4>("train");
  ASSERT_TRUE(PreFilter(p0).IsSuccess());
  EXPECT_TRUE(Place(p0).IsWait());
  EXPECT_TRUE(Place(p1).IsWait());
  EXPECT_TRUE(Place(p2).IsWait());

  Status post = PostFilter(p3);
  const std::string why =
      "pod group \"ml/train\" rejected: pod \"p-3\" fits no node, with 3 of 4 required pods placed";
  EXPECT_EQ(post.code(), Code::kUnschedulable);
  EXPECT_EQ(post.Message(), why);
  for (const auto& pod : {p0, p1, p2}) {
    Status s = BindingCycle(pod);
    EXPECT_EQ(s.code(), Code::kUnschedulable) << pod->meta.name;
    EXPECT_EQ(s.Message(), why) << pod->meta.name;
    EXPECT_EQ(s.plugin(), "Coscheduling");
  }
  ASSERT_FALSE(GroupEvents("FailedScheduling").empty());
  EXPECT_EQ(GroupEvents("FailedScheduling").back().note, why);
  // One failure, however many pods it released: their own Unreserve added none.
  EXPECT_EQ(plugin_->state().gangs.at(*plugin_->state().KeyOf(*p0)).failures.size(), 1u);
  EXPECT_EQ(PreFilter(p0).Message(),
            "pod group \"ml/train\" is backing off after a failed attempt");
}

TEST_F(CoschedulingTest, APodTurnedAwayByPreFilterIsNoFailedAttempt) {
  Build({{"podGroupBackoffSeconds", 600}});
  Group("train", 3);
  auto p0 = Member("p-0", "train");
  framework::CycleState state;
  framework::PreFilterResult result;
  ASSERT_FALSE(fwk_->RunPreFilterPlugins(state, *p0, lister_.List(), &result).IsSuccess());
  framework::NodeToStatus statuses;
  framework::PostFilterResult post;
  EXPECT_TRUE(fwk_->RunPostFilterPlugins(state, *p0, statuses, &post).reasons().empty());
  Member("p-1", "train");
  Member("p-2", "train");
  EXPECT_TRUE(PreFilter(p0).IsSuccess()) << "the gang backs off after an attempt it never made";
}

TEST_F(CoschedulingTest, AGangWithItsQuorumIsNotRejectedForAnExtraPodThatFitsNowhere) {
  Build();
  Group("train", 2);
  const auto [p0, p1, p2] = Members<3>("train");
  EXPECT_TRUE(Place(p0).IsWait());
  EXPECT_TRUE(Place(p1).IsSuccess());
  Status post = PostFilter(p2);
  EXPECT_TRUE(post.reasons().empty()) << post.Message();
  EXPECT_TRUE(BindingCycle(p0).IsSuccess());
  EXPECT_TRUE(PreFilter(p2).IsSuccess());
}

TEST_F(CoschedulingTest, ATimeoutRejectsTheWholeGang) {
  Build();
  Group("train", 3, {{"scheduleTimeoutSeconds", 1}});
  const auto [p0, p1, p2] = Members<3>("train");
  EXPECT_TRUE(Place(p0).IsWait());
  // Later, so that p-1's own deadline is still ahead when p-0 times out.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_TRUE(Place(p1).IsWait());
  Status first = BindingCycle(p0);
  EXPECT_EQ(first.Message(), "rejected due to timeout after waiting 1s at plugin Coscheduling");
  // p-1's own deadline has not passed: it goes because p-0 did.
  Status second = BindingCycle(p1);
  EXPECT_EQ(second.Message(),
            "pod group \"ml/train\" rejected: 2 of 3 required pods were placed within 1s");
}

TEST_F(CoschedulingTest, DeletingAWaitingPodReleasesItsGang) {
  Build();
  Group("train", 3);
  const auto [p0, p1, p2] = Members<3>("train");
  EXPECT_TRUE(Place(p0).IsWait());
  EXPECT_TRUE(Place(p1).IsWait());
  // What the scheduler does on the delete event, after the plugin's informer handler ran.
  informers_.Pods().Remove(p0->Key());
  fwk_->RejectWaitingPod(p0->meta.uid);
  EXPECT_FALSE(BindingCycle(p0).IsSuccess());
  EXPECT_EQ(BindingCycle(p1).Message(),
            "pod group \"ml/train\" rejected: pod \"p-0\" was deleted while waiting");
  EXPECT_EQ(PreFilter(p1).Message(), "pod group \"ml/train\" has 2 of 3 required pods");
}

TEST_F(CoschedulingTest, APodTurnedAwayBeforeItsUnreserveRanDoesNotCountTowardTheQuorum) {
  Build();
  Group("train", 3);
  const auto [p0, p1, p2] = Members<3>("train");
  EXPECT_TRUE(Place(p0).IsWait());
  EXPECT_TRUE(Place(p1).IsWait());
  // A preemption (or a timeout, or a delete) rejects p-0; its binding cycle, which runs its
  // Unreserve, has not started when p-2 reaches Permit.
  fwk_->GetWaitingPod(p0->meta.uid)->Reject("DefaultPreemption", "preempted");
  Status last = Place(p2);
  EXPECT_EQ(last.code(), Code::kUnschedulable) << last.Message();
  EXPECT_EQ(last.Message(),
            "pod group \"ml/train\" rejected: pod \"p-0\" was turned away while waiting");
  EXPECT_EQ(BindingCycle(p1).Message(), last.Message()) << "p-1 would bind with the gang short";
  EXPECT_EQ(BindingCycle(p0).Message(), "preempted");
}

TEST_F(CoschedulingTest, AWaitingPodARejectionCouldNotReachYetIsRejectedOnceParked) {
  Build();
  Group("train", 3);
  const auto [p0, p1, p2] = Members<3>("train");
  // p-0 passed Permit but the framework has not parked it yet when p-2 fails.
  framework::CycleState state;
  ASSERT_TRUE(fwk_->RunReservePluginsReserve(state, *p0, "n1").IsSuccess());
  std::chrono::milliseconds timeout{0};
  ASSERT_TRUE(plugin_->Permit(state, *p0, "n1", &timeout).IsWait());
  EXPECT_TRUE(Place(p1).IsWait());
  PostFilter(p2);
  waiting_->Add(p0->meta.uid, std::make_shared<framework::runtime::WaitingPodImpl>(
                                  p0, std::map<std::string, SteadyClock::time_point>{
                                          {"Coscheduling", SteadyClock::now() + timeout}}));
  Status s = fwk_->WaitOnPermit(*p0);
  EXPECT_EQ(s.Message(),
            "pod group \"ml/train\" rejected: pod \"p-2\" fits no node, with 2 of 3 required pods "
            "placed");
}

// ---- Background work ----

TEST_F(CoschedulingTest, TheLastPodOfAGangBringsBackTheOnesTurnedAwayForBeingTooFew) {
  Build();
  Group("train", 3);
  auto p0 = Member("p-0", "train");
  auto p1 = Member("p-1", "train");
  EXPECT_FALSE(PreFilter(p0).IsSuccess());
  EXPECT_TRUE(Activated().empty());
  auto p2 = Member("p-2", "train");
  EXPECT_TRUE(Eventually([&] { return Activated().count(p0->meta.uid) == 1; }));
  EXPECT_EQ(Activated(), (std::set<std::string>{p0->meta.uid, p1->meta.uid, p2->meta.uid}));
}

TEST_F(CoschedulingTest, PodsTurnedAwayDuringTheBackoffAreTriedWhenItEnds) {
  Build({{"podGroupBackoffSeconds", 1}});
  Group("train", 2);
  auto p0 = Member("p-0", "train");
  auto p1 = Member("p-1", "train");
  // The complete gang's activation, done by the worker, must not be mistaken for the one tested.
  ASSERT_TRUE(Eventually([&] { return Activated().size() == 2; }));
  EXPECT_TRUE(Place(p0).IsWait());
  PostFilter(p1);
  BindingCycle(p0);
  {
    std::lock_guard lock(mu_);
    activated_.clear();
  }
  ASSERT_EQ(PreFilter(p1).Message(),
            "pod group \"ml/train\" is backing off after a failed attempt");
  EXPECT_TRUE(Eventually([&] { return Activated().count(p1->meta.uid) == 1; }));
  EXPECT_TRUE(PreFilter(p1).IsSuccess()) << PreFilter(p1).Message();
}

// ---- Queue order ----

framework::QueuedPodInfo Queued(const api::PodPtr& pod, SteadyClock::time_point at) {
  framework::QueuedPodInfo info;
  info.pod_info = std::make_shared<framework::PodInfo>(pod);
  info.timestamp = at;
  return info;
}

TEST_F(CoschedulingTest, QueueOrderIsPriorityThenGangCreationOrLastFailureThenName) {
  Build({{"podGroupBackoffSeconds", 0}});
  Group("older", 2, json::object(), "2025-01-01T00:00:00Z");
  Group("newer", 2, json::object(), "2025-01-02T00:00:00Z");
  const auto now = SteadyClock::now();
  auto o1 = Queued(Member("o-1", "older"), now);
  auto o0 = Queued(Member("o-0", "older"), now + 1s);
  auto n0 = Queued(Member("n-0", "newer"), now - 1h);
  auto urgent = Queued(Member("u-0", "newer", 10), now);
  // Queued now, long after both gangs were created.
  auto solo = Queued(PodBuilder("solo", kNs).Build(), now);

  std::vector<framework::QueuedPodInfo> queue = {o1, n0, solo, o0, urgent};
  auto less = [&](const auto& a, const auto& b) { return plugin_->Less(a, b); };
  std::sort(queue.begin(), queue.end(), less);
  std::vector<std::string> order;
  order.reserve(queue.size());
  for (const auto& q : queue) order.push_back(q.pod().meta.name);
  // Priority first; then a gang's pods together, by its creation, whenever each was queued; a pod
  // outside gangs by when it was queued.
  EXPECT_EQ(order, (std::vector<std::string>{"u-0", "o-0", "o-1", "n-0", "solo"}));

  // The older gang fails. Its pods queued after that go behind the newer gang; the ones queued
  // before keep their place (a queued pod's key never changes).
  Group("older", 3, json::object(), "2025-01-01T00:00:00Z");
  Place(o0.pod_info->pod);
  PostFilter(o1.pod_info->pod);
  auto requeued = Queued(o1.pod_info->pod, SteadyClock::now() + 1ms);
  EXPECT_TRUE(less(n0, requeued));
  EXPECT_FALSE(less(requeued, n0));
  EXPECT_TRUE(less(o1, n0));
}

}  // namespace
}  // namespace berth::plugins::coscheduling
