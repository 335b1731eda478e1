#include <gtest/gtest.h>

#include <string>

#include "pkg/client/client.h"

namespace berth::client {
namespace {

TEST(ResourceTest, PathTable) {
  struct Case {
    Resource resource;
    std::string ns;
    std::string name;
    std::string subresource;
    std::string want;
  };
  const Case cases[] = {
      {PodsResource(), "", "", "", "/api/v1/pods"},
      {PodsResource(), "default", "", "", "/api/v1/namespaces/default/pods"},
      {PodsResource(), "default", "web-0", "", "/api/v1/namespaces/default/pods/web-0"},
      {PodsResource(), "default", "web-0", "binding",
       "/api/v1/namespaces/default/pods/web-0/binding"},
      {PodsResource(), "kube-system", "p", "status",
       "/api/v1/namespaces/kube-system/pods/p/status"},
      {NodesResource(), "", "", "", "/api/v1/nodes"},
      {NodesResource(), "", "node-1", "", "/api/v1/nodes/node-1"},
      // Cluster-scoped: a namespace is ignored.
      {NodesResource(), "default", "node-1", "status", "/api/v1/nodes/node-1/status"},
      {EventsResource(), "", "", "", "/apis/events.k8s.io/v1/events"},
      {EventsResource(), "ns", "", "", "/apis/events.k8s.io/v1/namespaces/ns/events"},
      {LeasesResource(), "kube-system", "berth", "",
       "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/berth"},
      {LeasesResource(), "", "", "", "/apis/coordination.k8s.io/v1/leases"},
      {PodGroupsResource(), "ml", "train", "status",
       "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/train/status"},
      {WorkloadPodGroupsResource(), "ml", "train", "status",
       "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/train/status"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.resource.Path(c.ns, c.name, c.subresource), c.want) << c.want;
  }
}

TEST(ResourceTest, WellKnownResources) {
  EXPECT_EQ(PodsResource().group, "");
  EXPECT_TRUE(PodsResource().namespaced);
  EXPECT_FALSE(NodesResource().namespaced);
  EXPECT_EQ(EventsResource().group, "events.k8s.io");
  EXPECT_EQ(LeasesResource().group, "coordination.k8s.io");
  EXPECT_EQ(LeasesResource().version, "v1");
}

TEST(ResourceTest, ListerResourcePaths) {
  struct Case {
    Resource resource;
    std::string ns;
    std::string name;
    std::string want;
  };
  const Case cases[] = {
      {NamespacesResource(), "", "", "/api/v1/namespaces"},
      {NamespacesResource(), "", "team-a", "/api/v1/namespaces/team-a"},
      {ServicesResource(), "shop", "", "/api/v1/namespaces/shop/services"},
      {ServicesResource(), "", "", "/api/v1/services"},
      {ReplicationControllersResource(), "shop", "web",
       "/api/v1/namespaces/shop/replicationcontrollers/web"},
      {PersistentVolumeClaimsResource(), "shop", "data-0",
       "/api/v1/namespaces/shop/persistentvolumeclaims/data-0"},
      {PersistentVolumeClaimsResource(), "", "", "/api/v1/persistentvolumeclaims"},
      // Cluster-scoped kinds ignore a namespace.
      {PersistentVolumesResource(), "shop", "pv-1", "/api/v1/persistentvolumes/pv-1"},
      {PodDisruptionBudgetsResource(), "ns", "",
       "/apis/policy/v1/namespaces/ns/poddisruptionbudgets"},
      {PodDisruptionBudgetsResource(), "", "", "/apis/policy/v1/poddisruptionbudgets"},
      {ReplicaSetsResource(), "shop", "", "/apis/apps/v1/namespaces/shop/replicasets"},
      {StatefulSetsResource(), "shop", "db", "/apis/apps/v1/namespaces/shop/statefulsets/db"},
      {StorageClassesResource(), "", "standard", "/apis/storage.k8s.io/v1/storageclasses/standard"},
      {CSINodesResource(), "", "", "/apis/storage.k8s.io/v1/csinodes"},
      {CSINodesResource(), "default", "node-1", "/apis/storage.k8s.io/v1/csinodes/node-1"},
      {CSIDriversResource(), "", "ebs.csi.aws.com",
       "/apis/storage.k8s.io/v1/csidrivers/ebs.csi.aws.com"},
      {CSIStorageCapacitiesResource(), "kube-system", "",
       "/apis/storage.k8s.io/v1/namespaces/kube-system/csistoragecapacities"},
      {CSIStorageCapacitiesResource(), "", "", "/apis/storage.k8s.io/v1/csistoragecapacities"},
      {VolumeAttachmentsResource(), "", "csi-123",
       "/apis/storage.k8s.io/v1/volumeattachments/csi-123"},
      {ResourceSlicesResource(), "ns", "worker-1-gpu",
       "/apis/resource.k8s.io/v1/resourceslices/worker-1-gpu"},
      {DeviceClassesResource(), "", "gpu.example.com",
       "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com"},
      {ResourceClaimsResource(), "ml", "gpu",
       "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/gpu"},
      {ResourceClaimsResource(), "", "", "/apis/resource.k8s.io/v1/resourceclaims"},
      {ResourceClaimTemplatesResource(), "ml", "",
       "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaimtemplates"},
      {DeviceTaintRulesResource(), "", "drain", "/apis/resource.k8s.io/v1/devicetaintrules/drain"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.resource.Path(c.ns, c.name), c.want) << c.want;
  }
}

TEST(VersionTest, BerthVersionIsTheBuildVersion) {
  EXPECT_STREQ(BerthVersion(), BERTH_VERSION);
  EXPECT_NE(std::string(BerthVersion()), "");
}

}  // namespace
}  // namespace berth::client
