#include "pkg/api/dra_codec.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/dra_enums.h"
#include "pkg/api/dra_types.h"
#include "pkg/api/field_path.h"
#include "pkg/api/json_read.h"
#include "pkg/api/quantity.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using Path = FieldPath;
using namespace json_read;  // NOLINT(google-build-using-namespace): the decoders' vocabulary.

using QuantityMap = std::map<std::string, Quantity, std::less<>>;
using namespace dra_enums;  // NOLINT(google-build-using-namespace): the API's names.

[[noreturn]] void FailLimit(const Path& path, size_t count, std::string_view what, size_t limit) {
  FailAt(path, std::to_string(count) + " " + std::string(what) + ", more than the limit of " +
                   std::to_string(limit));
}

// Fails when an array member has more than `limit` entries, before any is decoded.
void CheckCount(const json& parent, const Path& field, size_t limit) {
  const json* value = Member(parent, field);
  if (value != nullptr && value->is_array() && value->size() > limit) {
    FailLimit(field, value->size(), "entries", limit);
  }
}

template <typename T, typename Decode>
void ReadBoundedArray(const json& parent, const Path& field, size_t limit, std::vector<T>* out,
                      Decode&& decode) {
  CheckCount(parent, field, limit);
  ReadArray(parent, field, out, std::forward<Decode>(decode));
}

void ReadBoundedStringList(const json& parent, const Path& field, size_t limit,
                           std::vector<std::string>* out) {
  CheckCount(parent, field, limit);
  ReadStringList(parent, field, out);
}

// A string member that must be present and non-empty.
void ReadRequiredString(const json& parent, const Path& field, std::string* out) {
  if (!ReadString(parent, field, out) || out->empty()) {
    FailAt(field, "required");
  }
}

Quantity DecodeNonNegativeQuantity(const json& value, const Path& path) {
  Quantity quantity = DecodeQuantity(value, path);
  if (quantity.Negative()) {
    FailAt(path, "must not be negative, got \"" + quantity.ToString() + "\"");
  }
  return quantity;
}

// A map of quantities ({"memory": "8Gi"}), or with `wrapped` of counters ({"memory": {"value":
// "8Gi"}}).
void ReadQuantityMap(const json& parent, const Path& field, size_t limit, bool wrapped,
                     QuantityMap* out) {
  const json* value = GetObject(parent, field);
  if (value == nullptr) {
    return;
  }
  if (value->size() > limit) {
    FailLimit(field, value->size(), "entries", limit);
  }
  for (auto it = value->begin(); it != value->end(); ++it) {
    const Path entry_path = field.Field(it.key());
    if (!wrapped) {
      out->insert_or_assign(it.key(), DecodeNonNegativeQuantity(*it, entry_path));
      continue;
    }
    ExpectObject(*it, entry_path);
    const Path value_path = entry_path.Field("value");
    const json* quantity = Member(*it, value_path);
    if (quantity == nullptr) {
      FailAt(value_path, "required");
    }
    out->insert_or_assign(it.key(), DecodeNonNegativeQuantity(*quantity, value_path));
  }
}

// Opaque driver parameters, kept as compact JSON text.
std::string DecodeParameters(const json& opaque, const Path& opaque_path) {
  const Path parameters_path = opaque_path.Field("parameters");
  const json* parameters = Member(opaque, parameters_path);
  if (parameters == nullptr) {
    FailAt(parameters_path, "required");
  }
  std::string text = parameters->dump();
  if (text.size() > kOpaqueParametersMaxLength) {
    FailLimit(parameters_path, text.size(), "bytes", kOpaqueParametersMaxLength);
  }
  return text;
}

// A DeviceConfiguration: today only `opaque` exists, so it is required.
void DecodeOpaque(const json& value, const Path& path, std::string* driver,
                  std::string* parameters_json) {
  const Path opaque_path = path.Field("opaque");
  const json* opaque = GetObject(value, opaque_path);
  if (opaque == nullptr) {
    FailAt(opaque_path, "required");
  }
  ReadRequiredString(*opaque, opaque_path.Field("driver"), driver);
  *parameters_json = DecodeParameters(*opaque, opaque_path);
}

