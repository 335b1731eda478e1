#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLAIM_TRACKER_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLAIM_TRACKER_H_

// What the scheduler knows of ResourceClaims beyond what the informer has: the allocations it
// decided in Reserve but has not written yet (in flight), and the claims it wrote in PreBind whose
// new version the informer has not delivered yet (written). Both count as allocated, so two pods
// never get the same device, whether their cycles are one apart or the second pod's cycle runs
// while the first pod's write is on its way back through the watch.
//
// Invariant: a written claim is seen instead of the informer's only while the informer's version
// is older than the written one (resourceVersions compared as the numbers etcd makes them, as
// upstream's assume cache compares them). Once the informer stores the written version or a later
// one, or deletes the claim, the informer's object is seen again.
//
// Thread-safe: informer handlers, the scheduling thread (PreFilter, Reserve, Unreserve) and the
// binding threads (PreBind) use it at once. One tracker serves every profile of a scheduler, as
// the devices it accounts for are the cluster's.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/informer/informer.h"
#include "pkg/plugins/dynamicresources/allocated_state.h"

namespace berth::informer {
class SharedInformerFactory;
}

namespace berth::plugins::dynamicresources {

class ClaimTracker {
 public:
  // The tracker of the scheduler that owns `informers` (made on first use, subscribed to its
  // ResourceClaim informer).
  static std::shared_ptr<ClaimTracker> For(informer::SharedInformerFactory& informers);

  // Use For; subscribes to `informer` itself.
  explicit ClaimTracker(informer::Informer<api::ResourceClaim>& informer);
  ClaimTracker(const ClaimTracker&) = delete;
  ClaimTracker& operator=(const ClaimTracker&) = delete;

  // The written version while it is current, else the informer's; null when the informer has no
  // such claim.
  api::ResourceClaimPtr Get(const std::string& namespace_, const std::string& name) const;

  // The first claim of the namespace made for pod `owner_uid`'s extended resources (annotated as
  // such and controlled by that pod), as Get would return it, that `match` accepts; null when
  // none. Such claims are indexed by their owner, so finding one does not walk every claim.
  api::ResourceClaimPtr FindExtendedClaim(
      const std::string& namespace_, const std::string& owner_uid,
      const std::function<bool(const api::ResourceClaim&)>& match) const;

  // The allocation Reserve decided for the claim, not yet written; null when none is in flight.
  // With `group`, also the pod group of the pod that decided it ("" for a pod of no group).
  std::shared_ptr<const api::ResourceClaim> PendingAllocation(const std::string& uid,
                                                              std::string* group = nullptr) const;
  // Records `allocated` (the claim with the allocation Reserve decided for a pod of `group`) as in
  // flight. When one is already in flight for the claim, counts one more pod sharing it instead.
  void SignalPendingAllocation(const std::string& uid, api::ResourceClaimPtr allocated,
                               const std::string& group = "");
  // Drops one pod's share of the in-flight allocation (every share with `force`); true when the
  // allocation is no longer in flight because of this call.
  bool MaybeRemovePendingAllocation(const std::string& uid, bool force);

  // Records `written`, as the apiserver returned it (also a claim the scheduler created, which the
  // informer does not have yet). Ignored when the informer already has it or a later version.
  void AssumeWritten(api::ResourceClaimPtr written);
  // Forgets any written version of the claim.
  void RestoreWritten(const std::string& key);

  // Every device allocated in the cluster as the scheduler sees it: the informer's allocations,
  // overridden by written versions, plus the in-flight allocations. Returns false when an
  // aggregated capacity is not representable (the state is then incomplete).
  //
  // Most of it is a base shared by the states gathered until one of the claims it counts changes
  // or enough claims were allocated since (about the square root of its size, which keeps both
  // the rebuilds and the rest, gathered each time, small per call).
  bool GatherAllocatedState(AllocatedState* state) const;

  // The same state as if the claims with these UIDs were not allocated (what a preemption dry run
  // sees once the pods holding them are gone): built whole, without a base, as the base may count
  // them. Costs a step per allocated claim; an allocation in flight is always counted.
  bool GatherAllocatedStateWithout(const std::set<std::string>& claim_uids,
                                   AllocatedState* state) const;

  // Bases built so far; for tests.
  uint64_t base_builds() const;

  // Bumped whenever an allocation appears or disappears; for tests and caches.
  uint64_t revision() const;

 private:
  struct InFlight {
    api::ResourceClaimPtr claim;
    std::string group;
    int sharers = 0;
  };

  void Stored(const api::ResourceClaimPtr& claim);
  // Keeps extended_owner_ and extended_by_owner_ for the claim at `key` (null: deleted).
  // Requires mu_.
  void IndexExtended(const std::string& key, const api::ResourceClaim* claim);
  void Deleted(const api::ResourceClaimPtr& claim);

  const informer::Store<api::ResourceClaim>* store_;
  mutable std::mutex mu_;
  // Guarded by mu_. Keys are "namespace/name"; in-flight entries by claim UID, as upstream's.
  std::map<std::string, api::ResourceClaimPtr> allocated_;
  std::unordered_map<std::string, api::ResourceClaimPtr> written_;
  std::unordered_map<std::string, InFlight> in_flight_;
  uint64_t revision_ = 0;
  // Claims made for pods' extended resources, by key: their owner's UID; and by owner: their keys.
  std::unordered_map<std::string, std::string> extended_owner_;
  std::unordered_map<std::string, std::set<std::string>> extended_by_owner_;

  // Guarded by mu_ (mutable: GatherAllocatedState maintains them).
  // The allocations of the informer's claims that had no written version, as of the last build.
  mutable std::shared_ptr<const AllocatedState> base_;
  mutable bool base_exact_ = true;
  // The claims base_ counts (with the levels folded over it); a change to one of them makes
  // base_ stale.
  mutable std::unordered_map<std::string, api::ResourceClaimPtr> base_claims_;
  mutable bool base_stale_ = true;
  // How many of base_claims_ the levels over the last rebuilt base count.
  mutable size_t folded_ = 0;
  mutable uint64_t base_builds_ = 0;
  // Keys of allocated_ that base_ does not count (allocated since, or written at the build).
  mutable std::set<std::string> added_;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_CLAIM_TRACKER_H_
