#include "pkg/plugins/dynamicresources/dynamicresources.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "pkg/api/dra_codec.h"
#include "pkg/client/client.h"
#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "pkg/plugins/dynamicresources/pools.h"
#include "pkg/plugins/helper/normalize_score.h"
#include "pkg/util/time.h"

namespace berth::plugins::dynamicresources {
namespace {

using framework::QueueingHint;
using framework::Status;
using json = nlohmann::json;

const framework::StateKey& StateKeyOf() {
  static const framework::StateKey kKey{kName};
  return kKey;
}

// How often PreBind looks at the claims while it waits for binding conditions (upstream's poll).
constexpr std::chrono::seconds kBindingConditionsPoll{5};
// Attempts of one claim's status write that lost to a concurrent change (client-go's DefaultRetry).
constexpr int kWriteAttempts = 5;

// One claim of the pod, in the order of spec.resourceClaims (entries that need no claim left out).
struct ClaimEntry {
  // As of PreFilter; PreBind replaces it with what it wrote.
  api::ResourceClaimPtr claim;
  // Set by Reserve for a claim the scheduler allocates; PreBind writes it.
  std::optional<api::AllocationResult> allocation;
};

// What one cycle knows of the pod's claims. Copies share it (as upstream's state is shared by its
// clones): no PreFilter extension changes it.
class State final : public framework::StateData {
 public:
  struct Shared {
    std::vector<ClaimEntry> claims;
    // Indices into `claims` of the claims to allocate, and those claims, in that order.
    std::vector<size_t> to_allocate;
    std::vector<api::ResourceClaimPtr> claims_to_allocate;
    // Set when there is something to allocate.
    std::shared_ptr<const Allocator> allocator;
    bool has_first_available = false;

    std::mutex mu;
    // Guarded by mu (Filter writes them from many threads).
    // Indices of allocated claims that some node could not use; PostFilter may deallocate one.
    std::set<size_t> unavailable;
    // Per node that passed Filter, the allocations of `claims_to_allocate`.
    std::unordered_map<std::string, std::vector<api::AllocationResult>> node_allocations;
  };