void DecodeSelector(const json& value, const Path& path, CelDeviceSelector* out) {
  ExpectObject(value, path);
  const Path cel_path = path.Field("cel");
  const json* cel = GetObject(value, cel_path);
  if (cel == nullptr) {
    FailAt(cel_path, "required");
  }
  const Path expression_path = cel_path.Field("expression");
  ReadRequiredString(*cel, expression_path, &out->expression);
  if (out->expression.size() > kCelSelectorExpressionMaxLength) {
    FailLimit(expression_path, out->expression.size(), "bytes", kCelSelectorExpressionMaxLength);
  }
}

void ReadSelectors(const json& parent, const Path& field, std::vector<CelDeviceSelector>* out) {
  ReadBoundedArray(parent, field, kDeviceSelectorsMaxSize, out, DecodeSelector);
}

void DecodeDeviceTaint(const json& value, const Path& path, DeviceTaint* out) {
  ExpectObject(value, path);
  ReadRequiredString(value, path.Field("key"), &out->key);
  ReadString(value, path.Field("value"), &out->value);
  const Path effect_path = path.Field("effect");
  if (!ReadEnum(value, effect_path, kTaintEffects, &out->effect)) {
    FailAt(effect_path, "required");
  }
  ReadOptionalString(value, path.Field("timeAdded"), &out->time_added);
}

void DecodeDeviceToleration(const json& value, const Path& path, DeviceToleration* out) {
  ExpectObject(value, path);
  ReadString(value, path.Field("key"), &out->key);
  // An empty operator is Equal and an empty effect matches every effect, as for pod tolerations.
  const Path operator_path = path.Field("operator");
  if (const json* op = Member(value, operator_path); op != nullptr && *op != "") {
    out->op = DecodeEnum(*op, operator_path, kTolerationOperators);
  }
  ReadString(value, path.Field("value"), &out->value);
  const Path effect_path = path.Field("effect");
  if (const json* effect = Member(value, effect_path); effect != nullptr && *effect != "") {
    out->effect = DecodeEnum(*effect, effect_path, kTaintEffects);
  }
  int64_t seconds = 0;
  if (ReadInt64(value, path.Field("tolerationSeconds"), &seconds)) {
    out->toleration_seconds = seconds;
  }
}

void ReadTolerations(const json& parent, const Path& field, std::vector<DeviceToleration>* out) {
  ReadBoundedArray(parent, field, kDeviceTolerationsMaxLength, out, DecodeDeviceToleration);
}

void ReadNodeSelector(const json& parent, const Path& field, std::optional<NodeSelector>* out) {
  if (const json* value = Member(parent, field)) {
    *out = DecodeNodeSelector(*value, field.str());
  }
}

// Records the JSON paths of the members of `object` that a v1.37 alpha feature adds. An empty
// list or map is what an unset field decodes to, so it is not recorded.
class Unsupported {
 public:
  explicit Unsupported(std::vector<std::string>* out) : out_(out) {}

  // Records each of `keys` set in `object`; returns whether any was.
  bool Record(const json& object, const Path& path, std::initializer_list<std::string_view> keys) {
    bool any = false;
    for (std::string_view key : keys) {
      const Path field = path.Field(key);
      const json* value = Member(object, field);
      if (value == nullptr || ((value->is_array() || value->is_object()) && value->empty())) {
        continue;
      }
      out_->push_back(field.str());
      any = true;
    }
    return any;
  }

 private:
  std::vector<std::string>* out_;
};

// ---- ResourceSlice ----

// An attribute value; std::nullopt for a list-type value (recorded as unsupported).
std::optional<DeviceAttribute> DecodeAttribute(const json& value, const Path& path,
                                               Unsupported& unsupported) {
  ExpectObject(value, path);
  DeviceAttribute attribute;
  int set = 0;
  if (ReadInt64(value, path.Field("int"), &attribute.int_value)) {
    attribute.kind = DeviceAttribute::Kind::kInt;
    set++;
  }
  if (ReadBool(value, path.Field("bool"), &attribute.bool_value)) {
    attribute.kind = DeviceAttribute::Kind::kBool;
    set++;
  }
  for (const auto& [key, kind] : {std::pair{"string", DeviceAttribute::Kind::kString},
                                  std::pair{"version", DeviceAttribute::Kind::kVersion}}) {
    const Path field = path.Field(key);
    std::string text;
    if (!ReadString(value, field, &text)) {
      continue;
    }
    if (text.size() > kDeviceAttributeMaxValueLength) {
      FailLimit(field, text.size(), "bytes", kDeviceAttributeMaxValueLength);
    }
    attribute.kind = kind;
    attribute.string_value = std::move(text);
    set++;
  }
  const bool list = unsupported.Record(value, path, {"ints", "bools", "strings", "versions"});
  if (list) {
    set++;
  }
  if (set != 1) {
    FailAt(path, set == 0
                     ? "an attribute needs one value: int, bool, string or version"
                     : "an attribute holds exactly one value, this one has " + std::to_string(set));
  }
  if (list) {
    return std::nullopt;
  }
  return attribute;
}

