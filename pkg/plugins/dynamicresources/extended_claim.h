#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_EXTENDED_CLAIM_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_EXTENDED_CLAIM_H_

// The claim that stands for a pod's extended resources served from devices (DRAExtendedResource,
// GA in v1.37): made in memory per node in Filter, created by PreBind with upstream's name,
// annotation and owner, and named in the pod's status.extendedResourceClaimStatus.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/types.h"
#include "pkg/client/client.h"

namespace berth::plugins::dynamicresources {

// The in-memory claim's name before PreBind creates it (upstream's).
inline constexpr std::string_view kExtendedClaimInMemoryName = "<extended-resources>";
inline constexpr std::string_view kExtendedResourceClaimAnnotation =
    "resource.kubernetes.io/extended-resource-claim";

// The device requests for `needed` (extended resource -> the class serving it) and which container
// request each serves, as upstream builds them: one request per long-lived container (containers
// and sidecars) named container-<index>-request-<resource's index among the container's requests>,
// plus the largest short-lived init container's, covering what the long-lived ones after it do not.
std::vector<api::DeviceRequest> ExtendedResourceRequests(
    const api::Pod& pod, const std::map<std::string, std::string>& needed,
    std::vector<api::ContainerExtendedResourceRequest>* mappings);

// The UID under which the in-memory claim for `pod`'s extended resources is tracked in flight.
std::string InMemoryExtendedClaimId(const api::Pod& pod);
// The in-memory claim that stands, until PreBind creates it, for the pod's extended resources
// served from devices (tracked under `uid`).
api::ResourceClaimPtr InMemoryExtendedClaim(const api::Pod& pod, const std::string& uid,
                                            std::vector<api::DeviceRequest> requests);

// Whether `claim` is the one the scheduler made for `pod`'s extended resources.
bool IsExtendedClaimOf(const api::ResourceClaim& claim, const api::Pod& pod);

// The claim to create for the pod (generateName "<pod>-extended-resources-").
nlohmann::json ExtendedClaimObject(const api::Pod& pod,
                                   const std::vector<api::DeviceRequest>& requests);

// The merge patch of the pod's status naming the claim and its request mappings.
nlohmann::json ExtendedClaimStatusPatch(
    const std::string& claim_name,
    const std::vector<api::ContainerExtendedResourceRequest>& mappings);

// Removes the scheduler's finalizer from the claim, then deletes it; the error, if any.
std::optional<std::string> DeleteClaim(client::Client& client, const api::ResourceClaim& claim);

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_EXTENDED_CLAIM_H_
