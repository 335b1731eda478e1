#include "pkg/scheduler/unsupported_fields.h"

#include <string>

namespace berth::scheduler {
namespace {

constexpr std::string_view kDynamicResources[] = {"DynamicResources"};
constexpr std::string_view kClaimVolume[] = {"VolumeBinding", "VolumeZone", "VolumeRestrictions",
                                             "NodeVolumeLimits"};
constexpr std::string_view kEphemeralVolume[] = {"VolumeBinding", "NodeVolumeLimits"};
constexpr std::string_view kConflictingAttachableVolume[] = {"VolumeRestrictions",
                                                             "NodeVolumeLimits"};
constexpr std::string_view kConflictingVolume[] = {"VolumeRestrictions"};
constexpr std::string_view kGangScheduling[] = {"GangScheduling"};
// In-tree sources that CSI migration turns into attachable CSI volumes, counted against the
// node's attach limit.
constexpr std::string_view kAttachableVolume[] = {"NodeVolumeLimits"};

struct Entry {
  // A PodSpec field path, or, when `uses` is null, a volume source (spec.volumes[i].<field>).
  std::string_view field;
  bool (*uses)(const api::PodSpec&);
  // What the field asks for, in the words of the feature it belongs to.
  std::string_view feature;
  std::span<const std::string_view> plugins;
};

// The order is the order fields are reported in when a pod uses several.
const Entry kUnsupported[] = {
    {"spec.resourceClaims", [](const api::PodSpec& s) { return !s.resource_claims.empty(); },
     "dynamic resource allocation", kDynamicResources},
    // A PodGroup by name is honoured (Coscheduling); any other kind of group is not.
    {"spec.schedulingGroup",
     [](const api::PodSpec& s) { return s.scheduling_group && s.scheduling_group->empty(); },
     "a scheduling group that names no PodGroup", kGangScheduling},
    {"persistentVolumeClaim", nullptr, "persistent volume binding", kClaimVolume},
    {"ephemeral", nullptr, "generic ephemeral volumes", kEphemeralVolume},
    {"gcePersistentDisk", nullptr, "volume conflicts and attach limits",
     kConflictingAttachableVolume},
    {"awsElasticBlockStore", nullptr, "volume conflicts and attach limits",
     kConflictingAttachableVolume},
    {"iscsi", nullptr, "volume conflicts", kConflictingVolume},
    {"rbd", nullptr, "volume conflicts", kConflictingVolume},
    {"azureDisk", nullptr, "volume attach limits", kAttachableVolume},
    {"azureFile", nullptr, "volume attach limits", kAttachableVolume},
    {"cinder", nullptr, "volume attach limits", kAttachableVolume},
    {"vsphereVolume", nullptr, "volume attach limits", kAttachableVolume},
    {"portworxVolume", nullptr, "volume attach limits", kAttachableVolume},
};

// The path at which the pod uses the entry's field, or "" when it does not.
std::string PathIn(const Entry& entry, const api::PodSpec& spec) {
  if (entry.uses != nullptr) return entry.uses(spec) ? std::string(entry.field) : std::string();
  for (size_t i = 0; i < spec.volumes.size(); i++) {
    if (spec.volumes[i].source == entry.field) {
      return "spec.volumes[" + std::to_string(i) + "]." + std::string(entry.field);
    }
  }
  return {};
}

}  // namespace

std::optional<UnsupportedField> FindUnsupportedField(const api::Pod& pod) {
  for (const Entry& entry : kUnsupported) {
    std::string path = PathIn(entry, pod.spec);
    if (path.empty()) continue;
    std::string message = "pod uses " + path + " (" + std::string(entry.feature) +
                          "), which berth-scheduler does not support yet; use the default "
                          "scheduler for this pod";
    return UnsupportedField{std::move(path), entry.plugins, std::move(message)};
  }
  return std::nullopt;
}

}  // namespace berth::scheduler