void DecodeCapacity(const json& value, const Path& path, DeviceCapacity* out) {
  ExpectObject(value, path);
  const Path value_path = path.Field("value");
  const json* quantity = Member(value, value_path);
  if (quantity == nullptr) {
    FailAt(value_path, "required");
  }
  out->value = DecodeNonNegativeQuantity(*quantity, value_path);
  const Path policy_path = path.Field("requestPolicy");
  const json* policy = GetObject(value, policy_path);
  if (policy == nullptr) {
    return;
  }
  CapacityRequestPolicy& p = out->request_policy.emplace();
  const Path default_path = policy_path.Field("default");
  if (const json* d = Member(*policy, default_path)) {
    p.default_value = DecodeNonNegativeQuantity(*d, default_path);
  }
  ReadBoundedArray(
      *policy, policy_path.Field("validValues"), kCapacityRequestPolicyDiscreteMaxOptions,
      &p.valid_values,
      [](const json& e, const Path& ep, Quantity* q) { *q = DecodeNonNegativeQuantity(e, ep); });
  const Path range_path = policy_path.Field("validRange");
  if (const json* range = GetObject(*policy, range_path)) {
    if (!p.valid_values.empty()) {
      FailAt(range_path, "only one of validValues and validRange may be set");
    }
    CapacityRequestPolicyRange& r = p.valid_range.emplace();
    const Path min_path = range_path.Field("min");
    const json* min = Member(*range, min_path);
    if (min == nullptr) {
      FailAt(min_path, "required");
    }
    r.min = DecodeNonNegativeQuantity(*min, min_path);
    const Path max_path = range_path.Field("max");
    if (const json* max = Member(*range, max_path)) {
      r.max = DecodeNonNegativeQuantity(*max, max_path);
    }
    const Path step_path = range_path.Field("step");
    if (const json* step = Member(*range, step_path)) {
      r.step = DecodeNonNegativeQuantity(*step, step_path);
    }
  }
}

// Where a device or a slice says its devices are reachable from; at most one is set.
struct NodeSelection {
  std::optional<std::string>* node_name;
  std::optional<NodeSelector>* node_selector;
  bool* all_nodes;
};

// Reads nodeName, nodeSelector and allNodes; returns how many are set.
int ReadNodeSelection(const json& value, const Path& path, const NodeSelection& out) {
  int set = 0;
  ReadOptionalString(value, path.Field("nodeName"), out.node_name);
  set += out.node_name->has_value() ? 1 : 0;
  ReadNodeSelector(value, path.Field("nodeSelector"), out.node_selector);
  set += out.node_selector->has_value() ? 1 : 0;
  ReadBool(value, path.Field("allNodes"), out.all_nodes);
  set += *out.all_nodes ? 1 : 0;
  return set;
}

