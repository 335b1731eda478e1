#ifndef BERTH_PKG_PLUGINS_HELPER_EXTENDED_RESOURCES_H_
#define BERTH_PKG_PLUGINS_HELPER_EXTENDED_RESOURCES_H_

// Extended resources served from devices (DRAExtendedResource, GA in v1.37): a DeviceClass stands
// for the extended resource named in its spec.extendedResourceName, and every class for its
// implicit deviceclass.resource.kubernetes.io/<class name>. NodeResourcesFit leaves such a request
// to DynamicResources on a node that does not offer the resource as allocatable.

#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/dra_types.h"

namespace berth::plugins::helper {

// Resource-name classification with upstream's v1helper / schedutil rules.
//
// A name with a '/' outside the kubernetes.io namespace whose "requests."-prefixed form is a
// qualified name (e.g. "example.com/gpu").
bool IsExtendedResourceName(std::string_view name);
// A name a DeviceClass may serve (upstream's IsDRAExtendedResourceName): an extended resource, or
// a class's implicit deviceclass.resource.kubernetes.io/<class>.
bool IsDraExtendedResourceName(std::string_view name);
// Anything scored and filtered as an entry of ResourceList::scalar: extended resources,
// hugepages-*, attachable-volumes-* and kubernetes.io-prefixed native resources.
bool IsScalarResourceName(std::string_view name);
// A Kubernetes qualified name: an optional DNS-1123 subdomain prefix and '/', then a name of at
// most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric.
bool IsQualifiedName(std::string_view name);

// The class that serves `resource`, as upstream's extended-resource cache resolves it: the class
// whose implicit name it is, else the newest class naming it (the lower name on a tie); null when
// none does.
api::DeviceClassPtr DeviceClassForExtendedResource(std::string_view resource,
                                                   const std::vector<api::DeviceClassPtr>& classes);

}  // namespace berth::plugins::helper

#endif  // BERTH_PKG_PLUGINS_HELPER_EXTENDED_RESOURCES_H_
