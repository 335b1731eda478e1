// Every JSON object decoder (pkg/api/codec.h, resources_codec.h, podgroup.h,
// workload_podgroup.h, dra_codec.h) on one JSON document: the objects Berth lists and watches, and
// the parts of them other decoders share. Decoders must reject a malformed object with
// api::DecodeError only.
//
// Lists and watches hand decoders the object as the skipping parser (pkg/api/list_parser.h) built
// it, without the subtrees it drops; the decoders never read those, so an object must decode to
// the same value from both trees.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/dra_codec.h"
#include "pkg/api/dra_types.h"
#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"
#include "pkg/api/podgroup.h"
#include "pkg/api/resources.h"
#include "pkg/api/resources_codec.h"
#include "pkg/api/types.h"
#include "pkg/api/workload_podgroup.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;

template <typename Decode>
auto TryDecode(const Decode& decode, const json& object)
    -> std::optional<decltype(decode(object))> {
  try {
    return decode(object);
  } catch (const api::DecodeError&) {
    return std::nullopt;
  }
}

// Decodes `full` and, when there is one, `skipped` (the same object as lists and watches see it),
// requiring the same outcome from both.
template <typename Decode>
auto Both(const Decode& decode, const json& full, const json* skipped) {
  auto value = TryDecode(decode, full);
  if (skipped != nullptr) {
    const auto again = TryDecode(decode, *skipped);
    Require(value.has_value() == again.has_value() && (!value || *value == *again),
            "an object decodes the same with the subtrees lists and watches skip");
  }
  return value;
}

// The resource.k8s.io objects hold quantities, which have no equality, so what the two trees give
// is compared through this projection: the unsupported fields, what scheduling keys on, and the
// allocation as it would be written back.
struct DraSummary {
  std::string key;
  std::vector<std::string> unsupported_fields;
  size_t items = 0;
  json allocation;

  bool operator==(const DraSummary& other) const = default;
};

template <typename T>
DraSummary Summarize(const T& object, size_t items) {
  return DraSummary{object.meta.Key(), object.unsupported_fields, items, nullptr};
}

// The limits the DRA decoders promise to enforce, and the allocation's encoding read back.
DraSummary CheckSlice(const api::ResourceSlice& slice) {
  Require(slice.spec.devices.size() <= api::kResourceSliceMaxDevices, "devices per slice bounded");
  Require(slice.spec.shared_counters.size() <= api::kResourceSliceMaxCounterSets,
          "counter sets bounded");
  for (const api::Device& device : slice.spec.devices) {
    Require(device.attributes.size() + device.capacity.size() <=
                api::kResourceSliceMaxAttributesAndCapacitiesPerDevice,
            "attributes and capacities bounded");
    Require(device.taints.size() <= api::kDeviceTaintsMaxLength, "taints bounded");
  }
  return Summarize(slice, slice.spec.devices.size());
}

void CheckClaimSpec(const api::ResourceClaimSpec& spec) {
  Require(spec.requests.size() <= api::kDeviceRequestsMaxSize, "requests bounded");
  for (const api::DeviceRequest& request : spec.requests) {
    Require(request.exactly.has_value() != !request.first_available.empty(),
            "a request is exact or a list of alternatives");
    if (request.exactly) {
      for (const api::CelDeviceSelector& s : request.exactly->selectors) {
        Require(s.expression.size() <= api::kCelSelectorExpressionMaxLength, "expressions bounded");
      }
    }
  }
}

DraSummary CheckClaim(const api::ResourceClaim& claim) {
  CheckClaimSpec(claim.spec);
  Require(claim.status.reserved_for.size() <= api::kResourceClaimReservedForMaxSize,
          "reservedFor bounded");
  DraSummary summary = Summarize(claim, claim.spec.requests.size());
  if (claim.status.allocation) {
    Require(claim.status.allocation->results.size() <= api::kAllocationResultsMaxSize,
            "results bounded");
    summary.allocation = api::EncodeAllocationResult(*claim.status.allocation);
    // What the plugin would write back reads as the same allocation.
    json again = {{"metadata", {{"name", "x"}}}, {"status", {{"allocation", summary.allocation}}}};
    try {
      const api::ResourceClaim reread = api::DecodeResourceClaim(again);
      Require(api::EncodeAllocationResult(*reread.status.allocation) == summary.allocation,
              "an encoded allocation decodes to itself");
    } catch (const api::DecodeError& e) {
      Require(false, "an encoded allocation decodes", e.what());
    }
  }
  for (const api::ResourceClaimConsumerReference& r : claim.status.reserved_for) {
    api::EncodeConsumerReference(r);
  }
  return summary;
}

