#include "pkg/plugins/noderesources/resource_allocation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "pkg/api/dra_types.h"
#include "pkg/api/requests.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/dynamicresources/class_devices.h"

namespace berth::plugins::noderesources {
namespace {

// The scalar entry for `name`, or null when the list has none. Only `scalar` is searched, so
// "pods" and other first-class fields never match (upstream's ScalarResources map).
const int64_t* FindScalar(const api::ResourceList& list, std::string_view name) {
  auto it = std::lower_bound(list.scalar.begin(), list.scalar.end(), name,
                             [](const auto& entry, std::string_view n) { return entry.first < n; });
  if (it == list.scalar.end() || it->first != name) {
    return nullptr;
  }
  return &it->second;
}

// A per-resource score computed in 128 bits, into [0, kMaxNodeScore]: the range a score of
// valid amounts is in anyway, and the nearest score for a negative amount or capacity.
int64_t ClampScore(api::WideInt score) {
  return static_cast<int64_t>(std::clamp<api::WideInt>(score, 0, framework::kMaxNodeScore));
}

int64_t ScalarOrZero(const api::ResourceList& list, std::string_view name) {
  const int64_t* value = FindScalar(list, name);
  return value ? *value : 0;
}

// A ResourceScorer applying `node_score(requested, allocatable)` to each node of the run. A
// template, so that the per-node function is inlined into the loop over nodes.
template <typename NodeScoreFn>
ResourceScorer PerNodeScorer(NodeScoreFn node_score) {
  return [node_score = std::move(node_score)](const NodeResourceValues& values,
                                              std::span<framework::NodeScore> scores) {
    for (size_t n = 0; n < scores.size(); n++) {
      scores[n].score = node_score(values.requested(n), values.allocatable(n));
    }
  };
}

// Weighted integer average over resources with allocatable > 0, shared by Least/MostAllocated.
// The per-resource function is a template argument so that it is inlined as well.
template <int64_t (*ResourceScore)(int64_t, int64_t)>
ResourceScorer WeightedAverageScorer(std::vector<ResourceSpec> resources) {
  return PerNodeScorer([resources = std::move(resources)](std::span<const int64_t> requested,
                                                          std::span<const int64_t> allocatable) {
    int64_t node_score = 0;
    int64_t weight_sum = 0;
    for (size_t i = 0; i < requested.size(); i++) {
      if (allocatable[i] == 0) {
        continue;
      }
      node_score += ResourceScore(requested[i], allocatable[i]) * resources[i].weight;
      weight_sum += resources[i].weight;
    }
    return weight_sum == 0 ? int64_t{0} : node_score / weight_sum;
  });
}

}  // namespace

std::vector<ResourceSpec> DefaultResourceSpecs() {
  return {{std::string(api::kResourceCPU), 1}, {std::string(api::kResourceMemory), 1}};
}

int64_t LeastRequestedScore(int64_t requested, int64_t capacity) {
  if (capacity == 0 || requested > capacity) {
    return 0;
  }
  // For capacities near 2^63 the product overflows int64; MulDiv gives it exactly.
  const api::WideInt free = static_cast<api::WideInt>(capacity) - requested;
  return ClampScore(api::MulDiv(free, framework::kMaxNodeScore, capacity));
}

int64_t MostRequestedScore(int64_t requested, int64_t capacity) {
  if (capacity == 0) {
    return 0;
  }
  requested = std::min(requested, capacity);
  return ClampScore(api::MulDiv(requested, framework::kMaxNodeScore, capacity));
}

int64_t RequestedPercent(api::WideInt requested, api::WideInt capacity) {
  if (capacity == 0 || requested > capacity) {
    return kMaxUtilization;
  }
  return static_cast<int64_t>(std::clamp<api::WideInt>(
      api::MulDiv(requested, kMaxUtilization, capacity), 0, kMaxUtilization));
}

int64_t BrokenLinearFunction(const std::vector<UtilizationShapePoint>& shape, int64_t p) {
  for (size_t i = 0; i < shape.size(); i++) {
    if (p > shape[i].utilization) {
      continue;
    }
    if (i == 0) {
      return shape[0].score;
    }
    const UtilizationShapePoint& lo = shape[i - 1];
    const UtilizationShapePoint& hi = shape[i];
    return lo.score +
           (hi.score - lo.score) * (p - lo.utilization) / (hi.utilization - lo.utilization);
  }
  return shape.back().score;
}

ResourceScorer LeastAllocatedScorer(std::vector<ResourceSpec> resources) {
  return WeightedAverageScorer<&LeastRequestedScore>(std::move(resources));
}

ResourceScorer MostAllocatedScorer(std::vector<ResourceSpec> resources) {
  return WeightedAverageScorer<&MostRequestedScore>(std::move(resources));
}

ResourceScorer RequestedToCapacityRatioScorer(std::vector<ResourceSpec> resources,
                                              const std::vector<UtilizationShapePoint>& shape) {
  std::vector<UtilizationShapePoint> scaled = shape;
  for (auto& point : scaled) {
    point.score *= framework::kMaxNodeScore / kMaxCustomPriorityScore;
  }
  return PerNodeScorer(
      [resources = std::move(resources), scaled = std::move(scaled)](
          std::span<const int64_t> requested, std::span<const int64_t> allocatable) {
        int64_t node_score = 0;
        int64_t weight_sum = 0;
        for (size_t i = 0; i < requested.size(); i++) {
          if (allocatable[i] == 0) {
            continue;
          }
          // Over-committed resources score as fully utilized.
          int64_t resource_score =
              BrokenLinearFunction(scaled, RequestedPercent(requested[i], allocatable[i]));
          if (resource_score <= 0) {
            continue;
          }
          node_score += resource_score * resources[i].weight;
          weight_sum += resources[i].weight;
        }
        if (weight_sum == 0) {
          return int64_t{0};
        }
        return static_cast<int64_t>(
            std::round(static_cast<double>(node_score) / static_cast<double>(weight_sum)));
      });
}

int64_t BalancedResourceScore(std::span<const int64_t> requested,
                              std::span<const int64_t> allocatable) {
  // Runs per node; the fractions are recomputed in the second pass rather than stored, so a call
  // allocates nothing.
  auto fraction = [&](size_t i) {
    return std::min(static_cast<double>(requested[i]) / static_cast<double>(allocatable[i]), 1.0);
  };
  size_t count = 0;
  double total_fraction = 0;
  double first = 0;
  double second = 0;
  for (size_t i = 0; i < requested.size(); i++) {
    if (allocatable[i] == 0) {
      continue;
    }
    const double f = fraction(i);
    total_fraction += f;
    if (count == 0) {
      first = f;
    } else if (count == 1) {
      second = f;
    }
    count++;
  }
  // The operation order mirrors upstream so that truncation yields identical integers.
  double std_dev = 0;
  if (count == 2) {
    std_dev = std::abs((first - second) / 2);
  } else if (count > 2) {
    double mean = total_fraction / static_cast<double>(count);
    double sum = 0;
    for (size_t i = 0; i < requested.size(); i++) {
      if (allocatable[i] == 0) {
        continue;
      }
      const double f = fraction(i);
      sum = sum + (f - mean) * (f - mean);
    }
    std_dev = std::sqrt(sum / static_cast<double>(count));
  }
  // With fractions in [0, 1] the deviation is at most 0.5; a negative amount or allocatable
  // (which no validated object has) can take it anywhere. Clamped before the conversion, which
  // is undefined for a double outside the int64 range.
  const double score = (1 - std_dev) * static_cast<double>(framework::kMaxNodeScore);
  return static_cast<int64_t>(
      std::clamp(score, 0.0, static_cast<double>(framework::kMaxNodeScore)));
}

int64_t BalancedAllocationScore(std::span<const int64_t> requested,
                                std::span<const int64_t> allocated,
                                std::span<const int64_t> allocatable) {
  constexpr int64_t kHalf = framework::kMaxNodeScore / 2;
  const int64_t with_pod = BalancedResourceScore(requested, allocatable);
  const int64_t without_pod = BalancedResourceScore(allocated, allocatable);
  // The change is in [-50, 50] for valid amounts; halved (truncated toward zero, as Go's integer
  // division) and moved to [50, 100], the range of the older with-pod-only score. A negative
  // allocatable (nothing validates the status a kubelet writes) can make it up to 100 and the
  // score 125, which the framework would reject as invalid, failing the cycle: kept in range.
  return std::clamp<int64_t>(kHalf + (kHalf + with_pod - without_pod) / 2, 0,
                             framework::kMaxNodeScore);
}

ResourceScorer BalancedScorer() {
  return [](const NodeResourceValues& values, std::span<framework::NodeScore> scores) {
    for (size_t n = 0; n < scores.size(); n++) {
      scores[n].score =
          BalancedAllocationScore(values.requested(n), values.allocated(n), values.allocatable(n));
    }
  };
}

ResourceAllocationScorer::ResourceAllocationScorer(std::vector<ResourceSpec> resources,
                                                   bool use_requested, ResourceScorer scorer,
                                                   DeviceSources devices)
    : resources_(std::move(resources)), use_requested_(use_requested), scorer_(std::move(scorer)) {
  for (size_t i = 0; i < resources_.size(); i++) {
    if (IsDraExtendedResourceName(resources_[i].name)) device_served_.push_back(i);
  }
  if (!device_served_.empty() && devices.classes && devices.devices) {
    devices_ = std::move(devices);
  } else {
    device_served_.clear();
  }
  for (const auto& resource : resources_) {
    if (resource.name == api::kResourceCPU) {
      kinds_.push_back(Kind::kCpu);
    } else if (resource.name == api::kResourceMemory) {
      kinds_.push_back(Kind::kMemory);
    } else if (resource.name == api::kResourceEphemeralStorage) {
      kinds_.push_back(Kind::kEphemeralStorage);
    } else if (IsScalarResourceName(resource.name)) {
      kinds_.push_back(Kind::kScalar);
    } else {
      kinds_.push_back(Kind::kOther);
    }
  }
}

std::vector<int64_t> ResourceAllocationScorer::PodRequests(const api::Pod& pod) const {
  std::vector<int64_t> requests;
  requests.reserve(resources_.size());
  for (size_t i = 0; i < resources_.size(); i++) {
    switch (kinds_[i]) {
      case Kind::kCpu:
        requests.push_back(use_requested_ ? pod.requests.milli_cpu : pod.non_zero_milli_cpu);
        break;
      case Kind::kMemory:
        requests.push_back(use_requested_ ? pod.requests.memory : pod.non_zero_memory);
        break;
      case Kind::kEphemeralStorage:
        requests.push_back(pod.requests.ephemeral_storage);
        break;
      case Kind::kScalar:
      case Kind::kOther:
        requests.push_back(ScalarOrZero(pod.requests, resources_[i].name));
        break;
    }
  }
  return requests;
}

bool ResourceAllocationScorer::RequestsNothing(const std::vector<int64_t>& pod_requests) {
  return std::all_of(pod_requests.begin(), pod_requests.end(),
                     [](int64_t request) { return request == 0; });
}

std::shared_ptr<const DeviceServedResources> ResourceAllocationScorer::DevicesFor(
    const std::vector<int64_t>& pod_requests) const {
  std::shared_ptr<DeviceServedResources> served;
  std::vector<api::DeviceClassPtr> classes;
  for (size_t i : device_served_) {
    // A scalar resource the pod does not request is left out of the score anyway.
    if (pod_requests[i] == 0) continue;
    if (classes.empty()) classes = devices_.classes();
    api::DeviceClassPtr device_class =
        helper::DeviceClassForExtendedResource(resources_[i].name, classes);
    if (device_class == nullptr) continue;
    if (served == nullptr) {
      served = std::make_shared<DeviceServedResources>();
      served->classes.resize(resources_.size());
    }
    served->classes[i] = std::move(device_class);
  }
  // The allocations are gathered once per cycle, and only for a pod that needs them.
  if (served != nullptr) served->counts = devices_.devices->Now();
  return served;
}

void ResourceAllocationScorer::ScoreNodes(const std::vector<int64_t>& pod_requests,
                                          std::span<const framework::NodeInfo* const> nodes,
                                          std::span<framework::NodeScore> scores,
                                          const DeviceServedResources* devices) const {
  // Scoring runs for every node of every cycle: the buffers are on the stack, or per-thread
  // vectors past kInlineResources, and every element is written before it is read. scorer_ never
  // calls back into this object.
  const size_t count = resources_.size();
  std::array<int64_t, kInlineResources * kRunNodes> requested_inline;
  std::array<int64_t, kInlineResources * kRunNodes> allocated_inline;
  std::array<int64_t, kInlineResources * kRunNodes> allocatable_inline;
  int64_t* requested = requested_inline.data();
  int64_t* allocated = allocated_inline.data();
  int64_t* allocatable = allocatable_inline.data();
  if (count > kInlineResources) {
    thread_local std::vector<int64_t> requested_spill;
    thread_local std::vector<int64_t> allocated_spill;
    thread_local std::vector<int64_t> allocatable_spill;
    requested_spill.resize(count * kRunNodes);
    allocated_spill.resize(count * kRunNodes);
    allocatable_spill.resize(count * kRunNodes);
    requested = requested_spill.data();
    allocated = allocated_spill.data();
    allocatable = allocatable_spill.data();
  }
  for (size_t begin = 0; begin < nodes.size(); begin += kRunNodes) {
    const size_t run = std::min(kRunNodes, nodes.size() - begin);
    FillValues(pod_requests, nodes.subspan(begin, run), devices, requested, allocated, allocatable);
    scorer_(NodeResourceValues(requested, allocated, allocatable, count),
            scores.subspan(begin, run));
  }
}

void ResourceAllocationScorer::FillValues(const std::vector<int64_t>& pod_requests,
                                          std::span<const framework::NodeInfo* const> nodes,
                                          const DeviceServedResources* devices, int64_t* requested,
                                          int64_t* allocated, int64_t* allocatable) const {
  const size_t count = resources_.size();
  for (size_t r = 0; r < count; r++) {
    const int64_t pod_request = pod_requests[r];
    // Stores every node's values of resource r, from `values(node)` = (allocatable, used); a
    // resource the node lacks does not take part.
    auto fill = [&](auto values) {
      for (size_t n = 0; n < nodes.size(); n++) {
        const auto [alloc, used] = values(*nodes[n]);
        allocatable[n * count + r] = alloc;
        allocated[n * count + r] = alloc == 0 ? 0 : used;
        // Saturated: a sum past int64 exceeds any allocatable, and every scorer treats
        // requested >= allocatable alike.
        requested[n * count + r] =
            alloc == 0 ? 0 : api::ClampToInt64(static_cast<api::WideInt>(used) + pod_request);
      }
    };
    switch (kinds_[r]) {
      case Kind::kCpu:
        fill([&](const framework::NodeInfo& node) {
          return std::pair(node.allocatable().milli_cpu,
                           use_requested_ ? node.requested().milli_cpu : node.non_zero_milli_cpu());
        });
        continue;
      case Kind::kMemory:
        fill([&](const framework::NodeInfo& node) {
          return std::pair(node.allocatable().memory,
                           use_requested_ ? node.requested().memory : node.non_zero_memory());
        });
        continue;
      case Kind::kEphemeralStorage:
        fill([](const framework::NodeInfo& node) {
          return std::pair(node.allocatable().ephemeral_storage,
                           node.requested().ephemeral_storage);
        });
        continue;
      case Kind::kScalar:
        // A scalar resource the pod does not request is left out, so that nodes with expensive
        // extended resources are not favoured or penalised for pods that do not use them.
        if (pod_request == 0) {
          fill([](const framework::NodeInfo&) { return std::pair(int64_t{0}, int64_t{0}); });
          continue;
        }
        break;
      case Kind::kOther:
        break;
    }
    const std::string& resource = resources_[r].name;
    if (devices != nullptr && devices->classes[r] != nullptr) {
      // As kube-scheduler: a node that offers the resource as allocatable (a device plugin) is
      // scored from that; any other from its devices of the class, when it has some.
      const api::DeviceClass& device_class = *devices->classes[r];
      fill([&](const framework::NodeInfo& node) {
        const int64_t* alloc = FindScalar(node.allocatable(), resource);
        if ((alloc == nullptr || *alloc == 0) && node.node() != nullptr) {
          const dynamicresources::ClassDeviceCounts::Counts counts =
              devices->counts->Count(device_class, *node.node());
          if (counts.devices > 0) return std::pair(counts.devices, counts.allocated);
        }
        return std::pair(alloc ? *alloc : 0, ScalarOrZero(node.requested(), resource));
      });
      continue;
    }
    fill([&](const framework::NodeInfo& node) {
      const int64_t* alloc = FindScalar(node.allocatable(), resource);
      return std::pair(alloc ? *alloc : 0, ScalarOrZero(node.requested(), resource));
    });
  }
}

std::shared_ptr<dynamicresources::ClassDevices> DevicesToScore(
    const std::vector<ResourceSpec>& resources, framework::Handle& handle) {
  for (const ResourceSpec& resource : resources) {
    if (IsDraExtendedResourceName(resource.name)) {
      return dynamicresources::ClassDevices::For(handle.SharedInformerFactory());
    }
  }
  return nullptr;
}

std::vector<ResourceSpec> ParseResourceSpecs(const nlohmann::json* list, const std::string& path,
                                             framework::ArgsErrors& errors) {
  if (list == nullptr || list->is_null()) {
    return DefaultResourceSpecs();
  }
  if (!list->is_array()) {
    errors.Invalid(path, *list, "must be a list");
    return DefaultResourceSpecs();
  }
  std::vector<ResourceSpec> specs;
  for (size_t i = 0; i < list->size(); i++) {
    const nlohmann::json& entry = (*list)[i];
    const std::string entry_path = framework::IndexField(path, i);
    if (!errors.CheckObject(entry, {"name", "weight"}, entry_path)) {
      continue;
    }
    ResourceSpec spec;
    auto name = entry.find("name");
    if (name == entry.end() || !name->is_string() || name->get<std::string>().empty()) {
      errors.Required(entry_path + ".name", "must be a non-empty string");
    } else {
      spec.name = name->get<std::string>();
    }
    auto weight = entry.find("weight");
    if (weight != entry.end() && !weight->is_null()) {
      if (!weight->is_number_integer()) {
        errors.Invalid(entry_path + ".weight", *weight, "must be an integer");
      } else {
        spec.weight = weight->get<int64_t>();
      }
    }
    // v1 defaulting: an unset or zero weight means 1.
    if (spec.weight == 0) {
      spec.weight = 1;
    }
    specs.push_back(std::move(spec));
  }
  return specs.empty() ? DefaultResourceSpecs() : specs;
}

std::vector<UtilizationShapePoint> ParseShapePoints(const nlohmann::json& list,
                                                    const std::string& path,
                                                    framework::ArgsErrors& errors) {
  std::vector<UtilizationShapePoint> shape;
  if (list.is_null() || (list.is_array() && list.empty())) {
    errors.Required(path, "at least one point must be specified");
    return shape;
  }
  if (!list.is_array()) {
    errors.Invalid(path, list, "must be a list");
    return shape;
  }
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < list.size(); i++) {
    const nlohmann::json& entry = list[i];
    const std::string point_path = framework::IndexField(path, i);
    // A null point is the zero point, as kube-scheduler decodes it; skipping it instead could
    // leave a shape without points and no error.
    UtilizationShapePoint point;
    if (entry.is_null()) {
      shape.push_back(point);
      continue;
    }
    if (!errors.CheckObject(entry, {"utilization", "score"}, point_path)) {
      continue;
    }
    // Range errors come below, once the order is known, as upstream reports them.
    errors.ReadInt(entry, "utilization", point_path, kMin, kMax, "out of range",
                   &point.utilization);
    errors.ReadInt(entry, "score", point_path, kMin, kMax, "out of range", &point.score);
    shape.push_back(point);
  }
  for (size_t i = 1; i < shape.size(); i++) {
    if (shape[i - 1].utilization >= shape[i].utilization) {
      errors.Invalid(framework::IndexField(path, i) + ".utilization", shape[i].utilization,
                     "values must be sorted in increasing order");
      break;
    }
  }
  for (size_t i = 0; i < shape.size(); i++) {
    const std::string point_path = framework::IndexField(path, i);
    if (shape[i].utilization < 0 || shape[i].utilization > kMaxUtilization) {
      errors.Invalid(point_path + ".utilization", shape[i].utilization,
                     "not in valid range [0, " + std::to_string(kMaxUtilization) + "]");
    }
    if (shape[i].score < 0 || shape[i].score > kMaxCustomPriorityScore) {
      errors.Invalid(point_path + ".score", shape[i].score,
                     "not in valid range [0, " + std::to_string(kMaxCustomPriorityScore) + "]");
    }
  }
  return shape;
}

}  // namespace berth::plugins::noderesources
