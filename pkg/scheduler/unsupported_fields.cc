#include "pkg/scheduler/unsupported_fields.h"

#include <string>

namespace berth::scheduler {
namespace {

constexpr std::string_view kGangScheduling[] = {"GangScheduling"};

struct Entry {
  // A PodSpec field path.
  std::string_view field;
  bool (*uses)(const api::PodSpec&);
  // What the field asks for, in the words of the feature it belongs to.
  std::string_view feature;
  std::span<const std::string_view> plugins;
};

// The order is the order fields are reported in when a pod uses several.
const Entry kUnsupported[] = {
    // A PodGroup by name is honoured (Coscheduling); any other kind of group is not.
    {"spec.schedulingGroup",
     [](const api::PodSpec& s) { return s.scheduling_group && s.scheduling_group->empty(); },
     "a scheduling group that names no PodGroup", kGangScheduling},
};

}  // namespace

std::optional<UnsupportedField> FindUnsupportedField(const api::Pod& pod) {
  for (const Entry& entry : kUnsupported) {
    if (!entry.uses(pod.spec)) continue;
    std::string path(entry.field);
    std::string message = "pod uses " + path + " (" + std::string(entry.feature) +
                          "), which berth-scheduler does not support yet; use the default "
                          "scheduler for this pod";
    return UnsupportedField{std::move(path), entry.plugins, std::move(message)};
  }
  return std::nullopt;
}

}  // namespace berth::scheduler
