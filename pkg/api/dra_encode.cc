#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/dra_codec.h"
#include "pkg/api/dra_enums.h"
#include "pkg/api/dra_types.h"
#include "pkg/api/json_read.h"
#include "pkg/api/quantity.h"
#include "pkg/api/types.h"

// The encoders of dra_codec.h: what the DynamicResources plugin writes back to a claim, in the
// API's JSON, leaving out empty optional members as the apiserver does.

namespace berth::api {
namespace {

using json = nlohmann::json;
using json_read::EnumName;
using namespace dra_enums;  // NOLINT(google-build-using-namespace): the API's names.

using QuantityMap = std::map<std::string, Quantity, std::less<>>;

json EncodeRequirements(const std::vector<Requirement>& requirements) {
  json out = json::array();
  for (const Requirement& r : requirements) {
    json entry = {{"key", r.key}, {"operator", SelectorOperatorName(r.op)}};
    if (!r.values.empty()) {
      entry["values"] = r.values;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

json EncodeNodeSelector(const NodeSelector& selector) {
  json terms = json::array();
  for (const NodeSelectorTerm& term : selector.terms) {
    json t = json::object();
    if (!term.match_expressions.empty()) {
      t["matchExpressions"] = EncodeRequirements(term.match_expressions);
    }
    if (!term.match_fields.empty()) {
      t["matchFields"] = EncodeRequirements(term.match_fields);
    }
    terms.push_back(std::move(t));
  }
  return {{"nodeSelectorTerms", std::move(terms)}};
}

json EncodeToleration(const DeviceToleration& t) {
  json out = json::object();
  if (!t.key.empty()) {
    out["key"] = t.key;
  }
  out["operator"] = EnumName(kTolerationOperators, t.op);
  if (!t.value.empty()) {
    out["value"] = t.value;
  }
  if (t.effect) {
    out["effect"] = EnumName(kTaintEffects, *t.effect);
  }
  if (t.toleration_seconds) {
    out["tolerationSeconds"] = *t.toleration_seconds;
  }
  return out;
}

json EncodeQuantityMap(const QuantityMap& map) {
  json out = json::object();
  for (const auto& [name, quantity] : map) {
    out[name] = quantity.Canonical();
  }
  return out;
}

json EncodeResult(const DeviceRequestAllocationResult& r) {
  json out = {{"request", r.request}, {"driver", r.driver}, {"pool", r.pool}, {"device", r.device}};
  if (r.admin_access) {
    out["adminAccess"] = true;
  }
  if (!r.tolerations.empty()) {
    json& tolerations = out["tolerations"] = json::array();
    for (const DeviceToleration& t : r.tolerations) {
      tolerations.push_back(EncodeToleration(t));
    }
  }
  if (!r.binding_conditions.empty()) {
    out["bindingConditions"] = r.binding_conditions;
  }
  if (!r.binding_failure_conditions.empty()) {
    out["bindingFailureConditions"] = r.binding_failure_conditions;
  }
  if (r.share_id) {
    out["shareID"] = *r.share_id;
  }
  if (!r.consumed_capacity.empty()) {
    out["consumedCapacity"] = EncodeQuantityMap(r.consumed_capacity);
  }
  return out;
}

json EncodeConfig(const DeviceAllocationConfiguration& c) {
  json out = {{"source", EnumName(kConfigSources, c.from_class)}};
  if (!c.requests.empty()) {
    out["requests"] = c.requests;
  }
  json opaque = {{"driver", c.driver}};
  // parameters_json is text a decoder kept (DecodeParameters), so it parses; text that does not
  // is left out rather than sent as something the driver never wrote.
  json parameters = json::parse(c.parameters_json, nullptr, /*allow_exceptions=*/false);
  if (!parameters.is_discarded()) {
    opaque["parameters"] = std::move(parameters);
  }
  out["opaque"] = std::move(opaque);
  return out;
}

}  // namespace

json EncodeAllocationResult(const AllocationResult& allocation) {
  // devices is a struct, never left out by the apiserver; its lists are.
  json devices = json::object();
  if (!allocation.results.empty()) {
    json& results = devices["results"] = json::array();
    for (const DeviceRequestAllocationResult& r : allocation.results) {
      results.push_back(EncodeResult(r));
    }
  }
  if (!allocation.config.empty()) {
    json& config = devices["config"] = json::array();
    for (const DeviceAllocationConfiguration& c : allocation.config) {
      config.push_back(EncodeConfig(c));
    }
  }
  json out = {{"devices", std::move(devices)}};
  if (allocation.node_selector) {
    out["nodeSelector"] = EncodeNodeSelector(*allocation.node_selector);
  }
  if (allocation.allocation_timestamp) {
    out["allocationTimestamp"] = *allocation.allocation_timestamp;
  }
  return out;
}

json EncodeConsumerReference(const ResourceClaimConsumerReference& reference) {
  json out = json::object();
  if (!reference.api_group.empty()) {
    out["apiGroup"] = reference.api_group;
  }
  out["resource"] = reference.resource;
  out["name"] = reference.name;
  out["uid"] = reference.uid;
  return out;
}

}  // namespace berth::api
