#include "pkg/scheduler/unsupported_fields.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/testing/objects.h"

namespace berth::scheduler {
namespace {

using testing::PodBuilder;

api::PodAffinityTerm Term(const std::string& topology_key) {
  api::PodAffinityTerm term;
  term.label_selector.emplace();
  term.topology_key = topology_key;
  return term;
}

api::Volume Volume(const std::string& name, const std::string& source) {
  api::Volume volume;
  volume.name = name;
  volume.source = source;
  return volume;
}

std::vector<std::string> Plugins(const UnsupportedField& field) {
  return {field.plugins.begin(), field.plugins.end()};
}

std::string Message(const std::string& path, const std::string& feature) {
  return "pod uses " + path + " (" + feature +
         "), which berth-scheduler does not support yet; use the default scheduler for this pod";
}

TEST(FindUnsupportedField, PlainPodUsesNone) {
  EXPECT_FALSE(FindUnsupportedField(*PodBuilder("p").Container("1", "1Gi").Build()));
}

TEST(FindUnsupportedField, FieldsBerthHonoursAreNotReported) {
  PodBuilder b("p");
  b.Container("1", "1Gi").HostPort(8080).NodeSelector("disk", "ssd").Priority(10);
  b.Toleration({"dedicated", api::TolerationOperator::kEqual, "web", api::TaintEffect::kNoSchedule,
                std::nullopt});
  b.SchedulingGate("wait");
  api::Affinity& affinity = b.pod().spec.affinity.emplace();
  affinity.node_affinity.emplace().preferred.push_back({10, {}});
  // The InterPodAffinity plugin honours pod affinity and anti-affinity, required and preferred.
  affinity.pod_affinity.emplace().required.push_back(Term("zone"));
  affinity.pod_affinity->preferred.push_back({5, Term("zone")});
  affinity.pod_anti_affinity.emplace().required.push_back(Term("kubernetes.io/hostname"));
  affinity.pod_anti_affinity->preferred.push_back({5, Term("kubernetes.io/hostname")});
  b.pod().spec.overhead.milli_cpu = 100;
  b.pod().spec.resources.emplace().requests.milli_cpu = 2000;
  // Coscheduling honours a PodGroup named by spec.schedulingGroup.
  b.pod().spec.scheduling_group = "train";
  // VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits honour claims, generic
  // ephemeral volumes and the in-tree disks; the other sources place nothing.
  for (const char* source : {"emptyDir",
                             "configMap",
                             "secret",
                             "projected",
                             "downwardAPI",
                             "hostPath",
                             "nfs",
                             "csi",
                             "image",
                             "persistentVolumeClaim",
                             "ephemeral",
                             "gcePersistentDisk",
                             "awsElasticBlockStore",
                             "iscsi",
                             "rbd",
                             "azureDisk",
                             "azureFile",
                             "cinder",
                             "vsphereVolume",
                             "portworxVolume"}) {
    b.pod().spec.volumes.push_back(Volume(source, source));
  }
  EXPECT_FALSE(FindUnsupportedField(*b.Build()));
}

// DynamicResources honours resource claims.
TEST(FindUnsupportedField, ResourceClaimsAreHonoured) {
  PodBuilder b("p");
  b.pod().spec.resource_claims = {api::PodResourceClaim{
      .name = "gpu", .resource_claim_name = "gpu", .resource_claim_template_name = std::nullopt}};
  EXPECT_FALSE(FindUnsupportedField(*b.Build()));
}

TEST(FindUnsupportedField, ASchedulingGroupThatNamesNoPodGroup) {
  PodBuilder b("p");
  b.pod().spec.scheduling_group = "";
  auto field = FindUnsupportedField(*b.Build());
  ASSERT_TRUE(field);
  EXPECT_EQ(field->path, "spec.schedulingGroup");
  EXPECT_EQ(Plugins(*field), std::vector<std::string>{"GangScheduling"});
  EXPECT_EQ(field->message,
            Message("spec.schedulingGroup", "a scheduling group that names no PodGroup"));
}

TEST(FindUnsupportedField, TopologySpreadConstraintsOfEitherKindAreHonoured) {
  for (auto when :
       {api::WhenUnsatisfiable::kDoNotSchedule, api::WhenUnsatisfiable::kScheduleAnyway}) {
    PodBuilder b("p");
    api::TopologySpreadConstraint c;
    c.topology_key = "zone";
    c.when_unsatisfiable = when;
    b.pod().spec.topology_spread_constraints.push_back(c);
    EXPECT_FALSE(FindUnsupportedField(*b.Build()));
  }
}

}  // namespace
}  // namespace berth::scheduler
