#include "pkg/api/podgroup.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/errors.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

json Group(const json& spec) {
  return {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
          {"kind", "PodGroup"},
          {"metadata",
           {{"name", "train"},
            {"namespace", "ml"},
            {"uid", "u1"},
            {"resourceVersion", "7"},
            {"creationTimestamp", "2025-01-02T03:04:05Z"}}},
          {"spec", spec}};
}

TEST(PodGroupDecode, ReadsTheSpecSchedulerPluginsUsersWrite) {
  json object =
      Group({{"minMember", 4},
             {"minResources", {{"cpu", "3500m"}, {"memory", "2Gi"}, {"nvidia.com/gpu", 8}}},
             {"scheduleTimeoutSeconds", 30}});
  object["status"] = {{"phase", "Running"}, {"occupiedBy", "ml/job"},
                      {"running", 4},       {"succeeded", 1},
                      {"failed", 2},        {"scheduleStartTime", "2025-01-02T03:05:00Z"}};
  PodGroup group = DecodePodGroup(object);
  EXPECT_EQ(group.meta.Key(), "ml/train");
  EXPECT_EQ(group.meta.creation_timestamp, "2025-01-02T03:04:05Z");
  EXPECT_EQ(group.spec.min_member, 4);
  ASSERT_TRUE(group.spec.min_resources.has_value());
  EXPECT_EQ(group.spec.min_resources->milli_cpu, 3500);
  EXPECT_EQ(group.spec.min_resources->memory, 2LL << 30);
  EXPECT_EQ(group.spec.min_resources->Get("nvidia.com/gpu"), 8);
  EXPECT_EQ(group.spec.schedule_timeout_seconds, 30);
  EXPECT_EQ(group.status.phase, "Running");
  EXPECT_EQ(group.status.occupied_by, "ml/job");
  EXPECT_EQ(group.status.running, 4);
  EXPECT_EQ(group.status.succeeded, 1);
  EXPECT_EQ(group.status.failed, 2);
  EXPECT_EQ(group.status.schedule_start_time, "2025-01-02T03:05:00Z");
  EXPECT_TRUE(group.problem.empty()) << group.problem;
}

TEST(PodGroupDecode, AbsentOrZeroFieldsTakeTheirDefaults) {
  for (const json& spec :
       {json(nullptr), json::object(), json{{"minMember", 0}, {"scheduleTimeoutSeconds", 0}}}) {
    PodGroup group = DecodePodGroup(Group(spec));
    EXPECT_EQ(group.spec.min_member, 1) << spec.dump();
    EXPECT_FALSE(group.spec.min_resources.has_value()) << spec.dump();
    EXPECT_FALSE(group.spec.schedule_timeout_seconds.has_value()) << spec.dump();
    EXPECT_TRUE(group.problem.empty()) << group.problem;
  }
}

TEST(PodGroupDecode, AMalformedSpecIsKeptWithTheProblemNamingTheField) {
  struct Case {
    json spec;
    std::string problem;
  };
  for (const Case& c : {
           Case{{{"minMember", -2}}, "spec.minMember: must not be negative, got -2"},
           Case{{{"minMember", "four"}}, "spec.minMember: expected integer, got string"},
           Case{{{"minMember", 1LL << 40}}, "spec.minMember: integer 1099511627776 out of int32"},
           Case{{{"minMember", 2}, {"minResources", {{"cpu", "lots"}}}},
                "spec.minResources.cpu: invalid quantity \"lots\""},
           Case{{{"minMember", 2}, {"minResources", "8 cpus"}},
                "spec.minResources: expected object, got string"},
           Case{{{"scheduleTimeoutSeconds", -1}},
                "spec.scheduleTimeoutSeconds: must not be negative, got -1"},
           Case{json::array(), "spec: expected object, got array"},
       }) {
    PodGroup group = DecodePodGroup(Group(c.spec));
    EXPECT_EQ(group.meta.Key(), "ml/train");
    EXPECT_EQ(group.problem.substr(0, c.problem.size()), c.problem) << group.problem;
  }
}

TEST(PodGroupDecode, ReadsTheTopologyConstraintWithItsFallbackLevelsAndPolicy) {
  PodGroup group = DecodePodGroup(
      Group({{"minMember", 8},
             {"schedulingConstraints",
              {{"topology", {{{"key", "example.com/rack"}}, {{"key", "example.com/block"}}}},
               {"topologyPolicy", "Preferred"}}}}));
  ASSERT_TRUE(group.problem.empty()) << group.problem;
  ASSERT_TRUE(group.spec.topology.has_value());
  EXPECT_EQ(group.spec.topology->keys,
            (std::vector<std::string>{"example.com/rack", "example.com/block"}));
  EXPECT_TRUE(group.spec.topology->preferred);

  // Upstream's one-key form, required by default.
  group = DecodePodGroup(Group(
      {{"schedulingConstraints", {{"topology", {{{"key", "topology.kubernetes.io/zone"}}}}}}}));
  ASSERT_TRUE(group.spec.topology.has_value());
  EXPECT_FALSE(group.spec.topology->preferred);

  // No keys: no constraint.
  group = DecodePodGroup(Group({{"schedulingConstraints", {{"topology", json::array()}}}}));
  EXPECT_FALSE(group.spec.topology.has_value());
  EXPECT_TRUE(group.problem.empty());
}

TEST(PodGroupDecode, AMalformedTopologyConstraintIsNamed) {
  struct Case {
    json constraints;
    std::string problem;
  };
  for (const Case& c : {
           Case{{{"topology", {{{"key", "a"}}, {{"key", "b"}}, {{"key", "c"}}, {{"key", "d"}}}}},
                "spec.schedulingConstraints.topology: at most 3 entries may be given, got 4"},
           Case{{{"topology", {{{"key", "rack"}}, {{"key", "rack"}}}}},
                "spec.schedulingConstraints.topology[1].key: duplicate key \"rack\""},
           Case{{{"topology", {{{"key", std::string(64, 'r')}}}}},
                "spec.schedulingConstraints.topology[0].key: \"" + std::string(64, 'r') +
                    "\" is not a valid label key"},
           Case{{{"topology", "rack"}},
                "spec.schedulingConstraints.topology: expected array, got string"},
           Case{{{"topology", {{{"key", "rack"}}}}, {"topologyPolicy", "Maybe"}},
                "spec.schedulingConstraints.topologyPolicy: unknown value \"Maybe\"; expected "
                "Required or Preferred"},
           Case{{{"topologyPolicy", "Preferred"}},
                "spec.schedulingConstraints.topologyPolicy: needs at least one topology key"},
       }) {
    PodGroup group = DecodePodGroup(Group({{"schedulingConstraints", c.constraints}}));
    EXPECT_EQ(group.problem, c.problem) << c.constraints.dump();
  }
}

TEST(PodGroupDecode, AMalformedStatusIsIgnored) {
  json object = Group({{"minMember", 3}});
  object["status"] = {{"phase", 5}, {"running", "many"}};
  PodGroup group = DecodePodGroup(object);
  EXPECT_EQ(group.spec.min_member, 3);
  EXPECT_EQ(group.status, PodGroupStatus());
  EXPECT_TRUE(group.problem.empty());
}

TEST(PodGroupDecode, ANamelessObjectIsADecodeError) {
  json object = Group({{"minMember", 3}});
  object["metadata"].erase("name");
  EXPECT_THROW(DecodePodGroup(object), DecodeError);
}

}  // namespace
}  // namespace berth::api
