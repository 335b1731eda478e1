#include "pkg/plugins/dynamicresources/dynamicresources.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "pkg/api/dra_codec.h"
#include "pkg/api/podgroup.h"
#include "pkg/client/client.h"
#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/claim_status.h"
#include "pkg/plugins/dynamicresources/cycle_state.h"
#include "pkg/plugins/dynamicresources/extended_claim.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "pkg/plugins/dynamicresources/pools.h"
#include "pkg/plugins/helper/extended_resources.h"
#include "pkg/util/time.h"

namespace berth::plugins::dynamicresources {
namespace {

using framework::QueueingHint;
using framework::Status;
using json = nlohmann::json;

bool IsControlledBy(const api::ResourceClaim& claim, const api::Pod& pod) {
  return std::any_of(claim.meta.owner_references.begin(), claim.meta.owner_references.end(),
                     [&](const api::OwnerReference& owner) {
                       return owner.controller && owner.uid == pod.meta.uid;
                     });
}

// The pod group whose members bind together ("namespace/name"), as Coscheduling groups pods; ""
// for a pod of no group.
std::string PodGroupKey(const api::Pod& pod) {
  if (const std::string* name = pod.meta.labels.Find(api::kPodGroupLabel)) {
    return pod.meta.namespace_ + "/" + *name;
  }
  if (pod.spec.scheduling_group && !pod.spec.scheduling_group->empty()) {
    return pod.meta.namespace_ + "/" + *pod.spec.scheduling_group;
  }
  return "";
}

// slot_at_'s mark of a position without a node.
constexpr uint32_t kNoSlot = UINT32_MAX;

// The extended resources the pod requests that devices must serve on the node (name -> class),
// into `needed`; a status when the node cannot serve them at all.
std::optional<Status> NeededExtended(const State::Shared& s, const api::Pod& pod,
                                     const framework::NodeInfo& node_info,
                                     std::map<std::string, std::string>* needed) {
  if (s.extended.empty()) return std::nullopt;
  if (s.existing_extended && !s.existing_extended->status.allocation &&
      !s.existing_extended->spec.requests.empty()) {
    // Left by an attempt that failed after creating it; PostFilter deletes it.
    static const framework::FixedReasons kStale{"cannot schedule extended resource claim"};
    return Status::Unresolvable(kStale);
  }
  // A node that offers one as allocatable (a device plugin) serves it through NodeResourcesFit;
  // on any other node its class's devices must.
  const api::ResourceList& allocatable = node_info.allocatable();
  for (const auto& request : pod.requests.scalar) {
    const std::string& name = request.first;
    if (request.second == 0 || !helper::IsDraExtendedResourceName(name)) continue;
    auto served = s.extended.find(name);
    if (served != s.extended.end() && allocatable.Get(name) == 0) {
      needed->emplace(name, served->second);
    } else if (std::none_of(allocatable.scalar.begin(), allocatable.scalar.end(),
                            [&](const auto& entry) { return entry.first == name; })) {
      static const framework::FixedReasons kCannotFit{"cannot fit resource"};
      return Status::Unresolvable(kCannotFit);
    }
  }
  return std::nullopt;
}

// "a, b and c" of a list of field paths.
std::string FieldList(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); i++) {
    if (i > 0) out += i + 1 == fields.size() ? " and " : ", ";
    out += fields[i];
  }
  return out;
}

}  // namespace

Args ParseArgs(const json& args) {
  Args out;
  framework::ArgsErrors errors;
  if (errors.CheckObject(args, {"filterTimeout", "bindingTimeout"})) {
    auto read = [&](std::string_view key, std::chrono::milliseconds min, std::string_view detail,
                    std::chrono::milliseconds* field) {
      auto it = args.find(key);
      if (it == args.end() || it->is_null()) return;
      std::optional<std::chrono::nanoseconds> parsed;
      if (it->is_string()) parsed = util::ParseGoDuration(it->get<std::string>());
      if (!parsed) {
        errors.Invalid(std::string(key), *it, "must be a duration such as \"10s\"");
        return;
      }
      if (*parsed < min) {
        errors.Invalid(std::string(key), *it, detail);
        return;
      }
      *field = std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
    };
    read("filterTimeout", std::chrono::milliseconds(0), "must be zero or positive",
         &out.filter_timeout);
    read("bindingTimeout", std::chrono::seconds(1), "must be at least 1 second",
         &out.binding_timeout);
  }
  errors.ThrowIfAny();
  return out;
}

