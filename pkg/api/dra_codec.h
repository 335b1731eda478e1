#ifndef BERTH_PKG_API_DRA_CODEC_H_
#define BERTH_PKG_API_DRA_CODEC_H_

// JSON <-> the resource.k8s.io/v1 objects of pkg/api/dra_types.h.
//
// Decoders follow pkg/api/codec.h: they read only what dra_types.h holds, validate it and throw
// api::DecodeError naming the field path on anything malformed. Every object is treated as
// hostile: list and map sizes are bounded by the API's own validation limits (dra_types.h), so
// an object no apiserver would have accepted is refused instead of costing the allocator memory
// or time, and a device attribute must hold exactly one value.
//
// Fields of features that are alpha in v1.37 (list-type attribute values, derived attributes,
// compatibility groups, node-allocatable resources, skipNodeOperations, partitionTypeAttribute)
// are not modelled; when an object sets one, its JSON path is appended to the
// object's `unsupported_fields` (a list-type attribute is left out of the device's attributes).
// What drivers write into status.devices[] besides its conditions (data, networkData) is not
// read: scheduling never depends on it.

#include <nlohmann/json_fwd.hpp>

#include "pkg/api/dra_types.h"

namespace berth::api {

ResourceSlice DecodeResourceSlice(const nlohmann::json& object);
DeviceClass DecodeDeviceClass(const nlohmann::json& object);
ResourceClaim DecodeResourceClaim(const nlohmann::json& object);
ResourceClaimTemplate DecodeResourceClaimTemplate(const nlohmann::json& object);
DeviceTaintRule DecodeDeviceTaintRule(const nlohmann::json& object);

// status.allocation as the apiserver serves it, for a claim's status update: optional fields the
// apiserver would omit (false adminAccess, empty lists and maps, unset pointers) are left out.
// Configuration parameters are written back from the JSON text a decoder kept.
nlohmann::json EncodeAllocationResult(const AllocationResult& allocation);
// One status.reservedFor entry (apiGroup left out when empty, as the apiserver does).
nlohmann::json EncodeConsumerReference(const ResourceClaimConsumerReference& reference);

}  // namespace berth::api

#endif  // BERTH_PKG_API_DRA_CODEC_H_
