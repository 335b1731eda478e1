#ifndef BERTH_PKG_API_PODGROUP_H_
#define BERTH_PKG_API_PODGROUP_H_

// scheduler-plugins' gang object, scheduling.x-k8s.io/v1alpha1 PodGroup: how many pods of a group
// must be placed together, and the status the scheduler keeps on it.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/types.h"

namespace berth::api {

class FieldPath;

// A pod joins the PodGroup this label names, in the pod's own namespace.
inline constexpr std::string_view kPodGroupLabel = "scheduling.x-k8s.io/pod-group";

// Where a group's pods go together: all of them in one domain (one value) of a node-label key.
// Upstream's PodGroups say it as spec.schedulingConstraints.topology: [{key}] (one key, required);
// scheduler-plugins' PodGroups may give up to kMaxTopologyLevels keys, narrowest first, and
// `topologyPolicy: Preferred` (Berth's extension, in the chart's CRD).
struct PodGroupTopology {
  // The group goes in one domain of the first key where it fits, else of the next.
  std::vector<std::string> keys;
  // When no domain of any key can take it: false, the group waits; true, it goes anywhere.
  bool preferred = false;

  bool operator==(const PodGroupTopology& other) const = default;
};
inline constexpr size_t kMaxTopologyLevels = 3;

// Reads `spec`'s schedulingConstraints (the spec at `spec_path`): nullopt without a topology.
// `levels` is how many topology entries the API allows; `policy` whether topologyPolicy may be
// given. Throws DecodeError naming the field.
std::optional<PodGroupTopology> DecodeSchedulingConstraints(const nlohmann::json& spec,
                                                            const FieldPath& spec_path,
                                                            size_t levels, bool policy);

struct PodGroupSpec {
  // At least 1: an absent or zero minMember (scheduler-plugins then places every pod on its own)
  // reads as 1.
  int32_t min_member = 1;
  // What the group needs in all, checked against the cluster's free capacity before any of its
  // pods is placed.
  std::optional<ResourceList> min_resources;
  // Absent or zero: the scheduler's default wait.
  std::optional<int32_t> schedule_timeout_seconds;
  std::optional<PodGroupTopology> topology;

  bool operator==(const PodGroupSpec& other) const = default;
};

// The status as last written; Berth keeps it, so a value it cannot read is left out rather than
// rejected.
struct PodGroupStatus {
  std::string phase;
  std::string occupied_by;
  int32_t running = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  std::string schedule_start_time;  // RFC 3339, as served.

  bool operator==(const PodGroupStatus& other) const = default;
};

struct PodGroup {
  ObjectMeta meta;
  PodGroupSpec spec;
  PodGroupStatus status;
  // Empty when the spec can be used; otherwise why not, naming the field ("spec.minMember: must
  // not be negative, got -1").
  std::string problem;

  bool operator==(const PodGroup& other) const = default;
};

// Unusable metadata (no name) throws DecodeError, as every decoder does. A malformed spec does not:
// the object is kept with `problem` set, so the group's pods can report why they wait instead of
// the group seeming not to exist.
PodGroup DecodePodGroup(const nlohmann::json& object);

}  // namespace berth::api

#endif  // BERTH_PKG_API_PODGROUP_H_
