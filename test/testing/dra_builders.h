#ifndef BERTH_TEST_TESTING_DRA_BUILDERS_H_
#define BERTH_TEST_TESTING_DRA_BUILDERS_H_

// Builders for resource.k8s.io objects in the DynamicResources allocator's tests: short
// constructors and fluent setters, so that a test case reads like the scenario it describes.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/quantity.h"
#include "pkg/api/types.h"

namespace berth::testing::dra {

inline api::Quantity Q(const char* text) { return api::Quantity::Parse(text); }

inline api::Node MakeNode(const std::string& name, const std::string& region) {
  api::Node node;
  node.meta.name = name;
  node.meta.labels = api::Labels({{"region", region}, {"planet", "earth"}});
  return node;
}

// A node selector with one term "key In values" on labels.
inline api::NodeSelector LabelSelector(const std::string& key, std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  api::NodeSelectorTerm term;
  term.match_expressions.push_back(
      api::Requirement{key, api::SelectorOperator::kIn, std::move(values), 0});
  return api::NodeSelector{{std::move(term)}};
}

// The selector an allocation carries when a device is local to `node`.
inline api::NodeSelector LocalSelector(const std::string& node) {
  api::NodeSelectorTerm term;
  term.match_fields.push_back(
      api::Requirement{"metadata.name", api::SelectorOperator::kIn, {node}, 0});
  return api::NodeSelector{{std::move(term)}};
}

inline api::CelDeviceSelector Cel(std::string expression) {
  return api::CelDeviceSelector{std::move(expression)};
}

inline api::DeviceClassPtr Class(const std::string& name, const std::string& driver) {
  auto c = std::make_shared<api::DeviceClass>();
  c->meta.name = name;
  c->selectors.push_back(Cel("device.driver == \"" + driver + "\""));
  return c;
}

inline api::DeviceClassPtr ClassWithSelectors(const std::string& name,
                                              std::vector<std::string> expressions) {
  auto c = std::make_shared<api::DeviceClass>();
  c->meta.name = name;
  for (std::string& e : expressions) {
    c->selectors.push_back(Cel(std::move(e)));
  }
  return c;
}

inline api::DeviceClassPtr ClassWithMultiAlloc(const std::string& name, const std::string& driver,
                                               bool multiple) {
  return ClassWithSelectors(
      name, {"device.driver == \"" + driver +
             "\" && device.allowMultipleAllocations == " + (multiple ? "true" : "false")});
}

// Opaque parameters {"<attribute>":"<attribute>Value"}.
inline std::string ConfigJson(const std::string& attribute) {
  return "{\"" + attribute + "\":\"" + attribute + "Value\"}";
}

inline api::DeviceClassPtr ClassWithConfig(const std::string& name, const std::string& driver,
                                           const std::string& attribute) {
  auto c = std::make_shared<api::DeviceClass>(*Class(name, driver));
  c->config.push_back(api::DeviceClassConfiguration{driver, ConfigJson(attribute)});
  return c;
}

// ---- Requests and claims ----

struct Req {
  api::DeviceRequest request;

  Req& Selectors(std::vector<std::string> expressions) {
    for (std::string& e : expressions) {
      request.exactly->selectors.push_back(Cel(std::move(e)));
    }
    return *this;
  }
  Req& Capacity(const std::string& name, const char* amount) {
    request.exactly->capacity_requests.emplace(name, Q(amount));
    return *this;
  }
  Req& AdminAccess() {
    request.exactly->admin_access = true;
    return *this;
  }
  Req& Tolerations(std::vector<api::DeviceToleration> tolerations) {
    auto& list = request.exactly->tolerations;
    list.insert(list.end(), tolerations.begin(), tolerations.end());
    return *this;
  }
  operator api::DeviceRequest() const { return request; }  // NOLINT(google-explicit-constructor)
};

inline Req Request(const std::string& name, const std::string& device_class, int64_t count = 1) {
  Req r;
  r.request.name = name;
  r.request.exactly.emplace();
  r.request.exactly->device_class_name = device_class;
  r.request.exactly->count = count;
  return r;
}

inline Req AllRequest(const std::string& name, const std::string& device_class) {
  Req r = Request(name, device_class, 0);
  r.request.exactly->allocation_mode = api::DeviceAllocationMode::kAll;
  return r;
}

struct Sub {
  api::DeviceSubRequest sub;

