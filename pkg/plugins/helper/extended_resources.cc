#include "pkg/plugins/helper/extended_resources.h"

#include "pkg/util/time.h"

namespace berth::plugins::helper {

api::DeviceClassPtr DeviceClassForExtendedResource(
    std::string_view resource, const std::vector<api::DeviceClassPtr>& classes) {
  if (resource.starts_with(api::kDeviceClassResourcePrefix)) {
    const std::string_view name = resource.substr(api::kDeviceClassResourcePrefix.size());
    for (const api::DeviceClassPtr& device_class : classes) {
      if (device_class->meta.name == name) return device_class;
    }
    return nullptr;
  }
  api::DeviceClassPtr chosen;
  std::optional<util::SystemTime> chosen_created;
  for (const api::DeviceClassPtr& device_class : classes) {
    if (device_class->extended_resource_name != resource) continue;
    // A clash is rare (a migration from one class to another): the newer class wins.
    const std::optional<util::SystemTime> created =
        util::ParseRfc3339(device_class->meta.creation_timestamp);
    const bool newer = chosen == nullptr || created > chosen_created ||
                       (created == chosen_created && device_class->meta.name < chosen->meta.name);
    if (newer) {
      chosen = device_class;
      chosen_created = created;
    }
  }
  return chosen;
}

}  // namespace berth::plugins::helper