std::optional<std::string> ResolvePodClaimName(const api::Pod& pod,
                                               const api::PodResourceClaim& entry,
                                               PodClaimName* out) {
  *out = PodClaimName{};
  if (entry.resource_claim_name) {
    out->name = entry.resource_claim_name;
    return std::nullopt;
  }
  if (entry.resource_claim_template_name) {
    for (const api::PodResourceClaimStatus& status : pod.status.resource_claim_statuses) {
      if (status.name == entry.name) {
        out->name = status.resource_claim_name;
        out->must_check_owner = true;
        return std::nullopt;
      }
    }
    return "pod \"" + pod.Key() + "\": ResourceClaim not created yet";
  }
  return "pod \"" + pod.Key() + "\", spec.resourceClaim \"" + entry.name +
         "\": none of the supported fields are set";
}

DynamicResources::DynamicResources(Args args, framework::Handle& handle)
    : args_(args),
      handle_(handle),
      tracker_(ClaimTracker::For(handle.SharedInformerFactory())),
      malformed_(MalformedObjects::For(handle.SharedInformerFactory())),
      classes_(handle.SharedInformerFactory().ListerFor<api::DeviceClass>()),
      inventory_(std::make_shared<InventoryCache>(handle.SharedInformerFactory(), evaluator_)) {}

std::optional<std::string> DynamicResources::ClaimsOf(
    const api::Pod& pod, const std::function<void(const api::ResourceClaimPtr&)>& fn,
    bool* malformed) const {
  for (const api::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName name;
    if (auto error = ResolvePodClaimName(pod, entry, &name)) return error;
    // The controller decided that this entry needs no claim.
    if (!name.name) continue;
    api::ResourceClaimPtr claim = tracker_->Get(pod.meta.namespace_, *name.name);
    if (claim == nullptr) {
      const std::string key = pod.meta.namespace_ + "/" + *name.name;
      if (std::string error = malformed_->Error(MalformedObjects::Kind::kClaim, key);
          !error.empty()) {
        if (malformed != nullptr) *malformed = true;
        std::string message = "ResourceClaim " + key;
        message += " cannot be read: ";
        message += error;
        return message;
      }
      return "could not find ResourceClaim \"" + key + "\"";
    }
    if (claim->meta.deletion_timestamp) {
      return "resourceclaim \"" + claim->meta.name + "\" is being deleted";
    }
    if (name.must_check_owner && !IsControlledBy(*claim, pod)) {
      return "ResourceClaim " + Ref(claim->meta) + " was not created for Pod " + pod.Key() +
             " (Pod is not owner)";
    }
    if (fn) fn(claim);
  }
  return std::nullopt;
}

api::ResourceClaimPtr DynamicResources::ExistingExtendedClaim(const api::Pod& pod) const {
  if (const auto& status = pod.status.extended_resource_claim_status) {
    if (api::ResourceClaimPtr claim =
            tracker_->Get(pod.meta.namespace_, status->resource_claim_name)) {
      if (IsExtendedClaimOf(*claim, pod)) return claim;
    }
  }
  // Created by an attempt that failed before naming it in the pod's status.
  return tracker_->FindExtendedClaim(
      pod.meta.namespace_, pod.meta.uid,
      [&](const api::ResourceClaim& claim) { return IsExtendedClaimOf(claim, pod); });
}

Status DynamicResources::PreEnqueue(const api::Pod& pod) {
  if (pod.spec.resource_claims.empty()) return {};
  bool malformed = false;
  if (auto error = ClaimsOf(pod, nullptr, &malformed)) {
    // A claim the apiserver serves but Berth cannot decode will not get better by waiting: the
    // pod goes on to PreFilter, which rejects it with the field named, in an event on the pod.
    if (malformed) return {};
    return Status::Unresolvable(*error);
  }
  return {};
}

