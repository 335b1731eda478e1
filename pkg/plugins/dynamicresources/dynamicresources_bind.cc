// DynamicResources' binding cycle: PreBind writes the claims' allocations and reservations (and
// creates the claim for extended resources), then waits for binding conditions; Unreserve undoes
// Reserve and PreBind.

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "pkg/api/dra_codec.h"
#include "pkg/client/client.h"
#include "pkg/log/log.h"
#include "pkg/plugins/dynamicresources/claim_status.h"
#include "pkg/plugins/dynamicresources/cycle_state.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "pkg/plugins/dynamicresources/extended_claim.h"

namespace berth::plugins::dynamicresources {
namespace {

using framework::Status;
using json = nlohmann::json;

// How often PreBind looks at the claims while it waits for binding conditions (upstream's poll).
constexpr std::chrono::seconds kBindingConditionsPoll{5};

}  // namespace

void DynamicResources::Unreserve(framework::CycleState& state, const api::Pod& pod,
                                 const std::string&) {
  State::Shared* s = ReadState(state);
  if (s == nullptr) return;
  if (s->extended_in_memory) {
    tracker_->MaybeRemovePendingAllocation(s->extended_id, false);
    // Created by this attempt's PreBind: it goes, devices and all.
    if (s->created_extended) {
      tracker_->RestoreWritten(s->created_extended->meta.Key());
      if (client::Client* client = handle_.ClientSet()) {
        if (auto error = DeleteClaim(*client, *s->created_extended)) {
          log::Error("deleting the claim made for the pod's extended resources failed",
                     {{"pod", pod.Key()},
                      {"resourceclaim", Ref(s->created_extended->meta)},
                      {"err", *error}});
        }
      }
      s->created_extended = nullptr;
    }
  }
  for (const ClaimEntry& entry : s->claims) {
    const api::ResourceClaim& claim = *entry.claim;
    if (tracker_->MaybeRemovePendingAllocation(claim.meta.uid, false)) {
      tracker_->RestoreWritten(claim.meta.Key());
    }
    if (!claim.status.allocation || !IsReservedForPod(claim, pod)) continue;
    client::Client* client = handle_.ClientSet();
    if (client == nullptr) continue;
    // A strategic merge patch removes the pod's entry without needing the claim's latest version.
    json patch = {
        {"metadata", {{"uid", claim.meta.uid}}},
        {"status",
         {{"reservedFor", json::array({{{"$patch", "delete"}, {"uid", pod.meta.uid}}})}}}};
    try {
      client->Patch(ClaimPath(claim) + "/status", patch, client::PatchType::kStrategicMerge);
    } catch (const std::exception& e) {
      // The next attempt of the pod gets here again.
      log::Error("unreserve of ResourceClaim failed",
                 {{"pod", pod.Key()}, {"resourceclaim", Ref(claim.meta)}, {"err", e.what()}});
    }
  }
}

Status DynamicResources::PreBindPreFlight(framework::CycleState& state, const api::Pod&,
                                          const std::string&) {
  State::Shared* s = ReadState(state);
  return s == nullptr || (s->claims.empty() && !s->reserved_extended) ? Status::Skip() : Status();
}

Status DynamicResources::PreBind(framework::CycleState& state, const api::Pod& pod,
                                 const std::string& node) {
  State::Shared* s = ReadState(state);
  if (s == nullptr) return {};
  client::Client* client = handle_.ClientSet();
  if (client == nullptr) return Status::Error("no client to write ResourceClaims with");

  std::vector<std::string> written_uids;
  for (ClaimEntry& entry : s->claims) {
    if (IsReservedForPod(*entry.claim, pod)) continue;
    if (auto error = WriteClaimForPod(*client, *tracker_, pod, entry.allocation,
                                      entry.shares_pending, &entry.claim)) {
      return Status::Error(*error);
    }
    if (entry.allocation) written_uids.push_back(entry.claim->meta.uid);
  }
  if (s->reserved_extended && s->created_extended == nullptr) {
    // The claim for the pod's extended resources: created now, then allocated and reserved like
    // any other, then named in the pod's status for the kubelet.
    api::ResourceClaimPtr created;
    try {
      created = std::make_shared<const api::ResourceClaim>(api::DecodeResourceClaim(
          client->Post(client::ResourceClaimsResource().Path(pod.meta.namespace_),
                       ExtendedClaimObject(pod, s->reserved_extended->requests))));
    } catch (const std::exception& e) {
      return Status::Error("create claim for extended resources " + pod.meta.namespace_ + "/" +
                           std::string(kExtendedClaimInMemoryName) + ": " + e.what());
    }
    s->created_extended = created;
    if (auto error = WriteClaimForPod(*client, *tracker_, pod, s->reserved_extended->allocation,
                                      false, &created)) {
      return Status::Error(*error);
    }
    s->created_extended = created;
    try {
      client->Patch(client::PodsResource().Path(pod.meta.namespace_, pod.meta.name, "status"),
                    ExtendedClaimStatusPatch(created->meta.name, s->reserved_extended->mappings),
                    client::PatchType::kMerge);
    } catch (const std::exception& e) {
      return Status::Error("update pod " + pod.Key() + " ExtendedResourceClaimStatus: " + e.what());
    }
    s->claims.push_back(ClaimEntry{created, s->reserved_extended->allocation});
    written_uids.push_back(s->extended_id);
  }
  // Written: the informer (or the written version meanwhile) now carries these allocations.
  for (const std::string& uid : written_uids) tracker_->MaybeRemovePendingAllocation(uid, true);

  bool has_binding_conditions = false;
  for (const ClaimEntry& entry : s->claims) {
    if (!entry.claim->status.allocation) continue;
    for (const auto& result : entry.claim->status.allocation->results) {
      if (!result.binding_conditions.empty()) has_binding_conditions = true;
    }
  }
  if (!has_binding_conditions) return {};

  handle_.GetEventRecorder().Eventf(pod, "Normal", "BindingConditionsPending", "Scheduling",
                                    "waiting for binding conditions for device on node " + node);
  const auto deadline = std::chrono::steady_clock::now() + args_.binding_timeout;
  for (;;) {
    bool all_ready = true;
    for (ClaimEntry& entry : s->claims) {
      api::ResourceClaimPtr current =
          tracker_->Get(entry.claim->meta.namespace_, entry.claim->meta.name);
      if (current == nullptr) {
        return Status::Error("could not find ResourceClaim \"" + entry.claim->meta.Key() + "\"");
      }
      entry.claim = current;
      bool ready = false;
      if (auto failed = ClaimReadyForBinding(*current, &ready)) return Status::Error(*failed);
      if (!ready) {
        if (ClaimBindingTimedOut(*current, args_.binding_timeout)) {
          return Status::Error("device binding timeout: claim=" + current->meta.name);
        }
        all_ready = false;
      }
    }
    if (all_ready) return {};
    // Looks again after upstream's poll interval, or as soon as any claim changed: the driver's
    // status update is what this waits for, and binding sooner costs nothing.
    const uint64_t seen = tracker_->revision();
    const auto next = std::min(deadline, std::chrono::steady_clock::now() +
                                             std::chrono::milliseconds(kBindingConditionsPoll));
    while (std::chrono::steady_clock::now() < next && tracker_->revision() == seen) {
      if (handle_.Stopping()) return Status::Error("scheduler is stopping");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Error("device binding timeout: context deadline exceeded");
    }
  }
}

}  // namespace berth::plugins::dynamicresources
