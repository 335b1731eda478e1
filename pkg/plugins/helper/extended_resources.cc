#include "pkg/plugins/helper/extended_resources.h"

#include <algorithm>
#include <string>

#include "pkg/util/time.h"

namespace berth::plugins::helper {
namespace {

constexpr std::string_view kRequestsPrefix = "requests.";
constexpr std::string_view kDefaultNamespacePrefix = "kubernetes.io/";
constexpr std::string_view kHugePagesPrefix = "hugepages-";
constexpr std::string_view kAttachableVolumesPrefix = "attachable-volumes-";
constexpr size_t kQualifiedNameMaxLength = 63;
constexpr size_t kDNS1123SubdomainMaxLength = 253;

bool IsAlphanumeric(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool IsLowerAlphanumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// The name part of a qualified name: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 long.
bool IsQualifiedNamePart(std::string_view name) {
  if (name.empty() || name.size() > kQualifiedNameMaxLength) {
    return false;
  }
  if (!IsAlphanumeric(name.front()) || !IsAlphanumeric(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlphanumeric(c) || c == '-' || c == '_' || c == '.'; });
}

// Dot-separated labels of [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 253 long in total.
bool IsDNS1123Subdomain(std::string_view value) {
  if (value.empty() || value.size() > kDNS1123SubdomainMaxLength) {
    return false;
  }
  size_t start = 0;
  while (true) {
    size_t dot = value.find('.', start);
    std::string_view label =
        value.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !IsLowerAlphanumeric(label.front()) ||
        !IsLowerAlphanumeric(label.back())) {
      return false;
    }
    if (!std::all_of(label.begin(), label.end(),
                     [](char c) { return IsLowerAlphanumeric(c) || c == '-'; })) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

bool IsPrefixedNativeResource(std::string_view name) {
  return name.find(kDefaultNamespacePrefix) != std::string_view::npos;
}

bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos || IsPrefixedNativeResource(name);
}

}  // namespace

bool IsQualifiedName(std::string_view name) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) {
    return IsQualifiedNamePart(name);
  }
  std::string_view prefix = name.substr(0, slash);
  std::string_view rest = name.substr(slash + 1);
  if (rest.find('/') != std::string_view::npos) {
    return false;
  }
  return IsDNS1123Subdomain(prefix) && IsQualifiedNamePart(rest);
}

bool IsExtendedResourceName(std::string_view name) {
  if (IsNativeResource(name) || name.starts_with(kRequestsPrefix)) {
    return false;
  }
  std::string quota_name(kRequestsPrefix);
  quota_name += name;
  return IsQualifiedName(quota_name);
}

bool IsDraExtendedResourceName(std::string_view name) {
  return IsExtendedResourceName(name) || name.starts_with(api::kDeviceClassResourcePrefix);
}

bool IsScalarResourceName(std::string_view name) {
  return IsExtendedResourceName(name) || name.starts_with(kHugePagesPrefix) ||
         IsPrefixedNativeResource(name) || name.starts_with(kAttachableVolumesPrefix);
}

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