void DecodeDevice(const json& value, const Path& path, bool per_device_node_selection,
                  Unsupported& unsupported, Device* out) {
  ExpectObject(value, path);
  ReadRequiredString(value, path.Field("name"), &out->name);

  const Path attributes_path = path.Field("attributes");
  const Path capacity_path = path.Field("capacity");
  const json* attributes = GetObject(value, attributes_path);
  const json* capacity = GetObject(value, capacity_path);
  const size_t entries = (attributes != nullptr ? attributes->size() : 0) +
                         (capacity != nullptr ? capacity->size() : 0);
  if (entries > kResourceSliceMaxAttributesAndCapacitiesPerDevice) {
    FailLimit(path, entries, "attributes and capacities",
              kResourceSliceMaxAttributesAndCapacitiesPerDevice);
  }
  if (attributes != nullptr) {
    for (auto it = attributes->begin(); it != attributes->end(); ++it) {
      const Path attribute_path = attributes_path.Field(it.key());
      if (std::optional<DeviceAttribute> a = DecodeAttribute(*it, attribute_path, unsupported)) {
        out->attributes.insert_or_assign(it.key(), std::move(*a));
      }
    }
  }
  if (capacity != nullptr) {
    for (auto it = capacity->begin(); it != capacity->end(); ++it) {
      const Path entry_path = capacity_path.Field(it.key());
      DecodeCapacity(*it, entry_path, &out->capacity[it.key()]);
    }
  }

  ReadBoundedArray(value, path.Field("consumesCounters"),
                   kResourceSliceMaxDeviceCounterConsumptionsPerDevice, &out->consumes_counters,
                   [&unsupported](const json& e, const Path& p, DeviceCounterConsumption* c) {
                     ExpectObject(e, p);
                     ReadRequiredString(e, p.Field("counterSet"), &c->counter_set);
                     ReadQuantityMap(e, p.Field("counters"),
                                     kResourceSliceMaxCountersPerDeviceCounterConsumption,
                                     /*wrapped=*/true, &c->counters);
                     unsupported.Record(e, p, {"compatibilityGroups"});
                   });

  const int selections = ReadNodeSelection(
      value, path, NodeSelection{&out->node_name, &out->node_selector, &out->all_nodes});
  if (selections > 1) {
    FailAt(path, "at most one of nodeName, nodeSelector and allNodes may be set");
  }
  if (selections > 0 && !per_device_node_selection) {
    FailAt(path, "nodeName, nodeSelector and allNodes need spec.perDeviceNodeSelection");
  }
  if (selections == 0 && per_device_node_selection) {
    FailAt(path, "spec.perDeviceNodeSelection needs one of nodeName, nodeSelector and allNodes");
  }

  ReadBoundedArray(value, path.Field("taints"), kDeviceTaintsMaxLength, &out->taints,
                   DecodeDeviceTaint);
  ReadBool(value, path.Field("bindsToNode"), &out->binds_to_node);
  ReadBoundedStringList(value, path.Field("bindingConditions"), kBindingConditionsMaxSize,
                        &out->binding_conditions);
  ReadBoundedStringList(value, path.Field("bindingFailureConditions"),
                        kBindingFailureConditionsMaxSize, &out->binding_failure_conditions);
  ReadBool(value, path.Field("allowMultipleAllocations"), &out->allow_multiple_allocations);
  unsupported.Record(value, path, {"nodeAllocatableResources"});
}

void DecodeSliceSpec(const json& spec, const Path& path, Unsupported& unsupported,
                     ResourceSliceSpec* out) {
  ReadRequiredString(spec, path.Field("driver"), &out->driver);
  const Path pool_path = path.Field("pool");
  const json* pool = GetObject(spec, pool_path);
  if (pool == nullptr) {
    FailAt(pool_path, "required");
  }
  ReadRequiredString(*pool, pool_path.Field("name"), &out->pool.name);
  ReadInt64(*pool, pool_path.Field("generation"), &out->pool.generation);
  ReadInt64(*pool, pool_path.Field("resourceSliceCount"), &out->pool.resource_slice_count);

  int selections = ReadNodeSelection(
      spec, path, NodeSelection{&out->node_name, &out->node_selector, &out->all_nodes});
  ReadBool(spec, path.Field("perDeviceNodeSelection"), &out->per_device_node_selection);
  selections += out->per_device_node_selection ? 1 : 0;
  if (selections > 1) {
    FailAt(path,
           "at most one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection may be set");
  }

  const Path devices_path = path.Field("devices");
  ReadBoundedArray(spec, devices_path, kResourceSliceMaxDevices, &out->devices,
                   [&](const json& e, const Path& p, Device* d) {
                     DecodeDevice(e, p, out->per_device_node_selection, unsupported, d);
                   });
  if (out->devices.size() > kResourceSliceMaxDevicesWithAdvancedFeatures) {
    for (const Device& device : out->devices) {
      if (!device.taints.empty() || !device.consumes_counters.empty()) {
        FailAt(devices_path, std::to_string(out->devices.size()) +
                                 " devices, more than the limit of " +
                                 std::to_string(kResourceSliceMaxDevicesWithAdvancedFeatures) +
                                 " when a device has taints or consumes counters");
      }
    }
  }
  const Path counters_path = path.Field("sharedCounters");
  ReadBoundedArray(spec, counters_path, kResourceSliceMaxCounterSets, &out->shared_counters,
                   [](const json& e, const Path& p, CounterSet* set) {
                     ExpectObject(e, p);
                     ReadRequiredString(e, p.Field("name"), &set->name);
                     ReadQuantityMap(e, p.Field("counters"), kResourceSliceMaxCountersPerCounterSet,
                                     /*wrapped=*/true, &set->counters);
                   });
  if (!out->devices.empty() && !out->shared_counters.empty()) {
    FailAt(counters_path, "a slice holds devices or sharedCounters, not both");
  }
  unsupported.Record(spec, path, {"partitionTypeAttribute", "skipNodeOperations"});
}

