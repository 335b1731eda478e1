#include "pkg/plugins/coscheduling/workload_podgroup_source.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "pkg/plugins/coscheduling/coscheduling.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"
#include "test/testing/unused_client.h"

namespace berth::plugins::coscheduling {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::PodBuilder;

// Records status patches; `missing` makes every PATCH a 404.
class PatchClient : public testing::UnusedClient {
 public:
  bool missing = false;

  json Patch(const std::string& path, const json& body, client::PatchType type) override {
    std::lock_guard lock(mu_);
    EXPECT_EQ(type, client::PatchType::kStrategicMerge);
    if (missing) throw client::ApiError(client::ErrorReason::kNotFound, 404, "gone");
    patches_.emplace_back(path, body);
    return body;
  }
  std::vector<std::pair<std::string, json>> patches() {
    std::lock_guard lock(mu_);
    return patches_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, json>> patches_;
};

// An apiserver that serves no scheduling.k8s.io/v1beta1 (discovery answers 404).
class NoWorkloadApi : public testing::UnusedClient {
 public:
  json Get(const std::string& path) override {
    EXPECT_EQ(path, "/apis/scheduling.k8s.io/v1beta1");
    throw client::ApiError(client::ErrorReason::kNotFound, 404, "not found");
  }
};

json Object(const json& spec, const json& status = nullptr) {
  json object = {{"metadata",
                  {{"name", "train"},
                   {"namespace", "ml"},
                   {"uid", "u-train"},
                   {"resourceVersion", "5"},
                   {"generation", 2},
                   {"creationTimestamp", "2025-03-04T05:06:07Z"}}},
                 {"spec", spec}};
  if (!status.is_null()) object["status"] = status;
  return object;
}

json Gang(int min_count) { return {{"schedulingPolicy", {{"gang", {{"minCount", min_count}}}}}}; }

json WithCondition(const std::string& status, const std::string& reason,
                   const std::string& message) {
  return {{"conditions",
           {{{"type", "PodGroupInitiallyScheduled"},
             {"status", status},
             {"reason", reason},
             {"message", message},
             {"observedGeneration", 2},
             {"lastTransitionTime", "2025-03-04T05:07:00Z"}}}}};
}

api::PodPtr Member(const std::string& ns, const std::string& group) {
  PodBuilder pod("p", ns);
  pod.pod().spec.scheduling_group = group;
  return pod.Build();
}

class WorkloadPodGroupSourceTest : public ::testing::Test {
 protected:
  void Upsert(const json& spec, const json& status = nullptr) {
    informers_.For<api::WorkloadPodGroup>().Upsert(
        std::make_shared<api::WorkloadPodGroup>(api::DecodeWorkloadPodGroup(Object(spec, status))));
  }