Status DynamicResources::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                   const std::vector<framework::NodeInfoPtr>& nodes,
                                   framework::PreFilterResult*) {
  // No state is written for a pod without claims: the later extension points read its absence
  // as nothing to do, and most pods are such pods.
  const bool has_extended = std::any_of(
      pod.requests.scalar.begin(), pod.requests.scalar.end(),
      [](const auto& request) { return helper::IsDraExtendedResourceName(request.first); });
  if (pod.spec.resource_claims.empty() && !has_extended) return Status::Skip();
  auto data = std::make_shared<State>();
  State::Shared& s = *data->shared;
  if (has_extended) {
    std::vector<api::DeviceClassPtr> classes = classes_.List();
    for (const auto& [name, amount] : pod.requests.scalar) {
      if (amount == 0 || !helper::IsDraExtendedResourceName(name)) continue;
      if (auto device_class = helper::DeviceClassForExtendedResource(name, classes)) {
        s.extended.emplace(name, device_class->meta.name);
      }
    }
  }
  // In explain's check of a change to a claim, the claim as changed.
  const ChangedClaims* changed =
      state.dry_run ? state.Read<ChangedClaims>(ChangedClaimsKey()) : nullptr;
  if (auto error = ClaimsOf(pod, [&](const api::ResourceClaimPtr& claim) {
        if (changed != nullptr) {
          if (auto it = changed->claims.find(claim->meta.Key()); it != changed->claims.end()) {
            s.claims.push_back(ClaimEntry{it->second, std::nullopt});
            return;
          }
        }
        s.claims.push_back(ClaimEntry{claim, std::nullopt});
      })) {
    return Status::Unresolvable(*error);
  }
  if (!s.extended.empty()) {
    s.existing_extended = ExistingExtendedClaim(pod);
    if (s.existing_extended && s.existing_extended->status.allocation) {
      // Made and allocated in an earlier attempt: the pod follows it like any allocated claim.
      s.claims.push_back(ClaimEntry{s.existing_extended, std::nullopt});
    } else if (s.existing_extended == nullptr) {
      s.extended_in_memory = true;
      s.extended_id = InMemoryExtendedClaimId(pod);
    }
  }
  if (s.claims.empty() && s.extended.empty()) return Status::Skip();
  s.may_preempt = pod.spec.preemption_policy != api::PreemptionPolicy::kNever;
  s.priority = pod.spec.priority;

  for (size_t index = 0; index < s.claims.size(); index++) {
    const api::ResourceClaim& claim = *s.claims[index].claim;
    if (!claim.unsupported_fields.empty()) {
      return Status::Unresolvable("resource claim " + Ref(claim.meta) + " uses " +
                                  FieldList(claim.unsupported_fields) +
                                  " (features that are alpha in Kubernetes v1.37), which "
                                  "berth-scheduler does not support");
    }
    for (const api::DeviceRequest& request : claim.spec.requests) {
      for (const auto& sub : request.first_available) {
        (void)sub;
        s.has_first_available = true;
      }
    }
    if (claim.status.allocation) continue;
    std::string pending_group;
    if (auto pending = tracker_->PendingAllocation(claim.meta.uid, &pending_group)) {
      // Members of a pod group are placed one by one and bind together after the last one's
      // Reserve, so the allocation a member reserved is shared with the others rather than
      // waited for (which would never come: the first member waits for the rest).
      if (!pending_group.empty() && pending_group == PodGroupKey(pod)) {
        s.claims[index].allocation = pending->status.allocation;
        s.claims[index].shares_pending = true;
        continue;
      }
      return Status::Unresolvable("resource claim " + Ref(claim.meta) +
                                  " is in the process of being allocated");
    }
    // A class that does not exist stops the pod whichever node it would go to.
    auto check_class = [&](const std::string& class_name,
                           const std::string& request_name) -> std::optional<Status> {
      if (class_name.empty()) {
        return Status::Error("request " + request_name + ": unsupported request type");
      }
      api::DeviceClassPtr device_class = classes_.Get(class_name);
      if (device_class == nullptr) {
        std::string reason = "request " + request_name;
        reason += ": device class ";
        reason += class_name;
        // Served by the apiserver but skipped by the informer: say why rather than "missing".
        if (std::string error = malformed_->Error(MalformedObjects::Kind::kClass, class_name);
            !error.empty()) {
          reason += " cannot be read: ";
          reason += error;
          return Status::Unresolvable(std::move(reason));
        }
        reason += " does not exist";
        return Status::Unresolvable(std::move(reason));
      }
      if (!device_class->unsupported_fields.empty()) {
        return Status::Unresolvable("device class " + class_name + " uses " +
                                    FieldList(device_class->unsupported_fields) +
                                    " (features that are alpha in Kubernetes v1.37), which "
                                    "berth-scheduler does not support");
      }
      return std::nullopt;
    };
    for (const api::DeviceRequest& request : claim.spec.requests) {
      if (request.exactly) {
        if (auto status = check_class(request.exactly->device_class_name, request.name)) {
          return *status;
        }
      } else if (!request.first_available.empty()) {
        for (const api::DeviceSubRequest& sub : request.first_available) {
          if (auto status =
                  check_class(sub.request.device_class_name, request.name + "/" + sub.name)) {
            return *status;
          }
        }
      } else {
        return Status::Unresolvable("resource claim " + Ref(claim.meta) + ", request " +
                                    request.name + ": unknown request type");
      }
    }
    s.to_allocate.push_back(index);
    s.claims_to_allocate.push_back(s.claims[index].claim);
  }

  if (!s.to_allocate.empty() || s.extended_in_memory) {
    AllocatedState allocated;
    if (!tracker_->GatherAllocatedState(&allocated)) {
      return Status::Error("gather allocation state: consumed capacity out of range");
    }
    s.allocator = std::make_shared<const Allocator>(inventory_->Get(), std::move(allocated));
    auto memo_claims = std::make_shared<DecisionMemo::Claims>();
    for (const api::ResourceClaimPtr& claim : s.claims_to_allocate) {
      memo_claims->emplace_back(claim->meta.namespace_, claim->spec);
    }
    const std::shared_ptr<const Inventory>& inventory = s.allocator->inventory();
    DecisionMemo& decisions = inventory->decisions();
    // No Filter runs now (see DecisionMemo::Reclaim).
    decisions.Reclaim();
    s.memo_claims = decisions.Intern(std::move(memo_claims));
    node_list_.Sync(nodes);
    const std::vector<framework::NodeInfoPtr>& listed = node_list_.nodes();
    const bool same_inventory =
        !slots_of_.owner_before(inventory) && !inventory.owner_before(slots_of_);
    auto refresh = [&](size_t i) {
      slot_at_[i] = listed[i]->node() != nullptr
                        ? static_cast<uint32_t>(inventory->SlotOf(*listed[i]->node()))
                        : kNoSlot;
      claims_floor_at_[i] = LowestPriorityHoldingClaims(*listed[i]);
    };
    if (!same_inventory || slot_at_.size() != listed.size()) {
      slot_at_.assign(listed.size(), kNoSlot);
      claims_floor_at_.assign(listed.size(), INT32_MAX);
      for (size_t i = 0; i < listed.size(); i++) refresh(i);
      slots_of_ = inventory;
    } else {
      for (size_t i : node_list_.changed_now()) refresh(i);
    }
    s.slot_at = &slot_at_;
    s.claims_floor_at = &claims_floor_at_;
    if (s.extended_in_memory) {
      // A node that serves none of the extended resources itself (every node, unless a device
      // plugin serves some there) needs devices for all of them, so one claim stands for the
      // extended resources on every such node.
      auto everywhere = std::make_shared<ExtendedEverywhere>();
      everywhere->node.requests =
          ExtendedResourceRequests(pod, s.extended, &everywhere->node.mappings);
      everywhere->claims = s.claims_to_allocate;
      everywhere->claims.push_back(
          InMemoryExtendedClaim(pod, s.extended_id, everywhere->node.requests));
      auto claims = std::make_shared<DecisionMemo::Claims>();
      for (const api::ResourceClaimPtr& claim : everywhere->claims) {
        claims->emplace_back(claim->meta.namespace_, claim->spec);
      }
      everywhere->memo_claims = decisions.Intern(std::move(claims));
      s.extended_everywhere = std::move(everywhere);
    }
  }
  state.Write(StateKeyOf(), data);
  return {};
}

