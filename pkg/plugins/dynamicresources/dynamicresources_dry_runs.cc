// DynamicResources in dry runs: the devices preemption's victims would free, and the devices the
// pods placed earlier in one of explain's dry runs (a gang's members) would take.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/claim_status.h"
#include "pkg/plugins/dynamicresources/cycle_state.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "pkg/plugins/dynamicresources/extended_claim.h"
#include "pkg/plugins/helper/extended_resources.h"

namespace berth::plugins::dynamicresources {
namespace {

using framework::Status;

// The claims of the removed pods that the resourceclaim controller deallocates once those pods
// are gone: every user of the claim was removed, and the claim carries the finalizer the
// controller deallocates by (an allocation some other agent made stays).
void Release(State::DryRunDevices& devices) {
  devices.released.clear();
  for (const auto& [uid, claims] : devices.removed) {
    for (const api::ResourceClaimPtr& claim : claims) {
      const auto& users = claim->status.reserved_for;
      if (users.empty() || !HasFinalizer(*claim)) continue;
      const bool all_removed = std::all_of(users.begin(), users.end(),
                                           [&](const api::ResourceClaimConsumerReference& user) {
                                             return devices.removed.contains(user.uid);
                                           });
      if (all_removed) devices.released.insert(claim->meta.uid);
    }
  }
}

// A copy of the state's changes (or none yet) to change.
std::shared_ptr<State::DryRunDevices> CopyOf(const State& data) {
  auto next = std::make_shared<State::DryRunDevices>();
  if (data.dry_run != nullptr) {
    next->removed = data.dry_run->removed;
    next->released = data.dry_run->released;
    next->placed = data.dry_run->placed;
  }
  return next;
}

}  // namespace

int32_t LowestPriorityHoldingClaims(const framework::NodeInfo& node) {
  int32_t lowest = INT32_MAX;
  for (const framework::PodInfoPtr& info : node.pods()) {
    const api::Pod& pod = *info->pod;
    if (!pod.spec.resource_claims.empty() || pod.status.extended_resource_claim_status) {
      lowest = std::min(lowest, pod.spec.priority);
    }
  }
  return lowest;
}

Status Resolvable(const Status& rejection) {
  if (rejection.code() != framework::Code::kUnschedulableAndUnresolvable) return rejection;
  if (const framework::FixedReasons* fixed = rejection.fixed_reasons()) {
    return Status::Unschedulable(*fixed);
  }
  return Status(framework::Code::kUnschedulable, rejection.reasons());
}

std::vector<api::ResourceClaimPtr> DynamicResources::AllocatedClaimsOf(const api::Pod& pod) const {
  std::vector<api::ResourceClaimPtr> out;
  // A claim the pod cannot use (not made yet, being deleted) holds no devices for it: the entries
  // before it are still the pod's.
  (void)ClaimsOf(pod, [&](const api::ResourceClaimPtr& claim) {
    if (claim->status.allocation) out.push_back(claim);
  });
  if (const auto& status = pod.status.extended_resource_claim_status) {
    api::ResourceClaimPtr claim = tracker_->Get(pod.meta.namespace_, status->resource_claim_name);
    if (claim != nullptr && claim->status.allocation) out.push_back(std::move(claim));
  }
  return out;
}

Status DynamicResources::RemovePod(framework::CycleState& state, const api::Pod&,
                                   const framework::PodInfo& pod_to_remove,
                                   const framework::NodeInfo&) {
  State* data = ReadFullState(state);
  // Nothing to allocate (no state, or every claim allocated already): devices freed elsewhere
  // change nothing for the pod.
  if (data == nullptr || data->shared->allocator == nullptr) return {};
  const api::Pod& pod = *pod_to_remove.pod;
  std::vector<api::ResourceClaimPtr> claims = AllocatedClaimsOf(pod);
  if (claims.empty()) return {};
  auto next = CopyOf(*data);
  next->removed[pod.meta.uid] = std::move(claims);
  Release(*next);
  data->dry_run = std::move(next);
  return {};
}

Status DynamicResources::AddPod(framework::CycleState& state, const api::Pod&,
                                const framework::PodInfo& pod_to_add,
                                const framework::NodeInfo& node) {
  State* data = ReadFullState(state);
  if (data == nullptr || data->shared->allocator == nullptr) return {};
  const api::Pod& pod = *pod_to_add.pod;
  if (data->dry_run != nullptr && data->dry_run->removed.contains(pod.meta.uid)) {
    // A victim given back: its claims hold their devices again.
    auto next = CopyOf(*data);
    next->removed.erase(pod.meta.uid);
    Release(*next);
    data->dry_run = std::move(next);
    return {};
  }
  // In a scheduling cycle the added pod is a nominated one, whose claims upstream does not count
  // before its own Reserve. In explain's dry runs it is a pod placed before this one (a member of
  // the same gang), and its claims would take their devices at its Reserve: they are allocated
  // here on its node, so that the members are not all offered the same free devices.
  if (!state.dry_run || node.node() == nullptr) return {};
  std::vector<api::ResourceClaimPtr> claims;
  std::vector<std::string> uids;
  (void)ClaimsOf(pod, [&](const api::ResourceClaimPtr& claim) {
    if (claim->status.allocation || tracker_->PendingAllocation(claim->meta.uid) != nullptr) return;
    if (data->dry_run != nullptr && data->dry_run->placed.contains(claim->meta.uid)) return;
    claims.push_back(claim);
    uids.push_back(claim->meta.uid);
  });
  // Its extended resources that the node's devices must serve, when no claim holds them yet.
  if (!pod.status.extended_resource_claim_status) {
    std::map<std::string, std::string> needed;
    std::vector<api::DeviceClassPtr> classes;
    const api::ResourceList& allocatable = node.allocatable();
    for (const auto& [name, amount] : pod.requests.scalar) {
      if (amount == 0 || !helper::IsDraExtendedResourceName(name)) continue;
      if (allocatable.Get(name) != 0) continue;
      if (classes.empty()) classes = classes_.List();
      if (auto device_class = helper::DeviceClassForExtendedResource(name, classes)) {
        needed.emplace(name, device_class->meta.name);
      }
    }
    if (!needed.empty()) {
      std::vector<api::ContainerExtendedResourceRequest> mappings;
      uids.push_back(InMemoryExtendedClaimId(pod));
      claims.push_back(InMemoryExtendedClaim(pod, uids.back(),
                                             ExtendedResourceRequests(pod, needed, &mappings)));
    }
  }
  if (claims.empty()) return {};
  Status error;
  const Allocator* allocator = FilterAllocator(*data, &error);
  if (allocator == nullptr) return error;
  AllocateOutcome outcome = allocator->Allocate(*node.node(), claims);
  // The pod passed Filter on this node in its own run; when the devices are gone since, its
  // claims take nothing here.
  if (outcome.kind != AllocateOutcome::Kind::kAllocated || outcome.results.size() != uids.size()) {
    return {};
  }
  auto next = CopyOf(*data);
  for (size_t i = 0; i < uids.size(); i++) next->placed[uids[i]] = std::move(outcome.results[i]);
  data->dry_run = std::move(next);
  return {};
}

const Allocator* DynamicResources::FilterAllocator(const State& state, Status* error) const {
  const std::shared_ptr<const Allocator>& cycle = state.shared->allocator;
  if (cycle == nullptr || state.dry_run == nullptr ||
      (state.dry_run->released.empty() && state.dry_run->placed.empty())) {
    return cycle.get();
  }
  State::DryRunDevices& devices = *state.dry_run;
  std::lock_guard lock(devices.mu);
  if (devices.allocator == nullptr) {
    AllocatedState allocated;
    bool exact = devices.released.empty()
                     ? tracker_->GatherAllocatedState(&allocated)
                     : tracker_->GatherAllocatedStateWithout(devices.released, &allocated);
    for (const auto& [uid, allocation] : devices.placed) {
      if (!allocated.AddAllocation(allocation)) exact = false;
    }
    if (!exact || !allocated.SumsWithBase()) {
      *error = Status::Error("gather allocation state: consumed capacity out of range");
      return nullptr;
    }
    devices.allocator = std::make_shared<const Allocator>(cycle->inventory(), std::move(allocated));
  }
  return devices.allocator.get();
}

}  // namespace berth::plugins::dynamicresources
