#ifndef BERTH_PKG_API_RESOURCES_CODEC_H_
#define BERTH_PKG_API_RESOURCES_CODEC_H_

// JSON -> the objects of pkg/api/resources.h. Like DecodePod (pkg/api/codec.h), each decoder reads
// only the fields its type holds, validates them (types, quantities, enum values) and throws
// api::DecodeError naming the field path on anything malformed; metadata.name is required.

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "pkg/api/resources.h"

namespace berth::api {

Namespace DecodeNamespace(const nlohmann::json& object);
PodDisruptionBudget DecodePodDisruptionBudget(const nlohmann::json& object);
PersistentVolumeClaim DecodePersistentVolumeClaim(const nlohmann::json& object);
PersistentVolume DecodePersistentVolume(const nlohmann::json& object);
StorageClass DecodeStorageClass(const nlohmann::json& object);
CSINode DecodeCSINode(const nlohmann::json& object);
CSIDriver DecodeCSIDriver(const nlohmann::json& object);
CSIStorageCapacity DecodeCSIStorageCapacity(const nlohmann::json& object);
VolumeAttachment DecodeVolumeAttachment(const nlohmann::json& object);
Service DecodeService(const nlohmann::json& object);
ReplicationController DecodeReplicationController(const nlohmann::json& object);
ReplicaSet DecodeReplicaSet(const nlohmann::json& object);
StatefulSet DecodeStatefulSet(const nlohmann::json& object);
// Any object with metadata; apiVersion and kind are kept when present.
Unstructured DecodeUnstructured(const nlohmann::json& object);

// Parses an IntOrString value that must be an integer or "<integer>%"; `field` names it in
// errors.
IntOrPercent DecodeIntOrPercent(const nlohmann::json& value, const std::string& field);

}  // namespace berth::api

#endif  // BERTH_PKG_API_RESOURCES_CODEC_H_
