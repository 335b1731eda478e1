// What explain says of a pod's claims: notes on where their devices are, and a smaller count
// of devices where that would let the pod in (checked by explain with the claim so changed).

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/cycle_state.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {
namespace {

// The nodes without devices for a claim that are looked at for why, at most, over all claims of a
// pod; the others are only said to have none.
constexpr size_t kMaxWhyNodes = 256;
// Search steps the checks of whether a request alone fits (RequestDevices::fits_alone) may take
// together for one pod.
constexpr int64_t kMaxWhySteps = 200000;
// The rejected nodes a smaller count is searched on, at most; the check that follows covers every
// node.
constexpr size_t kMaxCountNodes = 256;
// Search steps (AllocateOptions::max_steps) all those searches of one pod may take together, so
// that a claim whose constraints make the search hard costs explain a bounded time.
constexpr int64_t kMaxCountSteps = 200000;

api::ResourceClaimPtr WithCount(const api::ResourceClaim& claim, size_t request, int64_t count) {
  auto changed = std::make_shared<api::ResourceClaim>(claim);
  changed->spec.requests[request].exactly->count = count;
  return changed;
}

// The template the pod's claim was made from; "" for a claim the pod names.
std::string TemplateOf(const api::Pod& pod, const api::ResourceClaim& claim) {
  for (const api::PodResourceClaim& entry : pod.spec.resource_claims) {
    if (!entry.resource_claim_template_name) continue;
    for (const api::PodResourceClaimStatus& status : pod.status.resource_claim_statuses) {
      if (status.name == entry.name && status.resource_claim_name == claim.meta.name) {
        return pod.meta.namespace_ + "/" + *entry.resource_claim_template_name;
      }
    }
  }
  return "";
}

// Why a node has no devices for a claim, in the order the allocator checks: the first check the
// devices of a request fall short at. kTogether: each request could have its devices alone, so
// the claim's constraints (or its requests wanting the same devices) rule the node out.
// kUnknown: the node was not looked at, or that could not be told.
enum class Shortfall {
  kClass,
  kPool,
  kSelectors,
  kCapacity,
  kTaints,
  kCounters,
  kTogether,
  kUnknown
};

struct Why {
  Shortfall shortfall = Shortfall::kUnknown;
  std::string request;  // For the shortfalls of one request.
  std::string device_class;
  bool operator==(const Why& other) const = default;
};

// The first check the request (one alternative) falls short at; unset when it could have its
// devices alone, or may (`*maybe` then set when that is not known).
std::optional<Shortfall> ShortfallOf(const RequestDevices& devices, bool* maybe) {
  if (devices.of_class < devices.wanted) {
    return devices.of_class_unusable > 0 ? Shortfall::kPool : Shortfall::kClass;
  }
  if (devices.selected < devices.wanted) return Shortfall::kSelectors;
  if (devices.with_capacity < devices.wanted) return Shortfall::kCapacity;
  if (devices.tolerated < devices.wanted) return Shortfall::kTaints;
  if (!devices.fits_alone) {
    *maybe = true;
    return std::nullopt;
  }
  if (!*devices.fits_alone) {
    return devices.draws_counters ? Shortfall::kCounters : Shortfall::kUnknown;
  }
  return std::nullopt;
}

// Why `claim` gets no devices on `node` even with none allocated: the first request that falls
// short there; of a request with subrequests, the subrequest that gets furthest.
Why WhyNoDevices(const Allocator& unallocated, const api::Node& node,
                 const api::ResourceClaim& claim, int64_t* steps_left) {
  AllocateOptions options;
  options.max_steps = std::max<int64_t>(1, *steps_left);
  int64_t steps = 0;
  const auto per_request = unallocated.DevicesPerRequest(node, claim, options, &steps);
  *steps_left -= steps;
  if (!per_request) return {};
  bool maybe = false;
  size_t at = 0;
  for (const api::DeviceRequest& request : claim.spec.requests) {
    const size_t alternatives = request.exactly ? 1 : request.first_available.size();
    std::optional<Why> furthest;
    bool short_of_all = alternatives > 0;
    for (size_t i = 0; i < alternatives && at < per_request->size(); i++, at++) {
      const RequestDevices& devices = (*per_request)[at];
      const std::optional<Shortfall> shortfall = ShortfallOf(devices, &maybe);
      if (!shortfall) {
        short_of_all = false;
      } else if (!furthest || *shortfall >= furthest->shortfall) {
        furthest = Why{*shortfall, devices.request, devices.device_class};
      }
    }
    if (short_of_all && furthest) {
      // Said alike for every request, so one group.
      return furthest->shortfall == Shortfall::kUnknown ? Why{} : *furthest;
    }
  }
  return {maybe ? Shortfall::kUnknown : Shortfall::kTogether, "", ""};
}

}  // namespace

std::vector<framework::PodChange> DynamicResources::SuggestChanges(
    const framework::CycleState& state, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected, std::span<const framework::Status* const>,
    const framework::Status*) const {
  std::vector<framework::PodChange> out;
  State::Shared* s = ReadState(state);
  if (s == nullptr || rejected.empty()) return out;
  // "a, b, c and N more".
  auto some = [](const std::vector<std::string>& names) {
    constexpr size_t kShown = 3;
    std::string text;
    for (size_t i = 0; i < names.size() && i < kShown; i++) {
      text += (i == 0 ? "" : ", ") + names[i];
    }
    if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
    return text;
  };
  auto nodes = [&](const std::vector<std::string>& names) {
    return std::to_string(names.size()) + (names.size() == 1 ? " node (" : " nodes (") +
           some(names) + ")";
  };
  for (const ClaimEntry& entry : s->claims) {
    if (const api::AllocationResult* allocation = KnownAllocation(entry)) {
      if (!allocation->node_selector) continue;
      std::vector<std::string> outside;
      for (const framework::NodeInfo* node : rejected) {
        if (!NodeMatches(*node->node(), std::nullopt, false, allocation->node_selector)) {
          outside.push_back(node->name());
        }
      }
      if (outside.empty()) continue;
      framework::PodChange note;
      note.note_only = true;
      note.description = "claim " + Ref(entry.claim->meta) +
                         " is allocated already, to devices the pod cannot use on " +
                         nodes(outside) + "; the pod can go only where they are";
      out.push_back(std::move(note));
    }
  }
  if (s->allocator == nullptr) return out;
  // What the run saw: in a gang's dry run, the devices of the members placed before this pod are
  // taken.
  framework::Status error;
  const Allocator* allocator = FilterAllocator(*ReadFullState(state), &error);
  if (allocator == nullptr) return out;
  // The claim alone, with the devices others hold, and alone on an empty cluster: what tells
  // "taken" from "not there".
  const Allocator unallocated(inventory_->Get(), AllocatedState{});
  int64_t steps_left = kMaxCountSteps;
  size_t why_nodes_left = kMaxWhyNodes;
  int64_t why_steps_left = kMaxWhySteps;
  for (size_t index : s->to_allocate) {
    const api::ResourceClaimPtr& claim = s->claims[index].claim;
    std::vector<std::string> fits, taken, missing;
    // The nodes without devices for the claim, by why, in the order of the shortfalls.
    std::vector<std::pair<Why, std::vector<std::string>>> why_missing;
    for (const framework::NodeInfo* node : rejected) {
      const api::Node& n = *node->node();
      if (allocator->Allocate(n, {claim}).kind == AllocateOutcome::Kind::kAllocated) {
        fits.push_back(node->name());
      } else if (unallocated.Allocate(n, {claim}).kind == AllocateOutcome::Kind::kAllocated) {
        taken.push_back(node->name());
      } else {
        missing.push_back(node->name());
        Why why;
        if (why_nodes_left > 0 && why_steps_left > 0) {
          why_nodes_left--;
          why = WhyNoDevices(unallocated, n, *claim, &why_steps_left);
        }
        auto group = std::find_if(why_missing.begin(), why_missing.end(),
                                  [&](const auto& entry) { return entry.first == why; });
        if (group == why_missing.end()) {
          group = why_missing.insert(why_missing.end(), {why, {}});
        }
        group->second.push_back(node->name());
      }
    }
    std::stable_sort(why_missing.begin(), why_missing.end(), [](const auto& a, const auto& b) {
      return a.first.shortfall < b.first.shortfall;
    });
    std::string text = "claim " + Ref(claim->meta) + ":";
    std::string sep = " ";
    if (!fits.empty()) {
      text += sep + nodes(fits) + " could give its devices, but the pod fails there otherwise";
      sep = "; ";
    }
    if (!taken.empty()) {
      text += sep + "on " + nodes(taken) + " the devices that match are allocated to others";
      sep = "; ";
    }
    for (const auto& [why, names] : why_missing) {
      const std::string has = names.size() == 1 ? " has" : " have";
      const std::string request = "request " + why.request;
      text += sep;
      sep = "; ";
      switch (why.shortfall) {
        case Shortfall::kClass:
          text += nodes(names) + has + " no devices (or too few) of class " + why.device_class +
                  " for " + request;
          break;
        case Shortfall::kPool:
          text += "on " + nodes(names) + " devices of class " + why.device_class + " for " +
                  request + " are in resource pools being updated or invalid";
          break;
        case Shortfall::kSelectors:
          text += "on " + nodes(names) + " the selectors of " + request +
                  " match no devices (or too few) of class " + why.device_class;
          break;
        case Shortfall::kCapacity:
          text += "on " + nodes(names) + " the devices that match " + request +
                  " have less capacity than it asks for (all, or all but too few)";
          break;
        case Shortfall::kTaints:
          text += "on " + nodes(names) + " the devices that match " + request +
                  " have taints it does not tolerate (all, or all but too few)";
          break;
        case Shortfall::kCounters:
          text += "on " + nodes(names) + " the devices that match " + request +
                  " draw on shared counters too small for as many as it asks for";
          break;
        case Shortfall::kTogether:
          text += "on " + nodes(names) +
                  " each request has devices that match, but no set of them meets the claim's "
                  "constraints (or enough for all its requests at once)";
          break;
        case Shortfall::kUnknown:
          text += nodes(names) + has +
                  " no devices (or too few) that match its requests, class and constraints";
          break;
      }
    }
    framework::PodChange note;
    note.note_only = true;
    note.description = std::move(text);
    out.push_back(std::move(note));
    if (!fits.empty() || (taken.empty() && missing.empty())) continue;

    // Fewer devices, where a request asks for more than any of these nodes can give: the most
    // that one of them can, found by bisection (a count that fits makes every smaller one fit).
    // Explain checks it by running the pod again with the claim so changed.
    for (size_t r = 0; r < claim->spec.requests.size() && steps_left > 0; r++) {
      const api::DeviceRequest& request = claim->spec.requests[r];
      if (!request.exactly ||
          request.exactly->allocation_mode != api::DeviceAllocationMode::kExactCount ||
          request.exactly->count <= 1) {
        continue;
      }
      auto fits_with = [&](int64_t count) {
        const std::vector<api::ResourceClaimPtr> claims = {WithCount(*claim, r, count)};
        for (size_t i = 0; i < rejected.size() && i < kMaxCountNodes && steps_left > 0; i++) {
          AllocateOptions options;
          options.decide_only = true;
          options.max_steps = steps_left;
          AllocateOutcome outcome = allocator->Allocate(*rejected[i]->node(), claims, options);
          steps_left -= std::max<int64_t>(1, outcome.steps);
          if (outcome.kind == AllocateOutcome::Kind::kAllocated) return true;
        }
        return false;
      };
      if (!fits_with(1)) continue;
      int64_t most = 1;
      int64_t above = request.exactly->count;
      while (above - most > 1 && steps_left > 0) {
        const int64_t middle = most + (above - most) / 2;
        (fits_with(middle) ? most : above) = middle;
      }
      if (steps_left <= 0) break;
      api::ResourceClaimPtr changed = WithCount(*claim, r, most);
      framework::PodChange change;
      change.description = "request " + request.name + " of claim " + Ref(claim->meta) +
                           ": ask for " + std::to_string(most) +
                           (most == 1 ? " device" : " devices") + " instead of " +
                           std::to_string(request.exactly->count);
      if (std::string from = TemplateOf(pod, *claim); !from.empty()) {
        change.description += " (in its template " + from + ")";
      }
      // The pod is unchanged; the claim is, for the check.
      change.apply = [](api::Pod&) {};
      change.prepare = [changed](framework::CycleState& check) {
        auto claims = std::make_shared<ChangedClaims>();
        if (const auto* before = check.Read<ChangedClaims>(ChangedClaimsKey())) *claims = *before;
        claims->claims[changed->meta.Key()] = changed;
        check.Write(ChangedClaimsKey(), std::move(claims));
      };
      out.push_back(std::move(change));
    }
  }
  return out;
}

}  // namespace berth::plugins::dynamicresources