std::shared_ptr<const Inventory> DynamicResources::inventory() { return inventory_->Get(); }

Status DynamicResources::Filter(const framework::CycleState& state, const api::Pod& pod,
                                const framework::NodeInfo& node_info) {
  const State* data = ReadFullState(state);
  if (data == nullptr) return NoState();
  State::Shared* s = data->shared.get();
  const api::Node& node = *node_info.node();

  std::map<std::string, std::string> needed;
  if (auto status = NeededExtended(*s, pod, node_info, &needed)) return *status;
  // The claim for them where this node needs devices for some: the one made in PreFilter when it
  // needs them for all, else one of its own.
  const ExtendedEverywhere* everywhere = nullptr;
  std::optional<NodeExtended> node_extended;
  if (s->extended_in_memory && !needed.empty()) {
    if (s->extended_everywhere != nullptr && needed == s->extended) {
      everywhere = s->extended_everywhere.get();
    } else {
      node_extended.emplace();
      node_extended->requests = ExtendedResourceRequests(pod, needed, &node_extended->mappings);
    }
  }

  // Claims a dry run allocated already, for a pod placed before this one; null when none.
  const std::map<std::string, api::AllocationResult>* placed =
      data->dry_run != nullptr && !data->dry_run->placed.empty() ? &data->dry_run->placed : nullptr;
  std::vector<size_t> unavailable;
  for (size_t index = 0; index < s->claims.size(); index++) {
    const ClaimEntry& entry = s->claims[index];
    const api::ResourceClaim& claim = *entry.claim;
    const api::AllocationResult* allocation = KnownAllocation(entry);
    bool not_written = entry.shares_pending;
    if (allocation == nullptr && placed != nullptr) {
      // Allocated for a pod placed before this one in the same dry run.
      if (auto it = placed->find(claim.meta.uid); it != placed->end()) {
        allocation = &it->second;
        not_written = true;
      }
    }
    if (allocation == nullptr) continue;
    // An allocation without a node selector is usable everywhere.
    if (allocation->node_selector &&
        !NodeMatches(node, std::nullopt, false, allocation->node_selector)) {
      if (not_written) {
        // Not written yet, so nothing PostFilter could free: the node just does not fit.
        static const framework::FixedReasons kNotAvailable{
            "resourceclaim not available on the node"};
        return Status::Unresolvable(kNotAvailable);
      }
      unavailable.push_back(index);
      continue;
    }
    if (!claim.status.allocation) continue;
    // Devices whose binding failed or took too long: PostFilter may free the claim for others.
    bool ready = false;
    const bool failed = ClaimReadyForBinding(claim, &ready).has_value();
    if (failed || (!ready && ClaimBindingTimedOut(claim, args_.binding_timeout))) {
      unavailable.push_back(index);
    }
  }

  std::vector<api::AllocationResult> allocations;
  bool decided = false;
  auto not_fitting = [&](const std::string& message) {
    Status rejection = message.empty() || message == kCannotAllocateAllClaims
                           ? CannotAllocate(node)
                           : Status::Unresolvable(message);
    if (!s->may_preempt) return rejection;
    // Devices that lower-priority pods here hold might be freed by preempting them. A listed node
    // is looked up; a copy (a preemption's or a nominated pod's trial) is looked at.
    const uint32_t position = node_info.list_index();
    const bool listed = s->claims_floor_at != nullptr && node_list_.Listed(node_info) &&
                        position < s->claims_floor_at->size();
    const int32_t floor =
        listed ? (*s->claims_floor_at)[position] : LowestPriorityHoldingClaims(node_info);
    return floor < s->priority ? Resolvable(rejection) : rejection;
  };
  Status allocator_error;
  const Allocator* allocator = FilterAllocator(*data, &allocator_error);
  if (!allocator_error.IsSuccess()) return allocator_error;
  if (allocator != nullptr) {
    AllocateOptions options;
    // Only Score (for firstAvailable) reads a node's allocations before Reserve, which allocates
    // on the chosen node again when Filter only decided; so does the claim of a node's own for
    // extended resources.
    options.decide_only = !s->has_first_available && !node_extended;
    std::vector<api::ResourceClaimPtr> extra;
    const std::vector<api::ResourceClaimPtr>* claims = &s->claims_to_allocate;
    const std::shared_ptr<const DecisionMemo::Claims>* memo_claims = &s->memo_claims;
    if (everywhere != nullptr) {
      claims = &everywhere->claims;
      memo_claims = &everywhere->memo_claims;
    } else if (node_extended) {
      extra = s->claims_to_allocate;
      extra.push_back(InMemoryExtendedClaim(pod, s->extended_id, node_extended->requests));
      claims = &extra;
    }
    if (placed != nullptr) {
      // Those claims follow their allocation; the others are searched for.
      std::vector<api::ResourceClaimPtr> own;
      for (const api::ResourceClaimPtr& claim : *claims) {
        if (!placed->contains(claim->meta.uid)) own.push_back(claim);
      }
      if (own.size() != claims->size()) {
        extra = std::move(own);
        claims = &extra;
        memo_claims = nullptr;
      }
    }
    // A node's own extended-resource claim is not remembered: it is made for that node alone.
    std::string node_state;
    size_t slot = 0;
    DecisionMemo& memo = allocator->inventory()->decisions();
    bool memoizable = options.decide_only && !claims->empty() && memo_claims != nullptr;
    if (memoizable) {
      const uint32_t position = node_info.list_index();
      if (s->slot_at != nullptr && node_list_.Listed(node_info) && position < s->slot_at->size() &&
          (*s->slot_at)[position] != kNoSlot) {
        slot = (*s->slot_at)[position];
      } else {
        slot = allocator->inventory()->SlotOf(node);
      }
      memoizable = allocator->SlotHasAllocationState(slot);
    }
    std::optional<DecisionMemo::Decision> remembered;
    if (memoizable) {
      // The node's state is compared where it is kept, not made: it is made only to be kept.
      remembered = memo.FindIf(slot, *memo_claims, [&](std::string_view kept) {
        return allocator->SlotAllocationStateIs(slot, kept);
      });
    }
    if (remembered) {
      if (!remembered->fits) return not_fitting(remembered->message);
      decided = true;
    } else if (claims->empty()) {
      // Nothing to allocate on this node: its device plugin serves the extended resources.
    } else {
      // Read the clock only for a search: most nodes are decided by the memo.
      if (args_.filter_timeout.count() > 0) {
        options.deadline = std::chrono::steady_clock::now() + args_.filter_timeout;
      }
      AllocateOutcome outcome = allocator->Allocate(node, *claims, options);
      if (memoizable && (outcome.kind == AllocateOutcome::Kind::kAllocated ||
                         outcome.kind == AllocateOutcome::Kind::kUnschedulable)) {
        const bool fits = outcome.kind == AllocateOutcome::Kind::kAllocated;
        allocator->SlotAllocationState(slot, &node_state);
        memo.Remember(
            slot, *memo_claims, std::move(node_state),
            {fits, fits || outcome.message == kCannotAllocateAllClaims ? std::string()
                                                                       : outcome.message});
      }
      switch (outcome.kind) {
        case AllocateOutcome::Kind::kAllocated:
          break;
        case AllocateOutcome::Kind::kUnschedulable:
          return not_fitting(outcome.message);
        case AllocateOutcome::Kind::kAborted:
          // Potentially transient: an error retries with backoff rather than waiting for an event.
          return Status::Error("node " + node.Name() + ": timed out trying to allocate devices");
        case AllocateOutcome::Kind::kError:
          return Status::Error(outcome.message);
      }
      decided = options.decide_only;
      if (!decided && outcome.results.size() != claims->size()) return CannotAllocate(node);
      allocations = std::move(outcome.results);
    }
  }

  if (unavailable.empty() && (allocator == nullptr || decided)) return {};
  std::lock_guard lock(s->mu);
  if (!unavailable.empty()) {
    s->unavailable.insert(unavailable.begin(), unavailable.end());
    static const framework::FixedReasons kNotAvailable{"resourceclaim not available on the node"};
    return Status::Unresolvable(kNotAvailable);
  }
  if (!decided) s->node_allocations[node.Name()] = std::move(allocations);
  if (node_extended) s->node_extended[node.Name()] = std::move(*node_extended);
  return {};
}