  Sub& Selectors(std::vector<std::string> expressions) {
    for (std::string& e : expressions) {
      sub.request.selectors.push_back(Cel(std::move(e)));
    }
    return *this;
  }
  Sub& Capacity(const std::string& name, const char* amount) {
    sub.request.capacity_requests.emplace(name, Q(amount));
    return *this;
  }
  Sub& All() {
    sub.request.allocation_mode = api::DeviceAllocationMode::kAll;
    return *this;
  }
  Sub& Tolerations(std::vector<api::DeviceToleration> tolerations) {
    auto& list = sub.request.tolerations;
    list.insert(list.end(), tolerations.begin(), tolerations.end());
    return *this;
  }
};

inline Sub SubRequest(const std::string& name, const std::string& device_class, int64_t count) {
  Sub s;
  s.sub.name = name;
  s.sub.request.device_class_name = device_class;
  s.sub.request.count = count;
  return s;
}

inline Req FirstAvailable(const std::string& name, std::vector<Sub> subs) {
  Req r;
  r.request.name = name;
  for (Sub& s : subs) {
    r.request.first_available.push_back(std::move(s.sub));
  }
  return r;
}

inline api::DeviceConstraint MatchAttribute(const std::string& attribute,
                                            std::vector<std::string> requests = {}) {
  api::DeviceConstraint c;
  c.match_attribute = attribute;
  c.requests = std::move(requests);
  return c;
}

inline api::DeviceConstraint DistinctAttribute(const std::string& attribute,
                                               std::vector<std::string> requests = {}) {
  api::DeviceConstraint c;
  c.distinct_attribute = attribute;
  c.requests = std::move(requests);
  return c;
}

struct ClaimB {
  api::ResourceClaim claim;

  ClaimB& Requests(std::vector<api::DeviceRequest> requests) {
    claim.spec.requests = std::move(requests);
    return *this;
  }
  ClaimB& Constraints(std::vector<api::DeviceConstraint> constraints) {
    claim.spec.constraints = std::move(constraints);
    return *this;
  }
  // Adds the tolerations to every request that has `exactly`.
  ClaimB& Tolerations(const std::vector<api::DeviceToleration>& tolerations) {
    for (api::DeviceRequest& r : claim.spec.requests) {
      if (r.exactly) {
        r.exactly->tolerations.insert(r.exactly->tolerations.end(), tolerations.begin(),
                                      tolerations.end());
      }
    }
    return *this;
  }
  ClaimB& Config(std::vector<std::string> requests, const std::string& driver,
                 const std::string& attribute) {
    claim.spec.config.push_back(
        api::DeviceClaimConfiguration{std::move(requests), driver, ConfigJson(attribute)});
    return *this;
  }
  operator api::ResourceClaimPtr() const {  // NOLINT(google-explicit-constructor)
    return std::make_shared<api::ResourceClaim>(claim);
  }
};

inline ClaimB Claim(const std::string& name, std::vector<api::DeviceRequest> requests = {}) {
  ClaimB c;
  c.claim.meta.name = name;
  c.claim.spec.requests = std::move(requests);
  return c;
}

// A claim with one request for one device of the class.
inline ClaimB SimpleClaim(const std::string& name, const std::string& request,
                          const std::string& device_class) {
  return Claim(name, {Request(request, device_class, 1)});
}

// ---- Devices and slices ----

inline api::DeviceAttribute StringAttr(std::string value) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kString;
  a.string_value = std::move(value);
  return a;
}
inline api::DeviceAttribute VersionAttr(std::string value) {
  api::DeviceAttribute a = StringAttr(std::move(value));
  a.kind = api::DeviceAttribute::Kind::kVersion;
  return a;
}
inline api::DeviceAttribute IntAttr(int64_t value) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kInt;
  a.int_value = value;
  return a;
}
inline api::DeviceAttribute BoolAttr(bool value) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kBool;
  a.bool_value = value;
  return a;
}

using Counters = std::map<std::string, const char*>;

