// What explain says of a pod's claims: notes on where their devices are, and a smaller count
// of devices where that would let the pod in (checked by explain with the claim so changed).

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "pkg/plugins/dynamicresources/cycle_state.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "pkg/plugins/dynamicresources/inventory.h"
#include "pkg/plugins/dynamicresources/pools.h"

namespace berth::plugins::dynamicresources {
namespace {

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
  // The claim alone, with the devices others hold, and alone on an empty cluster: what tells
  // "taken" from "not there".
  const Allocator unallocated(inventory_->Get(), AllocatedState{});
  int64_t steps_left = kMaxCountSteps;
  for (size_t index : s->to_allocate) {
    const api::ResourceClaimPtr& claim = s->claims[index].claim;
    std::vector<std::string> fits, taken, missing;
    for (const framework::NodeInfo* node : rejected) {
      const api::Node& n = *node->node();
      if (s->allocator->Allocate(n, {claim}).kind == AllocateOutcome::Kind::kAllocated) {
        fits.push_back(node->name());
      } else if (unallocated.Allocate(n, {claim}).kind == AllocateOutcome::Kind::kAllocated) {
        taken.push_back(node->name());
      } else {
        missing.push_back(node->name());
      }
    }
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
    if (!missing.empty()) {
      text += sep + nodes(missing) + (missing.size() == 1 ? " has" : " have") +
              " no devices (or too few) that match its requests, class and constraints";
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
          AllocateOutcome outcome = s->allocator->Allocate(*rejected[i]->node(), claims, options);
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