// ---- ResourceClaim ----

void DecodeExactRequest(const json& value, const Path& path, Unsupported& unsupported,
                        ExactDeviceRequest* out) {
  ReadRequiredString(value, path.Field("deviceClassName"), &out->device_class_name);
  ReadSelectors(value, path.Field("selectors"), &out->selectors);
  const Path mode_path = path.Field("allocationMode");
  if (const json* mode = Member(value, mode_path); mode != nullptr && *mode != "") {
    out->allocation_mode = DecodeEnum(*mode, mode_path, kAllocationModes);
  }
  const Path count_path = path.Field("count");
  int64_t count = 0;
  ReadInt64(value, count_path, &count);
  if (count < 0) {
    FailAt(count_path, "must not be negative, got " + std::to_string(count));
  }
  // The apiserver defaults an ExactCount request's unset count to one.
  out->count = count == 0 && out->allocation_mode == DeviceAllocationMode::kExactCount ? 1 : count;
  ReadBool(value, path.Field("adminAccess"), &out->admin_access);
  ReadTolerations(value, path.Field("tolerations"), &out->tolerations);
  const Path capacity_path = path.Field("capacity");
  if (const json* capacity = GetObject(value, capacity_path)) {
    ReadQuantityMap(*capacity, capacity_path.Field("requests"),
                    kResourceSliceMaxAttributesAndCapacitiesPerDevice, /*wrapped=*/false,
                    &out->capacity_requests);
  }
  unsupported.Record(value, path, {"derivedAttributes"});
}

void DecodeRequest(const json& value, const Path& path, Unsupported& unsupported,
                   DeviceRequest* out) {
  ExpectObject(value, path);
  ReadRequiredString(value, path.Field("name"), &out->name);
  const Path exactly_path = path.Field("exactly");
  if (const json* exactly = GetObject(value, exactly_path)) {
    DecodeExactRequest(*exactly, exactly_path, unsupported, &out->exactly.emplace());
  }
  ReadBoundedArray(value, path.Field("firstAvailable"), kFirstAvailableDeviceRequestMaxSize,
                   &out->first_available,
                   [&unsupported](const json& e, const Path& p, DeviceSubRequest* sub) {
                     ExpectObject(e, p);
                     ReadRequiredString(e, p.Field("name"), &sub->name);
                     DecodeExactRequest(e, p, unsupported, &sub->request);
                   });
  if (out->exactly.has_value() == !out->first_available.empty()) {
    FailAt(path, "exactly one of exactly and firstAvailable must be set");
  }
}

void DecodeClaimSpec(const json& spec, const Path& path, Unsupported& unsupported,
                     ResourceClaimSpec* out) {
  const Path devices_path = path.Field("devices");
  const json* devices = GetObject(spec, devices_path);
  if (devices == nullptr) {
    return;
  }
  ReadBoundedArray(*devices, devices_path.Field("requests"), kDeviceRequestsMaxSize, &out->requests,
                   [&unsupported](const json& e, const Path& p, DeviceRequest* r) {
                     DecodeRequest(e, p, unsupported, r);
                   });
  ReadBoundedArray(*devices, devices_path.Field("constraints"), kDeviceConstraintsMaxSize,
                   &out->constraints, [](const json& e, const Path& p, DeviceConstraint* c) {
                     ExpectObject(e, p);
                     ReadBoundedStringList(e, p.Field("requests"), kDeviceRequestNamesMaxSize,
                                           &c->requests);
                     ReadOptionalString(e, p.Field("matchAttribute"), &c->match_attribute);
                     ReadOptionalString(e, p.Field("distinctAttribute"), &c->distinct_attribute);
                   });
  ReadBoundedArray(*devices, devices_path.Field("config"), kDeviceConfigMaxSize, &out->config,
                   [](const json& e, const Path& p, DeviceClaimConfiguration* c) {
                     ExpectObject(e, p);
                     ReadBoundedStringList(e, p.Field("requests"), kDeviceRequestNamesMaxSize,
                                           &c->requests);
                     DecodeOpaque(e, p, &c->driver, &c->parameters_json);
                   });
}