struct Dev {
  api::Device device;

  Dev& Attr(const std::string& name, api::DeviceAttribute value) {
    device.attributes[name] = std::move(value);
    return *this;
  }
  Dev& Capacity(const std::string& name, const char* value) {
    device.capacity[name].value = Q(value);
    return *this;
  }
  Dev& Taints(std::vector<api::DeviceTaint> taints) {
    device.taints.insert(device.taints.end(), taints.begin(), taints.end());
    return *this;
  }
  // Draws the counters from the counter set. With `capacity_from_counters`, the device also
  // gets one capacity per counter of the same value.
  Dev& Consumes(const std::string& counter_set, const Counters& counters,
                bool capacity_from_counters = false) {
    api::DeviceCounterConsumption c;
    c.counter_set = counter_set;
    for (const auto& [name, value] : counters) {
      c.counters.emplace(name, Q(value));
      if (capacity_from_counters) {
        device.capacity[name].value = Q(value);
      }
    }
    device.consumes_counters.push_back(std::move(c));
    return *this;
  }
  Dev& OnNode(const std::string& node) {
    device.node_name = node;
    return *this;
  }
  Dev& OnAllNodes() {
    device.all_nodes = true;
    return *this;
  }
  Dev& OnNodes(api::NodeSelector selector) {
    device.node_selector = std::move(selector);
    return *this;
  }
  Dev& BindingConditions(std::vector<std::string> conditions, std::vector<std::string> failures) {
    device.binding_conditions = std::move(conditions);
    device.binding_failure_conditions = std::move(failures);
    return *this;
  }
  Dev& BindsToNode(bool binds = true) {
    device.binds_to_node = binds;
    return *this;
  }
  Dev& MultiAlloc() {
    device.allow_multiple_allocations = true;
    return *this;
  }
  // Capacities with policy default 2, range min 2, step 2, max 4.
  Dev& RangePolicy(const std::string& name, const char* value) {
    api::DeviceCapacity& c = device.capacity[name];
    c.value = Q(value);
    c.request_policy = api::CapacityRequestPolicy{Q("2"), {}, {{Q("2"), Q("4"), Q("2")}}};
    return *this;
  }
  // Capacities with policy default 200m, range min 200m, step 100m, max 1.
  Dev& FractionalRangePolicy(const std::string& name, const char* value) {
    api::DeviceCapacity& c = device.capacity[name];
    c.value = Q(value);
    c.request_policy = api::CapacityRequestPolicy{Q("200m"), {}, {{Q("200m"), Q("1"), Q("100m")}}};
    return *this;
  }
  // Capacities with policy default `default_value` and valid values {default, extra...}.
  Dev& ValidValuesPolicy(const std::string& name, const char* value, const char* default_value,
                         const std::vector<const char*>& extra = {}) {
    api::DeviceCapacity& c = device.capacity[name];
    c.value = Q(value);
    api::CapacityRequestPolicy policy;
    policy.default_value = Q(default_value);
    policy.valid_values.push_back(Q(default_value));
    for (const char* v : extra) {
      policy.valid_values.push_back(Q(v));
    }
    c.request_policy = std::move(policy);
    return *this;
  }
  Dev& Policy(const std::string& name, const char* value, api::CapacityRequestPolicy policy) {
    api::DeviceCapacity& c = device.capacity[name];
    c.value = Q(value);
    c.request_policy = std::move(policy);
    return *this;
  }
};

inline Dev Device(const std::string& name) {
  Dev d;
  d.device.name = name;
  return d;
}

// Where a slice's devices are: a node name, all nodes, per device, or a node selector.
struct AllNodes {};
struct PerDevice {};
using Placement = std::variant<std::string, AllNodes, PerDevice, api::NodeSelector>;

struct PoolSpec {
  std::string name;
  int64_t slice_count = 1;
  int64_t generation = 1;
};

inline PoolSpec Pool(const std::string& name, int64_t slice_count = 1, int64_t generation = 1) {
  return PoolSpec{name, slice_count, generation};
}

struct SliceB {
  api::ResourceSlice slice;

