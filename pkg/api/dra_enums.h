#ifndef BERTH_PKG_API_DRA_ENUMS_H_
#define BERTH_PKG_API_DRA_ENUMS_H_

// The API names of the resource.k8s.io/v1 enums, shared by the decoders (dra_codec.cc) and the
// encoders (dra_encode.cc) so that what is written back is what is read.

#include "pkg/api/dra_types.h"
#include "pkg/api/json_read.h"

namespace berth::api::dra_enums {

using json_read::EnumTable;

inline constexpr EnumTable<DeviceTaint::Effect, 3> kTaintEffects = {{
    {"None", DeviceTaint::Effect::kNone},
    {"NoSchedule", DeviceTaint::Effect::kNoSchedule},
    {"NoExecute", DeviceTaint::Effect::kNoExecute},
}};

inline constexpr EnumTable<DeviceToleration::Operator, 2> kTolerationOperators = {{
    {"Equal", DeviceToleration::Operator::kEqual},
    {"Exists", DeviceToleration::Operator::kExists},
}};

inline constexpr EnumTable<DeviceAllocationMode, 2> kAllocationModes = {{
    {"ExactCount", DeviceAllocationMode::kExactCount},
    {"All", DeviceAllocationMode::kAll},
}};

// AllocationConfigSource: true for FromClass.
inline constexpr EnumTable<bool, 2> kConfigSources = {{
    {"FromClass", true},
    {"FromClaim", false},
}};

}  // namespace berth::api::dra_enums

#endif  // BERTH_PKG_API_DRA_ENUMS_H_