Status DynamicResources::CannotAllocate(const api::Node& node) const {
  // The reason of nearly every node a pod's claims do not fit, made once.
  static const framework::FixedReasons kCannot{std::string(kCannotAllocateAllClaims)};
  // Devices of a slice the informer could not decode are missing from the search; the user is
  // told which slice and field rather than left to guess. Costs one atomic load when none is.
  std::string notes = malformed_->SliceNotes(node.Name());
  if (notes.empty()) return Status::Unresolvable(kCannot);
  return Status::Unresolvable(std::string(kCannotAllocateAllClaims) + notes);
}

Status DynamicResources::Reserve(framework::CycleState& state, const api::Pod& pod,
                                 const std::string& node) {
  State::Shared* s = ReadState(state);
  if (s == nullptr) return {};
  const std::string group = PodGroupKey(pod);
  for (const ClaimEntry& entry : s->claims) {
    if (entry.shares_pending) {
      tracker_->SignalPendingAllocation(entry.claim->meta.uid, entry.claim, group);
    }
  }
  std::lock_guard lock(s->mu);
  auto it = s->node_allocations.find(node);
  framework::NodeInfoPtr decided;
  if (it == s->node_allocations.end() && s->allocator != nullptr) {
    decided = handle_.SnapshotSharedLister().Get(node);
  }
  if (decided != nullptr && decided->node() != nullptr) {
    // Filter only decided that the node fits: the same search, now keeping what it found, with
    // the claim for extended resources the node needs devices for.
    std::map<std::string, std::string> needed;
    if (auto status = NeededExtended(*s, pod, *decided, &needed)) return *status;
    std::vector<api::ResourceClaimPtr> claims = s->claims_to_allocate;
    std::optional<NodeExtended> node_extended;
    if (s->extended_in_memory && !needed.empty()) {
      node_extended.emplace();
      node_extended->requests = ExtendedResourceRequests(pod, needed, &node_extended->mappings);
      claims.push_back(InMemoryExtendedClaim(pod, s->extended_id, node_extended->requests));
    }
    if (!claims.empty()) {
      AllocateOutcome outcome = s->allocator->Allocate(*decided->node(), claims);
      if (outcome.kind != AllocateOutcome::Kind::kAllocated) {
        return Status::Error("allocate claims on node " + node + ": " + outcome.message);
      }
      it = s->node_allocations.emplace(node, std::move(outcome.results)).first;
      if (node_extended) s->node_extended[node] = std::move(*node_extended);
    }
  }
  auto extended = s->node_extended.find(node);
  const size_t want = s->to_allocate.size() + (extended != s->node_extended.end() ? 1 : 0);
  if (want == 0) return {};
  if (it == s->node_allocations.end()) {
    // Filter passed the node, so this cannot happen.
    return Status::Error("claim allocation not found for node");
  }
  if (it->second.size() != want) {
    return Status::Error("internal error, have " + std::to_string(it->second.size()) +
                         " allocations, want " + std::to_string(want) + " claims");
  }
  if (extended != s->node_extended.end()) {
    s->reserved_extended = extended->second;
    s->reserved_extended->allocation = it->second.back();
    auto allocated = std::make_shared<api::ResourceClaim>();
    allocated->meta.namespace_ = pod.meta.namespace_;
    allocated->meta.name = std::string(kExtendedClaimInMemoryName);
    allocated->meta.uid = s->extended_id;
    allocated->spec.requests = s->reserved_extended->requests;
    allocated->status.allocation = s->reserved_extended->allocation;
    tracker_->SignalPendingAllocation(s->extended_id, std::move(allocated), group);
  }
  for (size_t i = 0; i < s->to_allocate.size(); i++) {
    ClaimEntry& entry = s->claims[s->to_allocate[i]];
    entry.allocation = it->second[i];
    auto allocated = std::make_shared<api::ResourceClaim>(*entry.claim);
    if (!HasFinalizer(*allocated)) allocated->finalizers.emplace_back(api::kResourceClaimFinalizer);
    allocated->status.allocation = *entry.allocation;
    const std::string uid = allocated->meta.uid;
    tracker_->SignalPendingAllocation(uid, std::move(allocated), group);
  }
  return {};
}

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  return std::make_shared<DynamicResources>(ParseArgs(args), handle);
}

}  // namespace berth::plugins::dynamicresources
