#include "pkg/client/client.h"

namespace berth::client {

std::string Resource::Path(const std::string& ns, const std::string& name,
                           const std::string& subresource) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  // A namespace on a cluster-scoped resource is ignored rather than producing a path the
  // apiserver would 404 on.
  if (namespaced && !ns.empty()) path += "/namespaces/" + ns;
  path += "/" + plural;
  if (!name.empty()) {
    path += "/" + name;
    if (!subresource.empty()) path += "/" + subresource;
  }
  return path;
}

Resource PodsResource() { return Resource{"", "v1", "pods", true}; }
Resource NodesResource() { return Resource{"", "v1", "nodes", false}; }
Resource EventsResource() { return Resource{"events.k8s.io", "v1", "events", true}; }
Resource LeasesResource() { return Resource{"coordination.k8s.io", "v1", "leases", true}; }
Resource NamespacesResource() { return Resource{"", "v1", "namespaces", false}; }
Resource ServicesResource() { return Resource{"", "v1", "services", true}; }
Resource ReplicationControllersResource() {
  return Resource{"", "v1", "replicationcontrollers", true};
}
Resource PersistentVolumeClaimsResource() {
  return Resource{"", "v1", "persistentvolumeclaims", true};
}
Resource PersistentVolumesResource() { return Resource{"", "v1", "persistentvolumes", false}; }
Resource PodDisruptionBudgetsResource() {
  return Resource{"policy", "v1", "poddisruptionbudgets", true};
}
Resource ReplicaSetsResource() { return Resource{"apps", "v1", "replicasets", true}; }
Resource StatefulSetsResource() { return Resource{"apps", "v1", "statefulsets", true}; }
Resource StorageClassesResource() {
  return Resource{"storage.k8s.io", "v1", "storageclasses", false};
}
Resource CSINodesResource() { return Resource{"storage.k8s.io", "v1", "csinodes", false}; }
Resource CSIDriversResource() { return Resource{"storage.k8s.io", "v1", "csidrivers", false}; }
Resource CSIStorageCapacitiesResource() {
  return Resource{"storage.k8s.io", "v1", "csistoragecapacities", true};
}
Resource VolumeAttachmentsResource() {
  return Resource{"storage.k8s.io", "v1", "volumeattachments", false};
}
Resource PodGroupsResource() {
  return Resource{"scheduling.x-k8s.io", "v1alpha1", "podgroups", true};
}
Resource WorkloadPodGroupsResource() {
  return Resource{"scheduling.k8s.io", "v1beta1", "podgroups", true};
}
Resource ResourceSlicesResource() {
  return Resource{"resource.k8s.io", "v1", "resourceslices", false};
}
Resource DeviceClassesResource() {
  return Resource{"resource.k8s.io", "v1", "deviceclasses", false};
}
Resource ResourceClaimsResource() {
  return Resource{"resource.k8s.io", "v1", "resourceclaims", true};
}
Resource ResourceClaimTemplatesResource() {
  return Resource{"resource.k8s.io", "v1", "resourceclaimtemplates", true};
}
Resource DeviceTaintRulesResource() {
  return Resource{"resource.k8s.io", "v1", "devicetaintrules", false};
}

const char* BerthVersion() { return BERTH_VERSION; }

}  // namespace berth::client
