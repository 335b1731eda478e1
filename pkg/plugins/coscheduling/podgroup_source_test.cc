#include "pkg/plugins/coscheduling/podgroup_source.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "test/testing/objects.h"
#include "test/testing/unused_client.h"

namespace berth::plugins::coscheduling {
namespace {

using json = nlohmann::json;
using testing::PodBuilder;

// Lists the scripted pods, records status patches; `missing` makes every PATCH a 404.
class StatusClient : public testing::UnusedClient {
 public:
  json pods = {{"kind", "PodList"}, {"items", json::array()}};
  bool missing = false;

  json Get(const std::string& path) override {
    std::lock_guard lock(mu_);
    gets_.push_back(path);
    return pods;
  }
  json Patch(const std::string& path, const json& body, client::PatchType type) override {
    std::lock_guard lock(mu_);
    EXPECT_EQ(type, client::PatchType::kMerge);
    if (missing) throw client::ApiError(client::ErrorReason::kNotFound, 404, "gone");
    patches_.emplace_back(path, body);
    return body;
  }
  std::vector<std::string> gets() {
    std::lock_guard lock(mu_);
    return gets_;
  }
  std::vector<std::pair<std::string, json>> patches() {
    std::lock_guard lock(mu_);
    return patches_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> gets_;
  std::vector<std::pair<std::string, json>> patches_;
};

json PodJson(const std::string& name, const std::string& phase, const std::string& node,
             const std::string& owner = "") {
  json pod = {{"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"spec", {{"nodeName", node}}},
              {"status", {{"phase", phase}}}};
  if (!owner.empty()) pod["metadata"]["ownerReferences"] = {{{"kind", "Job"}, {"name", owner}}};
  return pod;
}

json List(std::vector<json> items) { return {{"kind", "PodList"}, {"items", items}}; }

class PodGroupSourceTest : public ::testing::Test {
 protected:
  void Upsert(const json& spec, const json& status = nullptr) {
    json object = {{"metadata",
                    {{"name", "train"},
                     {"namespace", "ml"},
                     {"uid", "u-train"},
                     {"resourceVersion", "5"},
                     {"creationTimestamp", "2025-03-04T05:06:07Z"}}},
                   {"spec", spec}};
    if (!status.is_null()) object["status"] = status;
    informers_.For<api::PodGroup>().Upsert(
        std::make_shared<api::PodGroup>(api::DecodePodGroup(object)));
  }

  informer::SharedInformerFactory informers_{nullptr};
  StatusClient client_;
  PodGroupSource source_{informers_, &client_};
};

TEST_F(PodGroupSourceTest, APodJoinsTheGroupItsLabelNames) {
  EXPECT_EQ(
      source_.GangOf(*PodBuilder("p").Label("scheduling.x-k8s.io/pod-group", "train").Build()),
      "train");
  EXPECT_EQ(source_.GangOf(*PodBuilder("p").Build()), "");
  EXPECT_EQ(source_.Kind(), "PodGroup");
}

TEST_F(PodGroupSourceTest, GetReadsTheSpecAndTheObjectToRecordEventsOn) {
  GangSpec spec;
  std::string why;
  EXPECT_EQ(source_.Get("ml", "train", &spec, &why), Lookup::kNotFound);
  Upsert({{"minMember", 4}, {"minResources", {{"cpu", "2"}}}, {"scheduleTimeoutSeconds", 30}});
  ASSERT_EQ(source_.Get("ml", "train", &spec, &why), Lookup::kFound);
  EXPECT_EQ(spec.uid, "u-train");
  EXPECT_EQ(spec.min_member, 4);
  ASSERT_TRUE(spec.min_resources.has_value());
  EXPECT_EQ(spec.min_resources->milli_cpu, 2000);
  EXPECT_EQ(spec.wait, std::chrono::seconds(30));
  EXPECT_EQ(std::chrono::system_clock::to_time_t(spec.created), 1741064767);
  EXPECT_TRUE(spec.problem.empty());
  EXPECT_EQ(source_.Reference("ml", "train"),
            (api::ObjectReference{"scheduling.x-k8s.io/v1alpha1", "PodGroup", "ml", "train",
                                  "u-train", "5"}));
}

TEST_F(PodGroupSourceTest, ItsEventsRequeueOnlyTheGroupsOwnPods) {
  Upsert({{"minMember", 2}});
  auto events = source_.Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kPodGroup);
  framework::EventObjects objects;
  objects.new_object = informers_.For<api::PodGroup>().store().Get("ml/train");
  auto pod = [](const std::string& ns, const std::string& group) {
    return PodBuilder("p", ns).Label("scheduling.x-k8s.io/pod-group", group).Build();
  };
  EXPECT_EQ(events[0].hint(*pod("ml", "train"), objects), framework::QueueingHint::kQueue);
  EXPECT_EQ(events[0].hint(*pod("ml", "other"), objects), framework::QueueingHint::kSkip);
  EXPECT_EQ(events[0].hint(*pod("other", "train"), objects), framework::QueueingHint::kSkip);

  // An update of the status alone (the scheduler's own writes) brings no pod back; one of the
  // spec does.
  objects.old_object = informers_.For<api::PodGroup>().store().Get("ml/train");
  Upsert({{"minMember", 2}}, {{"phase", "Scheduling"}});
  objects.new_object = informers_.For<api::PodGroup>().store().Get("ml/train");
  EXPECT_EQ(events[0].hint(*pod("ml", "train"), objects), framework::QueueingHint::kSkip);
  Upsert({{"minMember", 1}}, {{"phase", "Scheduling"}});
  objects.new_object = informers_.For<api::PodGroup>().store().Get("ml/train");
  EXPECT_EQ(events[0].hint(*pod("ml", "train"), objects), framework::QueueingHint::kQueue);
}

TEST(PodGroupStatus, PhaseAndCountsFollowThePodsAndTheSchedulersProgress) {
  GangProgress none;
  GangProgress placing;
  placing.assumed = 2;
  placing.waiting = 2;
  placing.schedule_start = std::chrono::system_clock::from_time_t(1741064767);
  const api::PodGroupStatus empty;
  struct Case {
    std::vector<json> pods;
    GangProgress progress;
    std::string phase;
    int running, succeeded, failed;
  };
  for (const Case& c : {
           Case{{}, none, "Pending", 0, 0, 0},
           Case{{PodJson("a", "Pending", ""), PodJson("b", "Pending", "")},
                placing,
                "Scheduling",
                0,
                0,
                0},
           Case{{PodJson("a", "Pending", "n1"), PodJson("b", "Running", "n2")},
                none,
                "Running",
                2,
                0,
                0},
           Case{{PodJson("a", "Succeeded", "n1"), PodJson("b", "Running", "n2")},
                none,
                "Running",
                1,
                1,
                0},
           Case{{PodJson("a", "Succeeded", "n1"), PodJson("b", "Succeeded", "n2")},
                none,
                "Finished",
                0,
                2,
                0},
           Case{{PodJson("a", "Failed", "n1"), PodJson("b", "Running", "n2")},
                none,
                "Failed",
                1,
                0,
                1},
           Case{{PodJson("a", "Failed", "n1"), PodJson("b", "Pending", "")},
                none,
                "Pending",
                0,
                0,
                1},
       }) {
    api::PodGroupStatus status = PodGroupSource::StatusFor(List(c.pods), 2, c.progress, empty);
    EXPECT_EQ(status.phase, c.phase) << json(c.pods).dump();
    EXPECT_EQ(status.running, c.running) << c.phase;
    EXPECT_EQ(status.succeeded, c.succeeded) << c.phase;
    EXPECT_EQ(status.failed, c.failed) << c.phase;
  }
  api::PodGroupStatus status = PodGroupSource::StatusFor(
      List({PodJson("a", "Pending", "", "job-b"), PodJson("b", "Pending", "", "job-a"),
            PodJson("c", "Pending", "", "job-a")}),
      3, placing, empty);
  EXPECT_EQ(status.occupied_by, "ml/job-a,ml/job-b");
  EXPECT_EQ(status.schedule_start_time, "2025-03-04T05:06:07Z");
  api::PodGroupStatus earlier;
  earlier.schedule_start_time = "2025-01-01T00:00:00Z";
  EXPECT_EQ(PodGroupSource::StatusFor(List({}), 3, placing, earlier).schedule_start_time,
            "2025-01-01T00:00:00Z");
}

TEST_F(PodGroupSourceTest, WriteStatusPatchesOnlyWhatChanged) {
  Upsert({{"minMember", 2}});
  client_.pods = List({PodJson("a", "Running", "n1", "job"), PodJson("b", "Pending", "n2", "job")});
  source_.WriteStatus("ml", "train", GangProgress());
  ASSERT_EQ(client_.gets().size(), 1u);
  EXPECT_EQ(client_.gets()[0],
            "/api/v1/namespaces/ml/pods?labelSelector=scheduling.x-k8s.io%2Fpod-group%3Dtrain"
            "&resourceVersion=0");
  auto patches = client_.patches();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].first,
            "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/train/status");
  EXPECT_EQ(patches[0].second, json::parse(R"({"status": {"phase": "Running", "running": 2,
      "succeeded": 0, "failed": 0, "occupiedBy": "ml/job"}})"));

  // The object already says so: nothing to write.
  Upsert({{"minMember", 2}}, {{"phase", "Running"}, {"running", 2}, {"occupiedBy", "ml/job"}});
  source_.WriteStatus("ml", "train", GangProgress());
  EXPECT_EQ(client_.patches().size(), 1u);

  // Deleted meanwhile: not an error.
  client_.pods = List({});
  client_.missing = true;
  EXPECT_NO_THROW(source_.WriteStatus("ml", "train", GangProgress()));
  // Not in the informer at all: nothing is asked.
  EXPECT_NO_THROW(source_.WriteStatus("ml", "absent", GangProgress()));
  EXPECT_EQ(client_.gets().size(), 3u);
}

}  // namespace
}  // namespace berth::plugins::coscheduling