  std::shared_ptr<Shared> shared = std::make_shared<Shared>();

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<State>(*this);
  }
};

State::Shared* ReadState(const framework::CycleState& state) {
  State* s = state.Read<State>(StateKeyOf());
  return s == nullptr ? nullptr : s->shared.get();
}

Status NoState() {
  return Status::Error("error reading \"" + std::string(kName) + "\" from cycleState: not found");
}

// klog.KObj's form.
std::string Ref(const api::ObjectMeta& meta) { return meta.Key(); }

bool IsControlledBy(const api::ResourceClaim& claim, const api::Pod& pod) {
  return std::any_of(claim.meta.owner_references.begin(), claim.meta.owner_references.end(),
                     [&](const api::OwnerReference& owner) {
                       return owner.controller && owner.uid == pod.meta.uid;
                     });
}

bool IsReservedForPod(const api::ResourceClaim& claim, const api::Pod& pod) {
  return std::any_of(
      claim.status.reserved_for.begin(), claim.status.reserved_for.end(),
      [&](const api::ResourceClaimConsumerReference& ref) { return ref.uid == pod.meta.uid; });
}

bool HasFinalizer(const api::ResourceClaim& claim) {
  return std::find(claim.finalizers.begin(), claim.finalizers.end(),
                   api::kResourceClaimFinalizer) != claim.finalizers.end();
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

// Whether the allocated devices that have binding conditions are all ready. An error (upstream's
// words) when a binding failure condition is true.
std::optional<std::string> ClaimReadyForBinding(const api::ResourceClaim& claim, bool* ready) {
  *ready = false;
  if (!claim.status.allocation) return std::nullopt;
  for (const api::DeviceRequestAllocationResult& result : claim.status.allocation->results) {
    if (result.binding_conditions.empty()) continue;
    const api::AllocatedDeviceStatus* status = nullptr;
    for (const api::AllocatedDeviceStatus& device : claim.status.devices) {
      if (device.driver == result.driver && device.pool == result.pool &&
          device.device == result.device) {
        status = &device;
        break;
      }
    }
    if (status == nullptr) return std::nullopt;
    auto condition = [&](const std::string& type) -> const api::Condition* {
      for (const api::Condition& c : status->conditions) {
        if (c.type == type) return &c;
      }
      return nullptr;
    };
    for (const std::string& type : result.binding_failure_conditions) {
      const api::Condition* failed = condition(type);
      if (failed != nullptr && failed->status == "True") {
        return "device binding failed: claim=" + claim.meta.name + ", reason=" + failed->reason +
               ", message=" + json(failed->message).dump();
      }
    }
    for (const std::string& type : result.binding_conditions) {
      const api::Condition* c = condition(type);
      if (c == nullptr || c->status != "True") return std::nullopt;
    }
  }
  *ready = true;
  return std::nullopt;
}

// Whether a claim with binding conditions has waited for them longer than `timeout` since it was
// allocated.
bool ClaimBindingTimedOut(const api::ResourceClaim& claim, std::chrono::milliseconds timeout) {
  if (!claim.status.allocation || !claim.status.allocation->allocation_timestamp) return false;
  const bool has_conditions = std::any_of(
      claim.status.allocation->results.begin(), claim.status.allocation->results.end(),
      [](const api::DeviceRequestAllocationResult& r) { return !r.binding_conditions.empty(); });
  if (!has_conditions) return false;
  auto allocated = util::ParseRfc3339(*claim.status.allocation->allocation_timestamp);
  return allocated && *allocated + timeout < std::chrono::system_clock::now();
}

std::string ClaimPath(const api::ResourceClaim& claim) {
  return client::ResourceClaimsResource().Path(claim.meta.namespace_, claim.meta.name);
}

bool IsConflict(const client::ApiError& e) {
  return e.reason() == client::ErrorReason::kConflict || e.http_status() == 409;
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
      classes_(handle.SharedInformerFactory().ListerFor<api::DeviceClass>()),
      inventory_(std::make_shared<InventoryCache>(handle.SharedInformerFactory(), evaluator_)) {}

std::optional<std::string> DynamicResources::ClaimsOf(
    const api::Pod& pod, const std::function<void(const api::ResourceClaimPtr&)>& fn) const {
  for (const api::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName name;
    if (auto error = ResolvePodClaimName(pod, entry, &name)) return error;
    // The controller decided that this entry needs no claim.
    if (!name.name) continue;
    api::ResourceClaimPtr claim = tracker_->Get(pod.meta.namespace_, *name.name);
    if (claim == nullptr) {
      return "could not find ResourceClaim \"" + pod.meta.namespace_ + "/" + *name.name + "\"";
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

Status DynamicResources::PreEnqueue(const api::Pod& pod) {
  if (pod.spec.resource_claims.empty()) return {};
  if (auto error = ClaimsOf(pod, nullptr)) return Status::Unresolvable(*error);
  return {};
}

Status DynamicResources::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                   const std::vector<framework::NodeInfoPtr>&,
                                   framework::PreFilterResult*) {
  // No state is written for a pod without claims: the later extension points read its absence
  // as nothing to do, and most pods are such pods.
  if (pod.spec.resource_claims.empty()) return Status::Skip();
  auto data = std::make_shared<State>();
  State::Shared& s = *data->shared;
  if (auto error = ClaimsOf(pod, [&](const api::ResourceClaimPtr& claim) {
        s.claims.push_back(ClaimEntry{claim, std::nullopt});
      })) {
    return Status::Unresolvable(*error);
  }
  if (s.claims.empty()) return Status::Skip();

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
    if (tracker_->PendingAllocation(claim.meta.uid) != nullptr) {
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
        return Status::Unresolvable("request " + request_name + ": device class " + class_name +
                                    " does not exist");
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

  if (!s.to_allocate.empty()) {
    AllocatedState allocated;
    if (!tracker_->GatherAllocatedState(&allocated)) {
      return Status::Error("gather allocation state: consumed capacity out of range");
    }
    s.allocator = std::make_shared<const Allocator>(inventory_->Get(), std::move(allocated));
  }
  state.Write(StateKeyOf(), data);
  return {};
}

Status DynamicResources::Filter(const framework::CycleState& state, const api::Pod&,
                                const framework::NodeInfo& node_info) {
  State::Shared* s = ReadState(state);
  if (s == nullptr) return NoState();
  const api::Node& node = *node_info.node();

  std::vector<size_t> unavailable;
  for (size_t index = 0; index < s->claims.size(); index++) {
    const api::ResourceClaim& claim = *s->claims[index].claim;
    if (!claim.status.allocation) continue;
    // An allocation without a node selector is usable everywhere.
    if (claim.status.allocation->node_selector &&
        !NodeMatches(node, std::nullopt, false, claim.status.allocation->node_selector)) {
      unavailable.push_back(index);
      continue;
    }
    // Devices whose binding failed or took too long: PostFilter may free the claim for others.
    bool ready = false;
    if (ClaimReadyForBinding(claim, &ready)) {
      unavailable.push_back(index);
    } else if (!ready && ClaimBindingTimedOut(claim, args_.binding_timeout)) {
      unavailable.push_back(index);
    }
  }

  std::vector<api::AllocationResult> allocations;
  if (s->allocator != nullptr) {
    AllocateOptions options;
    if (args_.filter_timeout.count() > 0) {
      options.deadline = std::chrono::steady_clock::now() + args_.filter_timeout;
    }
    AllocateOutcome outcome = s->allocator->Allocate(node, s->claims_to_allocate, options);
    switch (outcome.kind) {
      case AllocateOutcome::Kind::kAllocated:
        break;
      case AllocateOutcome::Kind::kUnschedulable:
        return Status::Unresolvable(outcome.message);
      case AllocateOutcome::Kind::kAborted:
        // Potentially transient: an error retries with backoff rather than waiting for an event.
        return Status::Error("node " + node.Name() + ": timed out trying to allocate devices");
      case AllocateOutcome::Kind::kError:
        return Status::Error(outcome.message);
    }
    if (outcome.results.size() != s->claims_to_allocate.size()) {
      static const framework::FixedReasons kCannot{std::string(kCannotAllocateAllClaims)};
      return Status::Unresolvable(kCannot);
    }
    allocations = std::move(outcome.results);
  }

  if (unavailable.empty() && s->allocator == nullptr) return {};
  std::lock_guard lock(s->mu);
  if (!unavailable.empty()) {
    s->unavailable.insert(unavailable.begin(), unavailable.end());
    static const framework::FixedReasons kNotAvailable{"resourceclaim not available on the node"};
    return Status::Unresolvable(kNotAvailable);
  }
  s->node_allocations[node.Name()] = std::move(allocations);
  return {};
}

Status DynamicResources::PostFilter(framework::CycleState& state, const api::Pod& pod,
                                    const framework::NodeToStatus&, framework::PostFilterResult*) {
  State::Shared* s = ReadState(state);
  if (s == nullptr) return Status(framework::Code::kUnschedulable, std::vector<std::string>{});
  std::set<size_t> unavailable;
  {
    std::lock_guard lock(s->mu);
    unavailable = s->unavailable;
  }
  // Upstream picks one at random; the first is as good and repeatable.
  for (size_t index : unavailable) {
    const api::ResourceClaim& claim = *s->claims[index].claim;
    const auto& reserved = claim.status.reserved_for;
    if (!reserved.empty() && !(reserved.size() == 1 && reserved[0].uid == pod.meta.uid)) continue;
    client::Client* client = handle_.ClientSet();
    if (client == nullptr) return Status::Error("no client to deallocate ResourceClaims with");
    json patch = {
        {"metadata", {{"resourceVersion", claim.meta.resource_version}}},
        {"status", {{"allocation", nullptr}, {"reservedFor", nullptr}, {"devices", nullptr}}}};
    try {
      client->Patch(ClaimPath(claim) + "/status", patch, client::PatchType::kMerge);
    } catch (const std::exception& e) {
      return Status::Error(e.what());
    }
    log::Info("deallocated ResourceClaim that kept the pod from every node",
              {{"pod", pod.Key()}, {"resourceclaim", Ref(claim.meta)}});
    return Status::Unschedulable("deallocation of ResourceClaim completed");
  }
  return Status(framework::Code::kUnschedulable, std::vector<std::string>{});
}

Status DynamicResources::PreScore(framework::CycleState& state, const api::Pod&,
                                  std::span<const framework::NodeInfo* const>) {
  State::Shared* s = ReadState(state);
  return s != nullptr && s->has_first_available ? Status() : Status::Skip();
}

Status DynamicResources::Score(const framework::CycleState& state, const api::Pod&,
                               const framework::NodeInfo& node, int64_t* score) {
  *score = 0;
  State::Shared* s = ReadState(state);
  if (s == nullptr) return {};
  const std::vector<api::AllocationResult>* allocations = nullptr;
  {
    std::lock_guard lock(s->mu);
    auto it = s->node_allocations.find(node.name());
    if (it == s->node_allocations.end()) return {};
    allocations = &it->second;
  }
  // An earlier alternative of a firstAvailable request scores more: the first of the most
  // alternatives allowed scores that many points.
  size_t next_allocation = 0;
  for (const ClaimEntry& entry : s->claims) {
    const api::ResourceClaim& claim = *entry.claim;
    const api::AllocationResult* allocation = nullptr;
    if (claim.status.allocation) {
      allocation = &*claim.status.allocation;
    } else {
      if (next_allocation >= allocations->size()) {
        return Status::Error("number of allocations " + std::to_string(allocations->size()) +
                             " is smaller than number of claims needing allocation");
      }
      allocation = &(*allocations)[next_allocation++];
    }
    std::set<std::string_view> subrequests;
    for (const api::DeviceRequestAllocationResult& result : allocation->results) {
      if (result.request.find('/') != std::string::npos) subrequests.insert(result.request);
    }
    for (const api::DeviceRequest& request : claim.spec.requests) {
      if (request.exactly) continue;
      for (size_t i = 0; i < request.first_available.size(); i++) {
        if (subrequests.contains(request.name + "/" + request.first_available[i].name)) {
          *score += static_cast<int64_t>(api::kFirstAvailableDeviceRequestMaxSize - i);
        }
      }
    }
  }
  return {};
}

Status DynamicResources::NormalizeScore(const framework::CycleState&, const api::Pod&,
                                        framework::NodeScoreList& scores) {
  helper::DefaultNormalizeScore(framework::kMaxNodeScore, false, scores);
  return {};
}

Status DynamicResources::Reserve(framework::CycleState& state, const api::Pod&,
                                 const std::string& node) {
  State::Shared* s = ReadState(state);
  if (s == nullptr || s->to_allocate.empty()) return {};
  std::lock_guard lock(s->mu);
  auto it = s->node_allocations.find(node);
  if (it == s->node_allocations.end()) {
    // Filter passed the node, so this cannot happen.
    return Status::Error("claim allocation not found for node");
  }
  if (it->second.size() != s->to_allocate.size()) {
    return Status::Error("internal error, have " + std::to_string(it->second.size()) +
                         " allocations, want " + std::to_string(s->to_allocate.size()) + " claims");
  }
  for (size_t i = 0; i < s->to_allocate.size(); i++) {
    ClaimEntry& entry = s->claims[s->to_allocate[i]];
    entry.allocation = it->second[i];
    auto allocated = std::make_shared<api::ResourceClaim>(*entry.claim);
    if (!HasFinalizer(*allocated)) allocated->finalizers.emplace_back(api::kResourceClaimFinalizer);
    allocated->status.allocation = *entry.allocation;
    const std::string uid = allocated->meta.uid;
    tracker_->SignalPendingAllocation(uid, std::move(allocated));
  }
  return {};
}

void DynamicResources::Unreserve(framework::CycleState& state, const api::Pod& pod,
                                 const std::string&) {
  State::Shared* s = ReadState(state);
  if (s == nullptr) return;
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
  return ReadState(state) == nullptr ? Status::Skip() : Status();
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
    api::ResourceClaimPtr claim = entry.claim;
    const api::AllocationResult* allocation = entry.allocation ? &*entry.allocation : nullptr;
    const std::string what = allocation != nullptr ? "add allocation and reservation to claim "
                                                   : "add reservation to claim ";
    bool done = false;
    for (int attempt = 0; attempt < kWriteAttempts && !done; attempt++) {
      try {
        if (attempt > 0) {
          claim = std::make_shared<const api::ResourceClaim>(
              api::DecodeResourceClaim(client->Get(ClaimPath(*claim))));
        }
        if (claim->meta.deletion_timestamp) {
          return Status::Error("claim " + Ref(claim->meta) + " got deleted in the meantime");
        }
        api::AllocationResult result;
        if (allocation != nullptr) {
          if (claim->status.allocation) {
            return Status::Error("claim " + Ref(claim->meta) +
                                 " got allocated elsewhere in the meantime");
          }
          // The finalizer is metadata: it needs a write of its own before the status.
          if (!HasFinalizer(*claim)) {
            json finalizers = claim->finalizers;
            finalizers.push_back(api::kResourceClaimFinalizer);
            json patch = {{"metadata",
                           {{"resourceVersion", claim->meta.resource_version},
                            {"finalizers", std::move(finalizers)}}}};
            claim = std::make_shared<const api::ResourceClaim>(api::DecodeResourceClaim(
                client->Patch(ClaimPath(*claim), patch, client::PatchType::kMerge)));
          }
          result = *allocation;
        } else {
          if (!claim->status.allocation) {
            return Status::Error("claim " + Ref(claim->meta) +
                                 " got deallocated elsewhere in the meantime");
          }
          result = *claim->status.allocation;
        }
        json status;
        if (allocation != nullptr || !result.allocation_timestamp) {
          if (!result.allocation_timestamp) {
            result.allocation_timestamp = util::FormatRfc3339(std::chrono::system_clock::now());
          }
          status["allocation"] = allocation != nullptr
                                     ? api::EncodeAllocationResult(result)
                                     : json{{"allocationTimestamp", *result.allocation_timestamp}};
        }
        json reserved = json::array();
        for (const auto& ref : claim->status.reserved_for) {
          reserved.push_back(api::EncodeConsumerReference(ref));
        }
        api::ResourceClaimConsumerReference self;
        self.resource = "pods";
        self.name = pod.meta.name;
        self.uid = pod.meta.uid;
        reserved.push_back(api::EncodeConsumerReference(self));
        status["reservedFor"] = std::move(reserved);
        json patch = {{"metadata", {{"resourceVersion", claim->meta.resource_version}}},
                      {"status", std::move(status)}};
        auto written = std::make_shared<const api::ResourceClaim>(api::DecodeResourceClaim(
            client->Patch(ClaimPath(*claim) + "/status", patch, client::PatchType::kMerge)));
        tracker_->AssumeWritten(written);
        entry.claim = written;
        done = true;
      } catch (const client::ApiError& e) {
        if (IsConflict(e) && attempt + 1 < kWriteAttempts) continue;
        return Status::Error(what + Ref(claim->meta) + ": " + e.what());
      } catch (const std::exception& e) {
        return Status::Error(what + Ref(claim->meta) + ": " + e.what());
      }
    }
    if (allocation != nullptr) written_uids.push_back(entry.claim->meta.uid);
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
    const auto next = std::min(deadline, std::chrono::steady_clock::now() +
                                             std::chrono::milliseconds(kBindingConditionsPoll));
    while (std::chrono::steady_clock::now() < next) {
      if (handle_.Stopping()) return Status::Error("scheduler is stopping");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Error("device binding timeout: context deadline exceeded");
    }
  }
}

namespace {

QueueingHint ClaimChangeHint(const DynamicResources& plugin, const api::Pod& pod,
                             const framework::EventObjects& event);

}  // namespace

std::vector<framework::ClusterEventWithHint> DynamicResources::EventsToRegister() const {
  using framework::EventResource;
  using framework::kAdd;
  using framework::kDelete;
  using framework::kUpdate;
  const DynamicResources* self = this;
  return {
      // Devices and allocations may depend on node labels.
      {{EventResource::kNode,
        kAdd | framework::kUpdateNodeLabel | framework::kUpdateNodeAllocatable, ""},
       nullptr},
      // Allocations live in claims: any change may free devices or complete what the pod waits
      // for.
      {{EventResource::kResourceClaim, kAdd | kUpdate | kDelete, ""},
       [self](const api::Pod& pod, const framework::EventObjects& event) {
         return ClaimChangeHint(*self, pod, event);
       }},
      // The controller names the claim it made for the pod in the pod's status.
      {{EventResource::kUnscheduledPod, framework::kUpdatePodGeneratedResourceClaim, ""},
       [self](const api::Pod&, const framework::EventObjects& event) {
         if (!event.new_pod) return QueueingHint::kQueue;
         return self->ClaimsOf(*event.new_pod, nullptr) ? QueueingHint::kSkip
                                                        : QueueingHint::kQueue;
       }},
      // A pod may wait for a class to be made or changed.
      {{EventResource::kDeviceClass, kAdd | kUpdate, ""}, nullptr},
      // New or changed slices may publish devices; taint rules change what devices tolerate.
      {{EventResource::kResourceSlice, kAdd | kUpdate, ""}, nullptr},
      {{EventResource::kDeviceTaintRule, kAdd | kUpdate | kDelete, ""}, nullptr},
  };
}

namespace {

QueueingHint ClaimChangeHint(const DynamicResources& plugin, const api::Pod& pod,
                             const framework::EventObjects& event) {
  auto before = event.OldAs<api::ResourceClaim>();
  auto after = event.NewAs<api::ResourceClaim>();
  if (after == nullptr) {
    // Deleted: only an allocated claim frees devices.
    return before != nullptr && !before->status.allocation ? QueueingHint::kSkip
                                                           : QueueingHint::kQueue;
  }
  if (before != nullptr && before->status.allocation && !after->status.allocation) {
    // Deallocated: its devices may be what the pod needs.
    return QueueingHint::kQueue;
  }
  bool uses = false;
  if (plugin.ClaimsOf(pod, [&](const api::ResourceClaimPtr& claim) {
        if (claim->meta.uid == after->meta.uid) uses = true;
      })) {
    // The pod cannot use its claims yet; PreEnqueue holds it back.
    return QueueingHint::kSkip;
  }
  if (!uses) return QueueingHint::kSkip;
  if (before == nullptr) return QueueingHint::kQueue;
  // A change outside the status (a driver adding its finalizer) makes no difference.
  return before->status == after->status ? QueueingHint::kSkip : QueueingHint::kQueue;
}

}  // namespace

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  return std::make_shared<DynamicResources>(ParseArgs(args), handle);
}

}  // namespace berth::plugins::dynamicresources