  informer::SharedInformerFactory informers_{nullptr};
  PatchClient client_;
  WorkloadPodGroupSource source_{informers_, &client_};
};

TEST_F(WorkloadPodGroupSourceTest, APodJoinsTheGroupItsSchedulingGroupNames) {
  EXPECT_EQ(source_.GangOf(*Member("ml", "train")), "train");
  EXPECT_EQ(source_.GangOf(*PodBuilder("p").Label("scheduling.x-k8s.io/pod-group", "x").Build()),
            "");
  EXPECT_EQ(source_.Kind(), "PodGroup");
}

TEST_F(WorkloadPodGroupSourceTest, GetReadsMinCountTheRequiredPriorityAndTheObjectForEvents) {
  GangSpec spec;
  std::string why;
  EXPECT_EQ(source_.Get("ml", "train", &spec, &why), Lookup::kNotFound);
  json gang = Gang(4);
  gang["priority"] = 7;
  gang["preemptionPolicy"] = "Never";
  Upsert(gang);
  ASSERT_EQ(source_.Get("ml", "train", &spec, &why), Lookup::kFound);
  EXPECT_EQ(spec.uid, "u-train");
  EXPECT_EQ(spec.min_member, 4);
  EXPECT_EQ(spec.priority, 7);
  EXPECT_EQ(spec.preemption_policy, api::PreemptionPolicy::kNever);
  EXPECT_FALSE(spec.min_resources.has_value());
  EXPECT_FALSE(spec.wait.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(spec.created), 1741064767);
  EXPECT_TRUE(spec.problem.empty());
  EXPECT_EQ(source_.Reference("ml", "train"),
            (api::ObjectReference{"scheduling.k8s.io/v1beta1", "PodGroup", "ml", "train", "u-train",
                                  "5"}));

  // The basic policy: pods one by one, all at the group's priority (0 when unset).
  Upsert({{"schedulingPolicy", {{"basic", json::object()}}}});
  ASSERT_EQ(source_.Get("ml", "train", &spec, &why), Lookup::kFound);
  EXPECT_EQ(spec.min_member, 1);
  EXPECT_EQ(spec.priority, 0);
  EXPECT_FALSE(spec.preemption_policy.has_value());

  Upsert({{"schedulingPolicy", {{"gang", {{"minCount", 2}}}}},
          {"schedulingConstraints", {{"topology", {{{"key", "zone"}}}}}}});
  ASSERT_EQ(source_.Get("ml", "train", &spec, &why), Lookup::kFound);
  EXPECT_EQ(spec.problem, "");
  ASSERT_TRUE(spec.topology.has_value());
  EXPECT_EQ(spec.topology->keys, std::vector<std::string>{"zone"});
  EXPECT_FALSE(spec.topology->preferred);
}

TEST(WorkloadPodGroupSourceUnserved, WithoutTheApiItsGangsCannotBeReadAndSayWhy) {
  informer::SharedInformerFactory informers(std::make_shared<NoWorkloadApi>());
  WorkloadPodGroupSource source(informers, nullptr);
  GangSpec spec;
  std::string why;
  // Before discovery has answered.
  EXPECT_EQ(source.Get("ml", "train", &spec, &why), Lookup::kUnavailable);
  EXPECT_EQ(why, "PodGroups are not listed yet");
  informers.Start();
  ASSERT_TRUE(informers.WaitForCacheSync(10s));
  EXPECT_EQ(source.Get("ml", "train", &spec, &why), Lookup::kUnavailable);
  EXPECT_EQ(
      why,
      "the PodGroup API (scheduling.k8s.io/v1beta1) is not served: the apiserver runs without "
      "the GenericWorkload feature gate or that API version");
  informers.Stop();
}

// Never placed as if it named no group: Coscheduling turns it away with the reason.
TEST(WorkloadPodGroupSourceUnserved, APodNamingAGroupIsNotPlacedWhileTheApiIsNotServed) {
  informer::SharedInformerFactory informers(std::make_shared<NoWorkloadApi>());
  testing::FakeHandle handle;
  std::vector<std::unique_ptr<GangSource>> sources;
  sources.push_back(std::make_unique<WorkloadPodGroupSource>(informers, nullptr));
  Coscheduling plugin(Args(), handle, std::move(sources));
  informers.Start();
  ASSERT_TRUE(informers.WaitForCacheSync(10s));
  auto pod = Member("ml", "train");
  framework::CycleState state;
  framework::PreFilterResult result;
  const framework::Status status = plugin.PreFilter(state, *pod, {}, &result);
  EXPECT_EQ(status.code(), framework::Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(status.Message(),
            "pod group \"ml/train\" cannot be read: the PodGroup API (scheduling.k8s.io/v1beta1) "
            "is not served: the apiserver runs without the GenericWorkload feature gate or that "
            "API version");
  informers.Stop();
}

TEST_F(WorkloadPodGroupSourceTest, ItsEventsRequeueOnlyTheGroupsOwnPodsAndNotForStatusWrites) {
  Upsert(Gang(2));
  auto events = source_.Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kWorkloadPodGroup);
  EXPECT_EQ(events[0].event.resource.name(), "scheduling.k8s.io/PodGroup");
  framework::EventObjects objects;
  auto& store = informers_.For<api::WorkloadPodGroup>().store();
  objects.new_object = store.Get("ml/train");
  EXPECT_EQ(events[0].hint(*Member("ml", "train"), objects), framework::QueueingHint::kQueue);
  EXPECT_EQ(events[0].hint(*Member("ml", "other"), objects), framework::QueueingHint::kSkip);
  EXPECT_EQ(events[0].hint(*Member("other", "train"), objects), framework::QueueingHint::kSkip);
  EXPECT_EQ(events[0].hint(*PodBuilder("p", "ml").Build(), objects),
            framework::QueueingHint::kSkip);

  objects.old_object = store.Get("ml/train");
  Upsert(Gang(2), WithCondition("False", "Unschedulable", "no"));
  objects.new_object = store.Get("ml/train");
  EXPECT_EQ(events[0].hint(*Member("ml", "train"), objects), framework::QueueingHint::kSkip);
  Upsert(Gang(1), WithCondition("False", "Unschedulable", "no"));
  objects.new_object = store.Get("ml/train");
  EXPECT_EQ(events[0].hint(*Member("ml", "train"), objects), framework::QueueingHint::kQueue);
}

TEST(WorkloadPodGroupCondition, FollowsTheSchedulersProgressAndNeverLeavesTrue) {
  using Condition = api::WorkloadPodGroupCondition;
  auto group = [](const json& spec, const json& status = nullptr) {
    return api::DecodeWorkloadPodGroup(Object(spec, status));
  };
  GangProgress none;
  GangProgress failed;
  failed.last_rejection = "pod group \"ml/train\" rejected: 3 of 4 placed";
  GangProgress waiting;
  waiting.assumed = 3;
  waiting.waiting = 3;
  waiting.last_rejection = failed.last_rejection;
  GangProgress allowed;
  allowed.assumed = 3;
  allowed.bound = 1;
  GangProgress partly_bound;
  partly_bound.bound = 2;

  auto cond = &WorkloadPodGroupSource::ConditionFor;
  EXPECT_EQ(cond(group(Gang(4)), none), std::nullopt);
  EXPECT_EQ(cond(group(Gang(4)), failed),
            (Condition{"False", "Unschedulable", failed.last_rejection, 2}));
  EXPECT_EQ(cond(group(Gang(4)), waiting),
            (Condition{"False", "Unschedulable", failed.last_rejection, 2}));
  EXPECT_EQ(cond(group(Gang(4)), partly_bound), std::nullopt);
  EXPECT_EQ(cond(group(Gang(4)), allowed),
            (Condition{"True", "Scheduled", "all 4 required pods placed", 2}));
  EXPECT_EQ(cond(group({{"schedulingPolicy", {{"basic", json::object()}}}}), partly_bound),
            (Condition{"True", "Scheduled", "", 2}));
  EXPECT_EQ(cond(group(json::object()), none),
            (Condition{"False", "SchedulerError",
                       "spec.schedulingPolicy: one of basic and gang is required", 2}));

  // What the object already says is not written again, and True stays.
  EXPECT_EQ(
      cond(group(Gang(4), WithCondition("False", "Unschedulable", failed.last_rejection)), failed),
      std::nullopt);
  EXPECT_EQ(cond(group(Gang(4), WithCondition("True", "Scheduled", "")), failed), std::nullopt);
}

TEST_F(WorkloadPodGroupSourceTest, WriteStatusMergesTheConditionByTypeAndStampsTransitionsOnly) {
  GangProgress failed;
  failed.last_rejection = "rejected";
  source_.WriteStatus("ml", "train", failed);  // Not in the informer: nothing to write.
  EXPECT_TRUE(client_.patches().empty());

  Upsert(Gang(2));
  source_.WriteStatus("ml", "train", failed);
  auto patches = client_.patches();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].first,
            "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/train/status");
  json item = patches[0].second["status"]["conditions"][0];
  EXPECT_TRUE(item["lastTransitionTime"].is_string()) << item.dump();
  item.erase("lastTransitionTime");
  EXPECT_EQ(item, json::parse(R"({"type": "PodGroupInitiallyScheduled", "status": "False",
      "reason": "Unschedulable", "message": "rejected", "observedGeneration": 2})"));

  // Another failure with other words: the same status, so the transition time stays.
  Upsert(Gang(2), WithCondition("False", "Unschedulable", "rejected"));
  failed.last_rejection = "rejected again";
  source_.WriteStatus("ml", "train", failed);
  patches = client_.patches();
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_FALSE(patches[1].second["status"]["conditions"][0].contains("lastTransitionTime"));

  // Deleted meanwhile: not an error.
  client_.missing = true;
  EXPECT_NO_THROW(source_.WriteStatus("ml", "train", failed));
}

}  // namespace
}  // namespace berth::plugins::coscheduling