void DecodeAllocationResult(const json& value, const Path& path, Unsupported& unsupported,
                            AllocationResult* out) {
  ExpectObject(value, path);
  const Path devices_path = path.Field("devices");
  if (const json* devices = GetObject(value, devices_path)) {
    ReadBoundedArray(
        *devices, devices_path.Field("results"), kAllocationResultsMaxSize, &out->results,
        [&unsupported](const json& e, const Path& p, DeviceRequestAllocationResult* r) {
          ExpectObject(e, p);
          ReadRequiredString(e, p.Field("request"), &r->request);
          ReadRequiredString(e, p.Field("driver"), &r->driver);
          ReadRequiredString(e, p.Field("pool"), &r->pool);
          ReadRequiredString(e, p.Field("device"), &r->device);
          ReadBool(e, p.Field("adminAccess"), &r->admin_access);
          ReadTolerations(e, p.Field("tolerations"), &r->tolerations);
          ReadBoundedStringList(e, p.Field("bindingConditions"), kBindingConditionsMaxSize,
                                &r->binding_conditions);
          ReadBoundedStringList(e, p.Field("bindingFailureConditions"),
                                kBindingFailureConditionsMaxSize, &r->binding_failure_conditions);
          ReadOptionalString(e, p.Field("shareID"), &r->share_id);
          ReadQuantityMap(e, p.Field("consumedCapacity"),
                          kResourceSliceMaxAttributesAndCapacitiesPerDevice, /*wrapped=*/false,
                          &r->consumed_capacity);
          unsupported.Record(e, p, {"skipNodeOperations"});
        });
    ReadBoundedArray(*devices, devices_path.Field("config"), kAllocationConfigMaxSize, &out->config,
                     [](const json& e, const Path& p, DeviceAllocationConfiguration* c) {
                       ExpectObject(e, p);
                       const Path source_path = p.Field("source");
                       if (!ReadEnum(e, source_path, kConfigSources, &c->from_class)) {
                         FailAt(source_path, "required");
                       }
                       ReadBoundedStringList(e, p.Field("requests"), kDeviceRequestNamesMaxSize,
                                             &c->requests);
                       DecodeOpaque(e, p, &c->driver, &c->parameters_json);
                     });
  }
  ReadNodeSelector(value, path.Field("nodeSelector"), &out->node_selector);
  ReadOptionalString(value, path.Field("allocationTimestamp"), &out->allocation_timestamp);
}

void DecodeClaimStatus(const json& status, const Path& path, Unsupported& unsupported,
                       ResourceClaimStatus* out) {
  const Path allocation_path = path.Field("allocation");
  if (const json* allocation = Member(status, allocation_path)) {
    DecodeAllocationResult(*allocation, allocation_path, unsupported, &out->allocation.emplace());
  }
  ReadBoundedArray(status, path.Field("reservedFor"), kResourceClaimReservedForMaxSize,
                   &out->reserved_for,
                   [](const json& e, const Path& p, ResourceClaimConsumerReference* r) {
                     ExpectObject(e, p);
                     ReadString(e, p.Field("apiGroup"), &r->api_group);
                     ReadRequiredString(e, p.Field("resource"), &r->resource);
                     ReadRequiredString(e, p.Field("name"), &r->name);
                     ReadRequiredString(e, p.Field("uid"), &r->uid);
                   });
  ReadBoundedArray(status, path.Field("devices"), kAllocatedDeviceStatusMaxSize, &out->devices,
                   [](const json& e, const Path& p, AllocatedDeviceStatus* d) {
                     ExpectObject(e, p);
                     ReadString(e, p.Field("driver"), &d->driver);
                     ReadString(e, p.Field("pool"), &d->pool);
                     ReadString(e, p.Field("device"), &d->device);
                     ReadOptionalString(e, p.Field("shareID"), &d->share_id);
                     ReadBoundedArray(e, p.Field("conditions"), kAllocatedDeviceStatusMaxConditions,
                                      &d->conditions,
                                      [](const json& ce, const Path& cp, Condition* c) {
                                        *c = DecodeCondition(ce, cp.str());
                                      });
                   });
}

}  // namespace

