#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLAIM_STATUS_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLAIM_STATUS_H_

// What PreBind reads and writes in a ResourceClaim's status: the reservation for the pod, the
// allocation Reserve decided, and the binding conditions of allocated devices.

#include <chrono>
#include <optional>
#include <string>

#include "pkg/api/dra_types.h"
#include "pkg/api/types.h"
#include "pkg/client/client.h"
#include "pkg/plugins/dynamicresources/claim_tracker.h"

namespace berth::plugins::dynamicresources {

bool IsReservedForPod(const api::ResourceClaim& claim, const api::Pod& pod);
bool HasFinalizer(const api::ResourceClaim& claim);
// The claim's path in the API.
std::string ClaimPath(const api::ResourceClaim& claim);

// Whether the allocated devices that have binding conditions are all ready. An error (upstream's
// words) when a binding failure condition is true.
std::optional<std::string> ClaimReadyForBinding(const api::ResourceClaim& claim, bool* ready);
// Whether a claim with binding conditions has waited for them longer than `timeout` since it was
// allocated.
bool ClaimBindingTimedOut(const api::ResourceClaim& claim, std::chrono::milliseconds timeout);

// Records in the claim (`*current`, the version the cycle knows) that `pod` uses it: with
// `to_write`, first the allocation Reserve decided (and the delete-protection finalizer), as
// upstream's PreBind does. A write that lost to a concurrent change is retried on the latest
// version a few times. With `shares_pending`, an identical allocation a member of the pod's group
// wrote meanwhile is taken as done. On success `*current` is the written claim, which the tracker
// then shows until the informer has it; otherwise the error, in upstream's words.
std::optional<std::string> WriteClaimForPod(client::Client& client, ClaimTracker& tracker,
                                            const api::Pod& pod,
                                            const std::optional<api::AllocationResult>& to_write,
                                            bool shares_pending, api::ResourceClaimPtr* current);

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLAIM_STATUS_H_
