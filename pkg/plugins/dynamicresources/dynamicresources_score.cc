// DynamicResources' PostFilter (freeing a claim that kept the pod from every node) and its
// scoring of firstAvailable alternatives.

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/log/log.h"
#include "pkg/plugins/dynamicresources/claim_status.h"
#include "pkg/plugins/dynamicresources/cycle_state.h"
#include "pkg/plugins/dynamicresources/dynamicresources.h"
#include "pkg/plugins/dynamicresources/extended_claim.h"
#include "pkg/plugins/helper/normalize_score.h"

namespace berth::plugins::dynamicresources {

using framework::Status;
using json = nlohmann::json;

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
  // The claim an earlier attempt made for the pod's extended resources goes, so that the next
  // attempt can choose devices afresh.
  if (s->existing_extended) {
    client::Client* client = handle_.ClientSet();
    if (client == nullptr) return Status::Error("no client to delete ResourceClaims with");
    if (auto error = DeleteClaim(*client, *s->existing_extended)) return Status::Error(*error);
    return Status::Unschedulable("deletion of ResourceClaim completed");
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
    const api::AllocationResult* allocation = KnownAllocation(entry);
    if (allocation == nullptr) {
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

}  // namespace berth::plugins::dynamicresources
