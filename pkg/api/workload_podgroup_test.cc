#include "pkg/api/workload_podgroup.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pkg/api/errors.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

json Group(const json& spec) {
  return {{"apiVersion", "scheduling.k8s.io/v1beta1"},
          {"kind", "PodGroup"},
          {"metadata",
           {{"name", "train"},
            {"namespace", "ml"},
            {"uid", "u1"},
            {"generation", 3},
            {"creationTimestamp", "2025-01-02T03:04:05Z"}}},
          {"spec", spec}};
}

TEST(WorkloadPodGroupDecode, ReadsAGangDisruptedOnlyAsAWhole) {
  WorkloadPodGroup group =
      DecodeWorkloadPodGroup(Group({{"schedulingPolicy", {{"gang", {{"minCount", 2}}}}},
                                    {"disruptionMode", {{"all", json::object()}}}}));
  EXPECT_TRUE(group.problem.empty()) << group.problem;
  EXPECT_TRUE(group.spec.disrupted_as_whole);
}

// Its pods are still placed one by one; only a preemption takes them all or none.
TEST(WorkloadPodGroupDecode, ReadsABasicGroupDisruptedOnlyAsAWhole) {
  WorkloadPodGroup group =
      DecodeWorkloadPodGroup(Group({{"schedulingPolicy", {{"basic", json::object()}}},
                                    {"disruptionMode", {{"all", json::object()}}}}));
  EXPECT_TRUE(group.problem.empty()) << group.problem;
  EXPECT_FALSE(group.spec.gang);
  EXPECT_TRUE(group.spec.disrupted_as_whole);
}

TEST(WorkloadPodGroupDecode, ReadsAGangAsTheApiserverServesIt) {
  json object = Group({{"schedulingPolicy", {{"gang", {{"minCount", 4}}}}},
                       {"disruptionMode", {{"single", json::object()}}},
                       {"priority", 100},
                       {"preemptionPolicy", "Never"},
                       {"workloadRef", {{"workloadName", "job"}, {"templateName", "workers"}}}});
  object["status"] = {{"conditions",
                       {{{"type", "DisruptionTarget"}, {"status", "False"}},
                        {{"type", "PodGroupInitiallyScheduled"},
                         {"status", "False"},
                         {"reason", "Unschedulable"},
                         {"message", "3 of 4 placed"},
                         {"observedGeneration", 2},
                         {"lastTransitionTime", "2025-01-02T03:05:00Z"}}}}};
  WorkloadPodGroup group = DecodeWorkloadPodGroup(object);
  EXPECT_EQ(group.meta.Key(), "ml/train");
  EXPECT_EQ(group.meta.generation, 3);
  EXPECT_TRUE(group.spec.gang);
  EXPECT_EQ(group.spec.min_count, 4);
  EXPECT_EQ(group.spec.priority, 100);
  EXPECT_EQ(group.spec.preemption_policy, PreemptionPolicy::kNever);
  EXPECT_FALSE(group.spec.disrupted_as_whole);
  ASSERT_TRUE(group.initially_scheduled.has_value());
  EXPECT_EQ(*group.initially_scheduled,
            (WorkloadPodGroupCondition{"False", "Unschedulable", "3 of 4 placed", 2}));
  EXPECT_TRUE(group.problem.empty()) << group.problem;
}

TEST(WorkloadPodGroupDecode, TheBasicPolicyPlacesPodsOneByOne) {
  WorkloadPodGroup group = DecodeWorkloadPodGroup(
      Group({{"schedulingPolicy", {{"basic", json::object()}}}, {"schedulingConstraints", {}}}));
  EXPECT_FALSE(group.spec.gang);
  EXPECT_EQ(group.spec.min_count, 1);
  EXPECT_EQ(group.spec.priority, 0);
  EXPECT_FALSE(group.spec.preemption_policy.has_value());
  EXPECT_FALSE(group.initially_scheduled.has_value());
  EXPECT_TRUE(group.problem.empty()) << group.problem;
}

TEST(WorkloadPodGroupDecode, AnUnusableOrUnsupportedSpecIsKeptWithItsProblem) {
  const struct {
    const char* spec;
    std::string problem;
  } cases[] = {
      {"null", "spec: required"},
      {"{}", "spec.schedulingPolicy: one of basic and gang is required"},
      {R"({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}})",
       "spec.schedulingPolicy: only one of basic and gang may be set"},
      {R"({"schedulingPolicy": {"gang": {}}})",
       "spec.schedulingPolicy.gang.minCount: must be at least 1, got 0"},
      {R"({"schedulingPolicy": {"gang": {"minCount": "4"}}})",
       "spec.schedulingPolicy.gang.minCount: expected integer, got string"},
      {R"({"schedulingPolicy": {"gang": {"minCount": 2}}, "preemptionPolicy": "Sometimes"})",
       "spec.preemptionPolicy: unknown value \"Sometimes\""},
      {R"({"schedulingPolicy": {"gang": {"minCount": 2}},
           "schedulingConstraints": {"topology": [{"key": "zone"}, {"key": "region"}]}})",
       "spec.schedulingConstraints.topology: at most 1 entry may be given, got 2"},
      {R"({"schedulingPolicy": {"gang": {"minCount": 2}},
           "schedulingConstraints": {"topology": [{"key": ""}]}})",
       "spec.schedulingConstraints.topology[0].key: required"},
      {R"({"schedulingPolicy": {"gang": {"minCount": 2}},
           "schedulingConstraints": {"topology": [{"key": "a b"}]}})",
       "spec.schedulingConstraints.topology[0].key: \"a b\" is not a valid label key"},
      {R"({"schedulingPolicy": {"gang": {"minCount": 2}},
           "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}]})",
       "spec.resourceClaims: resource claims shared by a pod group are not supported by "
       "berth-scheduler"},
      {R"({"schedulingPolicy": {"gang": {"minCount": 2}},
           "disruptionMode": {"all": {}, "single": {}}})",
       "spec.disruptionMode: only one of single and all may be set"},
      {R"({"schedulingPolicy": {"basic": {}}, "parentCompositePodGroupName": "job"})",
       "spec.parentCompositePodGroupName: composite pod groups are not supported by "
       "berth-scheduler"},
  };
  for (const auto& c : cases) {
    WorkloadPodGroup group = DecodeWorkloadPodGroup(Group(json::parse(c.spec)));
    EXPECT_EQ(group.problem, c.problem) << c.spec;
    EXPECT_EQ(group.spec, WorkloadPodGroupSpec()) << c.spec;
    EXPECT_EQ(group.meta.name, "train");
  }
}

TEST(WorkloadPodGroupDecode, AMalformedStatusReadsAsNoneAndNoNameThrows) {
  json object = Group({{"schedulingPolicy", {{"gang", {{"minCount", 2}}}}}});
  object["status"] = {{"conditions", "Scheduled"}};
  WorkloadPodGroup group = DecodeWorkloadPodGroup(object);
  EXPECT_FALSE(group.initially_scheduled.has_value());
  EXPECT_TRUE(group.problem.empty()) << group.problem;
  EXPECT_EQ(group.spec.min_count, 2);

  object.erase("metadata");
  EXPECT_THROW(DecodeWorkloadPodGroup(object), DecodeError);
}

}  // namespace
}  // namespace berth::api