  SliceB& Generation(int64_t generation) {
    slice.spec.pool.generation = generation;
    return *this;
  }
  SliceB& Unsupported(std::string field) {
    slice.unsupported_fields.push_back(std::move(field));
    return *this;
  }
  operator api::ResourceSlicePtr() const {  // NOLINT(google-explicit-constructor)
    return std::make_shared<api::ResourceSlice>(slice);
  }
};

inline SliceB SliceBase(const std::string& name, const Placement& placement, const PoolSpec& pool,
                        const std::string& driver) {
  SliceB s;
  s.slice.meta.name = name;
  s.slice.spec.driver = driver;
  s.slice.spec.pool = api::ResourcePool{pool.name, pool.generation, pool.slice_count};
  if (const auto* node = std::get_if<std::string>(&placement)) {
    s.slice.spec.node_name = *node;
  } else if (std::holds_alternative<AllNodes>(placement)) {
    s.slice.spec.all_nodes = true;
  } else if (std::holds_alternative<PerDevice>(placement)) {
    s.slice.spec.per_device_node_selection = true;
  } else {
    s.slice.spec.node_selector = std::get<api::NodeSelector>(placement);
  }
  return s;
}

inline SliceB Slice(const std::string& name, const Placement& placement, const PoolSpec& pool,
                    const std::string& driver, const std::vector<Dev>& devices) {
  SliceB s = SliceBase(name, placement, pool, driver);
  for (const Dev& d : devices) {
    s.slice.spec.devices.push_back(d.device);
  }
  return s;
}

// A slice with devices "device-0" .. "device-<count-1>".
inline SliceB SliceWithDevices(const std::string& name, const Placement& placement,
                               const PoolSpec& pool, const std::string& driver, int count) {
  std::vector<Dev> devices;
  for (int i = 0; i < count; ++i) {
    devices.push_back(Device("device-" + std::to_string(i)));
  }
  return Slice(name, placement, pool, driver, devices);
}

// A slice with the one device "device-1".
inline SliceB SliceWithOneDevice(const std::string& name, const Placement& placement,
                                 const PoolSpec& pool, const std::string& driver) {
  return Slice(name, placement, pool, driver, {Device("device-1")});
}

inline api::CounterSet CounterSet(const std::string& name, const Counters& counters) {
  api::CounterSet set;
  set.name = name;
  for (const auto& [counter, value] : counters) {
    set.counters.emplace(counter, Q(value));
  }
  return set;
}

inline SliceB SliceWithCounters(const std::string& name, const Placement& placement,
                                const PoolSpec& pool, const std::string& driver,
                                std::vector<api::CounterSet> sets) {
  SliceB s = SliceBase(name, placement, pool, driver);
  s.slice.spec.shared_counters = std::move(sets);
  return s;
}

// ---- Expected results ----

struct Result {
  api::DeviceRequestAllocationResult result;

  Result& Admin() {
    result.admin_access = true;
    return *this;
  }
  Result& Tolerations(std::vector<api::DeviceToleration> tolerations) {
    result.tolerations = std::move(tolerations);
    return *this;
  }
  Result& Binding(std::vector<std::string> conditions, std::vector<std::string> failures) {
    result.binding_conditions = std::move(conditions);
    result.binding_failure_conditions = std::move(failures);
    return *this;
  }
  // A share with the fixed test share ID and the consumed capacity.
  Result& Share(const std::map<std::string, const char*>& consumed) {
    result.share_id = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa";
    for (const auto& [name, value] : consumed) {
      result.consumed_capacity.emplace(name, Q(value));
    }
    return *this;
  }
};

inline Result DeviceResult(const std::string& request, const std::string& driver,
                           const std::string& pool, const std::string& device) {
  Result r;
  r.result.request = request;
  r.result.driver = driver;
  r.result.pool = pool;
  r.result.device = device;
  return r;
}

// Results for "device-<start>" .. "device-<start+count-1>".
inline std::vector<Result> DeviceResults(const std::string& request, const std::string& driver,
                                         const std::string& pool, int count, int start) {
  std::vector<Result> out;
  for (int i = start; i < start + count; ++i) {
    out.push_back(DeviceResult(request, driver, pool, "device-" + std::to_string(i)));
  }
  return out;
}

