#ifndef BERTH_PKG_INFORMER_RESOURCES_H_
#define BERTH_PKG_INFORMER_RESOURCES_H_

// Which typed objects the informer layer can list and watch: one ResourceTraits specialization
// per type, naming its API resource and its decoders. A plugin that needs a new kind of object
// adds its slim type and decoder in pkg/api and one specialization here; nothing else changes.

#include <optional>
#include <string_view>

#include "pkg/api/codec.h"
#include "pkg/api/dra_codec.h"
#include "pkg/api/dra_types.h"
#include "pkg/api/podgroup.h"
#include "pkg/api/protobuf.h"
#include "pkg/api/resources.h"
#include "pkg/api/resources_codec.h"
#include "pkg/api/types.h"
#include "pkg/api/workload_podgroup.h"
#include "pkg/client/client.h"
#include "pkg/informer/reflector.h"

namespace berth::informer {

// Pods that are still running or pending: finished pods hold no resources, so like
// kube-scheduler we never list or watch them.
inline constexpr const char* kActivePodsFieldSelector =
    "status.phase!=Succeeded,status.phase!=Failed";

// Specializations provide:
//   static client::Resource Resource();
//   static T Decode(const nlohmann::json& object);   // throws api::DecodeError
// and may provide
//   static constexpr bool kProtobuf = true;  // pkg/api/protobuf.h decodes its messages
//   static void Configure(ReflectorOptions& options);  // selectors, ...
//   static std::optional<T> DecodeProtobuf(std::string_view message);  // a faster path
template <typename T>
struct ResourceTraits;

template <>
struct ResourceTraits<api::Pod> {
  static constexpr bool kProtobuf = true;
  static client::Resource Resource() { return client::PodsResource(); }
  static api::Pod Decode(const nlohmann::json& object) { return api::DecodePod(object); }
  static void Configure(ReflectorOptions& options) {
    options.field_selector = kActivePodsFieldSelector;
    // Every binding comes back as an event of this watch.
    options.busy_watch = true;
  }
  static std::optional<api::Pod> DecodeProtobuf(std::string_view message) {
    return api::TryDecodeProtobufPod(message);
  }
};

template <>
struct ResourceTraits<api::Node> {
  static constexpr bool kProtobuf = true;
  static client::Resource Resource() { return client::NodesResource(); }
  static api::Node Decode(const nlohmann::json& object) { return api::DecodeNode(object); }
  static std::optional<api::Node> DecodeProtobuf(std::string_view message) {
    return api::TryDecodeProtobufNode(message);
  }
};

// A resource read in JSON with its decoder: everything plugins read besides pods and nodes.
// These change rarely and have no protobuf decoder here.
template <typename T, client::Resource (*kResource)(), T (*kDecode)(const nlohmann::json&)>
struct JsonResourceTraits {
  static client::Resource Resource() { return kResource(); }
  static T Decode(const nlohmann::json& object) { return kDecode(object); }
};

template <>
struct ResourceTraits<api::Namespace>
    : JsonResourceTraits<api::Namespace, client::NamespacesResource, api::DecodeNamespace> {};
template <>
struct ResourceTraits<api::PodDisruptionBudget>
    : JsonResourceTraits<api::PodDisruptionBudget, client::PodDisruptionBudgetsResource,
                         api::DecodePodDisruptionBudget> {};
template <>
struct ResourceTraits<api::PersistentVolumeClaim>
    : JsonResourceTraits<api::PersistentVolumeClaim, client::PersistentVolumeClaimsResource,
                         api::DecodePersistentVolumeClaim> {};
template <>
struct ResourceTraits<api::PersistentVolume>
    : JsonResourceTraits<api::PersistentVolume, client::PersistentVolumesResource,
                         api::DecodePersistentVolume> {};
template <>
struct ResourceTraits<api::StorageClass>
    : JsonResourceTraits<api::StorageClass, client::StorageClassesResource,
                         api::DecodeStorageClass> {};
template <>
struct ResourceTraits<api::CSINode>
    : JsonResourceTraits<api::CSINode, client::CSINodesResource, api::DecodeCSINode> {};
template <>
struct ResourceTraits<api::CSIDriver>
    : JsonResourceTraits<api::CSIDriver, client::CSIDriversResource, api::DecodeCSIDriver> {};
template <>
struct ResourceTraits<api::CSIStorageCapacity>
    : JsonResourceTraits<api::CSIStorageCapacity, client::CSIStorageCapacitiesResource,
                         api::DecodeCSIStorageCapacity> {};
template <>
struct ResourceTraits<api::VolumeAttachment>
    : JsonResourceTraits<api::VolumeAttachment, client::VolumeAttachmentsResource,
                         api::DecodeVolumeAttachment> {};
template <>
struct ResourceTraits<api::Service>
    : JsonResourceTraits<api::Service, client::ServicesResource, api::DecodeService> {};
template <>
struct ResourceTraits<api::ReplicationController>
    : JsonResourceTraits<api::ReplicationController, client::ReplicationControllersResource,
                         api::DecodeReplicationController> {};
template <>
struct ResourceTraits<api::ReplicaSet>
    : JsonResourceTraits<api::ReplicaSet, client::ReplicaSetsResource, api::DecodeReplicaSet> {};
template <>
struct ResourceTraits<api::StatefulSet>
    : JsonResourceTraits<api::StatefulSet, client::StatefulSetsResource, api::DecodeStatefulSet> {};

template <>
struct ResourceTraits<api::ResourceSlice>
    : JsonResourceTraits<api::ResourceSlice, client::ResourceSlicesResource,
                         api::DecodeResourceSlice> {};
template <>
struct ResourceTraits<api::DeviceClass>
    : JsonResourceTraits<api::DeviceClass, client::DeviceClassesResource, api::DecodeDeviceClass> {
};
template <>
struct ResourceTraits<api::ResourceClaim>
    : JsonResourceTraits<api::ResourceClaim, client::ResourceClaimsResource,
                         api::DecodeResourceClaim> {};
template <>
struct ResourceTraits<api::ResourceClaimTemplate>
    : JsonResourceTraits<api::ResourceClaimTemplate, client::ResourceClaimTemplatesResource,
                         api::DecodeResourceClaimTemplate> {};
// Served only while the DRADeviceTaintRules feature gate is on: listed only when discovery finds
// it.
template <>
struct ResourceTraits<api::DeviceTaintRule>
    : JsonResourceTraits<api::DeviceTaintRule, client::DeviceTaintRulesResource,
                         api::DecodeDeviceTaintRule> {
  static void Configure(ReflectorOptions& options) { options.discover = true; }
};

// A custom resource: listed only when discovery finds its definition installed.
template <>
struct ResourceTraits<api::PodGroup> {
  static client::Resource Resource() { return client::PodGroupsResource(); }
  static api::PodGroup Decode(const nlohmann::json& object) { return api::DecodePodGroup(object); }
  static void Configure(ReflectorOptions& options) { options.discover = true; }
};

// A built-in API served only behind a feature gate: listed only when discovery finds it.
template <>
struct ResourceTraits<api::WorkloadPodGroup> {
  static client::Resource Resource() { return client::WorkloadPodGroupsResource(); }
  static api::WorkloadPodGroup Decode(const nlohmann::json& object) {
    return api::DecodeWorkloadPodGroup(object);
  }
  static void Configure(ReflectorOptions& options) { options.discover = true; }
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_RESOURCES_H_
