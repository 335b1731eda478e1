#include "pkg/plugins/dynamicresources/claim_status.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "pkg/api/dra_codec.h"
#include "pkg/util/time.h"

namespace berth::plugins::dynamicresources {
namespace {

using json = nlohmann::json;

// Attempts of one claim's status write that lost to a concurrent change (client-go's DefaultRetry).
constexpr int kWriteAttempts = 5;

// klog.KObj's form.
std::string Ref(const api::ObjectMeta& meta) { return meta.Key(); }

bool IsConflict(const client::ApiError& e) {
  return e.reason() == client::ErrorReason::kConflict || e.http_status() == 409;
}

}  // namespace

bool IsReservedForPod(const api::ResourceClaim& claim, const api::Pod& pod) {
  return std::any_of(
      claim.status.reserved_for.begin(), claim.status.reserved_for.end(),
      [&](const api::ResourceClaimConsumerReference& ref) { return ref.uid == pod.meta.uid; });
}

bool HasFinalizer(const api::ResourceClaim& claim) {
  return std::find(claim.finalizers.begin(), claim.finalizers.end(),
                   api::kResourceClaimFinalizer) != claim.finalizers.end();
}

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

std::optional<std::string> WriteClaimForPod(client::Client& client, ClaimTracker& tracker,
                                            const api::Pod& pod,
                                            const std::optional<api::AllocationResult>& to_write,
                                            bool shares_pending, api::ResourceClaimPtr* current) {
  api::ResourceClaimPtr claim = *current;
  const api::AllocationResult* allocation = to_write ? &*to_write : nullptr;
  const std::string what = allocation != nullptr ? "add allocation and reservation to claim "
                                                 : "add reservation to claim ";
  for (int attempt = 0; attempt < kWriteAttempts; attempt++) {
    try {
      if (attempt > 0) {
        claim = std::make_shared<const api::ResourceClaim>(
            api::DecodeResourceClaim(client.Get(ClaimPath(*claim))));
      }
      if (claim->meta.deletion_timestamp) {
        return "claim " + Ref(claim->meta) + " got deleted in the meantime";
      }
      api::AllocationResult result;
      if (allocation != nullptr && claim->status.allocation && shares_pending &&
          claim->status.allocation->results == allocation->results) {
        // A member of the pod's group wrote the allocation they share: only the reservation is
        // left to add.
        allocation = nullptr;
      }
      if (allocation != nullptr) {
        if (claim->status.allocation) {
          return "claim " + Ref(claim->meta) + " got allocated elsewhere in the meantime";
        }
        // The finalizer is metadata: it needs a write of its own before the status.
        if (!HasFinalizer(*claim)) {
          json finalizers = claim->finalizers;
          finalizers.push_back(api::kResourceClaimFinalizer);
          json patch = {{"metadata",
                         {{"resourceVersion", claim->meta.resource_version},
                          {"finalizers", std::move(finalizers)}}}};
          claim = std::make_shared<const api::ResourceClaim>(api::DecodeResourceClaim(
              client.Patch(ClaimPath(*claim), patch, client::PatchType::kMerge)));
        }
        result = *allocation;
      } else {
        if (!claim->status.allocation) {
          return "claim " + Ref(claim->meta) + " got deallocated elsewhere in the meantime";
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
          client.Patch(ClaimPath(*claim) + "/status", patch, client::PatchType::kMerge)));
      tracker.AssumeWritten(written);
      *current = written;
      return std::nullopt;
    } catch (const client::ApiError& e) {
      if (IsConflict(e) && attempt + 1 < kWriteAttempts) continue;
      return what + Ref(claim->meta) + ": " + e.what();
    } catch (const std::exception& e) {
      return what + Ref(claim->meta) + ": " + e.what();
    }
  }
  // Not reached: the last attempt returns whatever happens.
  return what + Ref(claim->meta);
}

}  // namespace berth::plugins::dynamicresources