struct Alloc {
  std::optional<api::NodeSelector> node_selector;
  std::vector<api::DeviceRequestAllocationResult> results;
  std::vector<api::DeviceAllocationConfiguration> config;

  Alloc& Config(bool from_class, std::vector<std::string> requests, const std::string& driver,
                const std::string& attribute) {
    config.push_back(api::DeviceAllocationConfiguration{from_class, std::move(requests), driver,
                                                        ConfigJson(attribute)});
    return *this;
  }
};

inline Alloc Allocation(std::optional<api::NodeSelector> selector, std::vector<Result> results) {
  Alloc a;
  a.node_selector = std::move(selector);
  for (Result& r : results) {
    a.results.push_back(std::move(r.result));
  }
  return a;
}

inline std::vector<Result> Concat(std::vector<Result> a, const std::vector<Result>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- Comparison, insensitive to the order of results, terms, requirements and values ----

inline std::string ToString(const api::Requirement& r) {
  std::set<std::string> values(r.values.begin(), r.values.end());
  std::ostringstream out;
  out << r.key << " op" << static_cast<int>(r.op) << " {";
  for (const std::string& v : values) {
    out << v << ",";
  }
  out << "}";
  return out.str();
}

inline std::string ToString(const std::optional<api::NodeSelector>& selector) {
  if (!selector) {
    return "<none>";
  }
  std::multiset<std::string> terms;
  for (const api::NodeSelectorTerm& term : selector->terms) {
    std::multiset<std::string> fields;
    std::multiset<std::string> expressions;
    for (const auto& r : term.match_fields) {
      fields.insert(ToString(r));
    }
    for (const auto& r : term.match_expressions) {
      expressions.insert(ToString(r));
    }
    std::string t = "fields[";
    for (const auto& f : fields) {
      t += f + ";";
    }
    t += "] expressions[";
    for (const auto& e : expressions) {
      t += e + ";";
    }
    terms.insert(t + "]");
  }
  std::string out;
  for (const auto& t : terms) {
    out += "{" + t + "}";
  }
  return out;
}

inline std::string ToString(const api::DeviceRequestAllocationResult& r) {
  std::ostringstream out;
  out << r.request << " -> " << r.driver << "/" << r.pool << "/" << r.device;
  if (r.admin_access) {
    out << " admin";
  }
  for (const auto& t : r.tolerations) {
    out << " tol(" << t.key << "," << static_cast<int>(t.op) << "," << t.value << ","
        << (t.effect ? static_cast<int>(*t.effect) : -1) << ")";
  }
  for (const auto& c : r.binding_conditions) {
    out << " bc:" << c;
  }
  for (const auto& c : r.binding_failure_conditions) {
    out << " bfc:" << c;
  }
  if (r.share_id) {
    out << " share";
  }
  for (const auto& [name, q] : r.consumed_capacity) {
    out << " " << name << "=" << q.ToString();
  }
  return out.str();
}

inline std::string ToString(const api::DeviceAllocationConfiguration& c) {
  std::string out = c.from_class ? "class[" : "claim[";
  for (const auto& r : c.requests) {
    out += r + ",";
  }
  return out + "] " + c.driver + " " + c.parameters_json;
}

// A canonical text of an allocation: results sorted, share IDs reduced to "share".
inline std::string Describe(const std::optional<api::NodeSelector>& selector,
                            const std::vector<api::DeviceRequestAllocationResult>& results,
                            const std::vector<api::DeviceAllocationConfiguration>& config) {
  std::multiset<std::string> sorted;
  for (const auto& r : results) {
    sorted.insert(ToString(r));
  }
  std::string out = "selector: " + ToString(selector) + "\n";
  for (const auto& r : sorted) {
    out += "  " + r + "\n";
  }
  for (const auto& c : config) {
    out += "  config " + ToString(c) + "\n";
  }
  return out;
}

inline std::string Describe(const api::AllocationResult& a) {
  return Describe(a.node_selector, a.results, a.config);
}

inline std::string Describe(const Alloc& a) {
  return Describe(a.node_selector, a.results, a.config);
}

}  // namespace berth::testing::dra

#endif  // BERTH_TEST_TESTING_DRA_BUILDERS_H_
