// Every JSON object decoder (pkg/api/codec.h, resources_codec.h, podgroup.h,
// workload_podgroup.h) on one JSON document: the objects Berth lists and watches, and the parts of
// them other decoders share. Decoders must reject a malformed object with api::DecodeError only.
//
// Lists and watches hand decoders the object as the skipping parser (pkg/api/list_parser.h) built
// it, without the subtrees it drops; the decoders never read those, so an object must decode to
// the same value from both trees.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pkg/api/codec.h"
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
  // Unstructured keeps the whole object, skipped subtrees included, so only `full` is compared.
  Both(api::DecodeUnstructured, full, nullptr);

  // The pieces other decoders share, each given the whole document.
  const std::string field = "x";
  Both([&](const json& j) { return api::DecodeResourceList(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeLabelSelector(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeNodeSelectorTerm(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeToleration(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeTaint(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeAffinity(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeTopologySpreadConstraint(j, field); }, full, nullptr);
  Both([&](const json& j) { return api::DecodeIntOrPercent(j, field); }, full, nullptr);
}

}  // namespace berth::fuzz