ResourceSlice DecodeResourceSlice(const json& object) {
  const Path root("");
  ResourceSlice slice;
  slice.meta = DecodeObjectMeta(object);
  Unsupported unsupported(&slice.unsupported_fields);
  const Path spec_path = root.Field("spec");
  const json* spec = GetObject(object, spec_path);
  if (spec == nullptr) {
    FailAt(spec_path, "required");
  }
  DecodeSliceSpec(*spec, spec_path, unsupported, &slice.spec);
  return slice;
}

DeviceClass DecodeDeviceClass(const json& object) {
  const Path root("");
  DeviceClass device_class;
  device_class.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    ReadSelectors(*spec, spec_path.Field("selectors"), &device_class.selectors);
    ReadBoundedArray(*spec, spec_path.Field("config"), kDeviceConfigMaxSize, &device_class.config,
                     [](const json& e, const Path& p, DeviceClassConfiguration* c) {
                       ExpectObject(e, p);
                       DecodeOpaque(e, p, &c->driver, &c->parameters_json);
                     });
    ReadOptionalString(*spec, spec_path.Field("extendedResourceName"),
                       &device_class.extended_resource_name);
  }
  return device_class;
}

ResourceClaim DecodeResourceClaim(const json& object) {
  const Path root("");
  ResourceClaim claim;
  claim.meta = DecodeObjectMeta(object);
  Unsupported unsupported(&claim.unsupported_fields);
  const Path meta_path = root.Field("metadata");
  // DecodeObjectMeta has checked that metadata is an object.
  ReadStringList(*GetObject(object, meta_path), meta_path.Field("finalizers"), &claim.finalizers);
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    DecodeClaimSpec(*spec, spec_path, unsupported, &claim.spec);
  }
  const Path status_path = root.Field("status");
  if (const json* status = GetObject(object, status_path)) {
    DecodeClaimStatus(*status, status_path, unsupported, &claim.status);
  }
  return claim;
}

ResourceClaimTemplate DecodeResourceClaimTemplate(const json& object) {
  const Path root("");
  ResourceClaimTemplate claim_template;
  claim_template.meta = DecodeObjectMeta(object);
  Unsupported unsupported(&claim_template.unsupported_fields);
  // spec.metadata is what the resourceclaim controller copies onto the claims it makes; the
  // scheduler reads the claims themselves.
  const Path spec_path = root.Field("spec");
  if (const json* spec = GetObject(object, spec_path)) {
    const Path claim_spec_path = spec_path.Field("spec");
    if (const json* claim_spec = GetObject(*spec, claim_spec_path)) {
      DecodeClaimSpec(*claim_spec, claim_spec_path, unsupported, &claim_template.spec);
    }
  }
  return claim_template;
}

DeviceTaintRule DecodeDeviceTaintRule(const json& object) {
  const Path root("");
  DeviceTaintRule rule;
  rule.meta = DecodeObjectMeta(object);
  const Path spec_path = root.Field("spec");
  const json* spec = GetObject(object, spec_path);
  if (spec == nullptr) {
    FailAt(spec_path, "required");
  }
  const Path selector_path = spec_path.Field("deviceSelector");
  if (const json* selector = GetObject(*spec, selector_path)) {
    DeviceTaintSelector& s = rule.device_selector.emplace();
    ReadOptionalString(*selector, selector_path.Field("driver"), &s.driver);
    ReadOptionalString(*selector, selector_path.Field("pool"), &s.pool);
    ReadOptionalString(*selector, selector_path.Field("device"), &s.device);
  }
  const Path taint_path = spec_path.Field("taint");
  const json* taint = GetObject(*spec, taint_path);
  if (taint == nullptr) {
    FailAt(taint_path, "required");
  }
  DecodeDeviceTaint(*taint, taint_path, &rule.taint);
  return rule;
}

}  // namespace berth::api