// The object as a watch event carries it, or null when the skipping parser rejects the event.
std::optional<json> AsWatched(std::string_view text) {
  std::string event = R"({"type":"ADDED","object":)";
  event.append(text);
  event.push_back('}');
  try {
    api::ParsedWatchEvent parsed = api::ParseWatchEvent(event);
    if (!parsed.has_object) return std::nullopt;
    return std::move(parsed.object);
  } catch (const api::DecodeError&) {
    return std::nullopt;
  }
}

}  // namespace

void FuzzOneInput(std::string_view text) {
  json full = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (full.is_discarded()) return;
  std::optional<json> watched;
  if (full.is_object()) watched = AsWatched(text);
  const json* skipped = watched ? &*watched : nullptr;

  if (const auto pod = Both(api::DecodePod, full, skipped)) {
    Require(!pod->spec.scheduler_name.empty(), "a decoded pod has a scheduler name");
  }
  Both(api::DecodeNode, full, skipped);
  Both(api::DecodeObjectMeta, full, skipped);
  Both(api::DecodeNamespace, full, skipped);
  if (const auto pdb = Both(api::DecodePodDisruptionBudget, full, skipped)) {
    for (const auto& amount : {pdb->spec.min_available, pdb->spec.max_unavailable}) {
      if (!amount) continue;
      for (const int32_t total : {0, 1, 7, 100, INT32_MAX, INT32_MIN}) {
        amount->Scaled(total, true);
        amount->Scaled(total, false);
      }
    }
  }
  Both(api::DecodePersistentVolumeClaim, full, skipped);
  Both(api::DecodePersistentVolume, full, skipped);
  Both(api::DecodeStorageClass, full, skipped);
  Both(api::DecodeCSINode, full, skipped);
  Both(api::DecodeCSIDriver, full, skipped);
  Both(api::DecodeCSIStorageCapacity, full, skipped);
  Both(api::DecodeVolumeAttachment, full, skipped);
  Both(api::DecodeService, full, skipped);
  Both(api::DecodeReplicationController, full, skipped);
  Both(api::DecodeReplicaSet, full, skipped);
  Both(api::DecodeStatefulSet, full, skipped);
  Both(api::DecodePodGroup, full, skipped);
  Both(api::DecodeWorkloadPodGroup, full, skipped);
  Both([](const json& j) { return CheckSlice(api::DecodeResourceSlice(j)); }, full, skipped);
  Both(
      [](const json& j) {
        const api::DeviceClass c = api::DecodeDeviceClass(j);
        return Summarize(c, c.selectors.size());
      },
      full, skipped);
  Both([](const json& j) { return CheckClaim(api::DecodeResourceClaim(j)); }, full, skipped);
  Both(
      [](const json& j) {
        const api::ResourceClaimTemplate t = api::DecodeResourceClaimTemplate(j);
        CheckClaimSpec(t.spec);
        return Summarize(t, t.spec.requests.size());
      },
      full, skipped);
  Both(
      [](const json& j) {
        const api::DeviceTaintRule r = api::DecodeDeviceTaintRule(j);
        return Summarize(r, r.device_selector.has_value() ? 1 : 0);
      },
      full, skipped);
  // Unstructured keeps the whole object, skipped subtrees included, so only `full` is compared.
  Both(api::DecodeUnstructured, full, nullptr);

  // The pieces other decoders share, each given the whole document.
  const std::string field = "x";
  Both([&](const json& j) { return api::DecodeResourceList(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeLabelSelector(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeNodeSelectorTerm(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeNodeSelector(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeCondition(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeToleration(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeTaint(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeAffinity(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeTopologySpreadConstraint(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeIntOrPercent(j, field); }, full, nullptr);
}

}  // namespace berth::fuzz
