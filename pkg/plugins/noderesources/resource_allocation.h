#ifndef BERTH_PKG_PLUGINS_NODERESOURCES_RESOURCE_ALLOCATION_H_
#define BERTH_PKG_PLUGINS_NODERESOURCES_RESOURCE_ALLOCATION_H_

// The resource-allocation scorer shared by NodeResourcesFit (LeastAllocated, MostAllocated,
// RequestedToCapacityRatio) and NodeResourcesBalancedAllocation, plus the resource-name rules and
// args helpers both plugins use. Semantics follow upstream kube-scheduler's
// noderesources/resource_allocation.go and the scoring strategy files next to it.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/requests.h"
#include "pkg/api/types.h"
#include "pkg/framework/args.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/types.h"
#include "pkg/plugins/helper/extended_resources.h"

namespace berth::plugins::dynamicresources {
class ClassDeviceCounts;
class ClassDevices;
}  // namespace berth::plugins::dynamicresources

namespace berth::plugins::noderesources {

// One resource that takes part in scoring, with its weight in the weighted average.
struct ResourceSpec {
  std::string name;
  int64_t weight = 1;

  bool operator==(const ResourceSpec&) const = default;
};

// cpu and memory with weight 1: the default for both plugins' `resources`.
std::vector<ResourceSpec> DefaultResourceSpecs();

// A point of the RequestedToCapacityRatio scoring function: utilization in [0, 100], score in
// [0, kMaxCustomPriorityScore] as configured (scaled to [0, 100] when the scorer is built).
struct UtilizationShapePoint {
  int64_t utilization = 0;
  int64_t score = 0;

  bool operator==(const UtilizationShapePoint&) const = default;
};

// Upper bound of a configured shape score (upstream config.MaxCustomPriorityScore).
inline constexpr int64_t kMaxCustomPriorityScore = 10;
// Upper bound of a shape point's utilization.
inline constexpr int64_t kMaxUtilization = 100;

// Resource-name classification (upstream's v1helper / schedutil rules), kept in helper/ so that
// DynamicResources shares it without depending on this plugin. Only IsExtendedResourceName names
// may be ignored by NodeResourcesFit args.
using helper::IsDraExtendedResourceName;
using helper::IsExtendedResourceName;
using helper::IsQualifiedName;
using helper::IsScalarResourceName;

// The per-resource (requested, allocated, allocatable) values of a run of nodes, each node's in
// the order of the configured resources: `requested` is the node's use with the pod added,
// `allocated` its use without the pod (only BalancedAllocation reads it; the Fit strategies score
// the use with the pod). Entries with allocatable 0 do not take part (all three are 0 there).
class NodeResourceValues {
 public:
  NodeResourceValues(const int64_t* requested, const int64_t* allocated, const int64_t* allocatable,
                     size_t resources)
      : requested_(requested),
        allocated_(allocated),
        allocatable_(allocatable),
        resources_(resources) {}
  std::span<const int64_t> requested(size_t node) const {
    return {requested_ + node * resources_, resources_};
  }
  std::span<const int64_t> allocated(size_t node) const {
    return {allocated_ + node * resources_, resources_};
  }
  std::span<const int64_t> allocatable(size_t node) const {
    return {allocatable_ + node * resources_, resources_};
  }

 private:
  const int64_t* requested_;
  const int64_t* allocated_;
  const int64_t* allocatable_;
  size_t resources_;
};

// Maps each node's values to its score in [0, kMaxNodeScore], into scores[n].score for the n-th
// node of `values`. It takes a run of nodes, not one, so that the per-node function is inlined
// into the loop: called once per node, the call itself was a visible share of scoring.
using ResourceScorer =
    std::function<void(const NodeResourceValues& values, std::span<framework::NodeScore> scores)>;

// Per-resource scores are computed exactly for any int64 amounts (no intermediate overflows)
// and are in [0, kMaxNodeScore]; for valid amounts they equal upstream's int64 arithmetic.
//
// ((capacity - requested) * 100) / capacity; 0 when requested exceeds capacity.
int64_t LeastRequestedScore(int64_t requested, int64_t capacity);
// (requested * 100) / capacity with requested capped at capacity (non-zero defaults can push the
// requested sum above capacity).
int64_t MostRequestedScore(int64_t requested, int64_t capacity);
// requested * kMaxUtilization / capacity, truncated, in [0, kMaxUtilization]; kMaxUtilization
// when requested exceeds capacity or capacity is 0. Takes sums of int64 amounts (a storage class's
// volumes) as well.
int64_t RequestedPercent(api::WideInt requested, api::WideInt capacity);
// The piecewise-linear function through `shape` (sorted by utilization) evaluated at `p`,
// constant beyond the first and last points, with integer interpolation.
int64_t BrokenLinearFunction(const std::vector<UtilizationShapePoint>& shape, int64_t p);

// Weighted integer average of the per-resource scores.
ResourceScorer LeastAllocatedScorer(std::vector<ResourceSpec> resources);
ResourceScorer MostAllocatedScorer(std::vector<ResourceSpec> resources);
// `shape` scores are in [0, kMaxCustomPriorityScore]; they are scaled by
// kMaxNodeScore / kMaxCustomPriorityScore. Resources scoring 0 are left out of the weighted
// average, which is rounded half away from zero (upstream behaviour).
ResourceScorer RequestedToCapacityRatioScorer(std::vector<ResourceSpec> resources,
                                              const std::vector<UtilizationShapePoint>& shape);
// (1 - standard deviation of the requested/allocatable fractions, each capped at 1) * 100,
// truncated: how balanced a node's use is. Weights are not used (upstream requires them to be 1).
int64_t BalancedResourceScore(std::span<const int64_t> requested,
                              std::span<const int64_t> allocatable);
// How much the pod improves the node's balance, as kube-scheduler v1.37 scores it:
// kMaxNodeScore / 2 + (kMaxNodeScore / 2 + with - without) / 2 in integers, where `with` is the
// BalancedResourceScore of `requested` (the use with the pod) and `without` that of `allocated`.
// Both are in [50, 100] for valid amounts, so the score is too: 75 for a pod that leaves the
// balance as it was. Clamped to [0, kMaxNodeScore] for invalid (negative) amounts.
int64_t BalancedAllocationScore(std::span<const int64_t> requested,
                                std::span<const int64_t> allocated,
                                std::span<const int64_t> allocatable);
// BalancedAllocationScore for each node.
ResourceScorer BalancedScorer();

// Where scoring finds the extended resources served from devices (DRAExtendedResource): the
// DeviceClasses, and the devices and allocations of the moment. Both set, or neither.
struct DeviceSources {
  std::function<std::vector<api::DeviceClassPtr>()> classes;
  std::shared_ptr<dynamicresources::ClassDevices> devices;
};

// One cycle's view of the configured resources that a DeviceClass serves and the pod requests.
// Immutable.
struct DeviceServedResources {
  // Per configured resource: the class that serves it, or null.
  std::vector<api::DeviceClassPtr> classes;
  std::shared_ptr<const dynamicresources::ClassDeviceCounts> counts;
};

// A pod's requests for the resources a scoring plugin weighs, in the order of its configured
// resources, computed once in PreScore, with the devices that serve some of them (null when none
// does). Immutable once written.
class PodRequestsState final : public framework::StateData {
 public:
  PodRequestsState(std::vector<int64_t> pod_requests,
                   std::shared_ptr<const DeviceServedResources> devices)
      : pod_requests_(std::move(pod_requests)), devices_(std::move(devices)) {}
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PodRequestsState>(*this);
  }
  const std::vector<int64_t>& pod_requests() const { return pod_requests_; }
  const DeviceServedResources* devices() const { return devices_.get(); }

 private:
  std::vector<int64_t> pod_requests_;
  std::shared_ptr<const DeviceServedResources> devices_;
};

// Turns a pod's requests and a node's use into the values a ResourceScorer consumes.
// Immutable after construction; safe to call from many threads.
class ResourceAllocationScorer {
 public:
  // `use_requested`: take cpu/memory from the plain requests (BalancedAllocation) instead of the
  // non-zero requests that count a default for containers without one (Fit strategies).
  // `devices`: kept only when a configured resource is a name a DeviceClass may serve.
  ResourceAllocationScorer(std::vector<ResourceSpec> resources, bool use_requested,
                           ResourceScorer scorer, DeviceSources devices = {});

  // The pod's request for each configured resource, in the order of resources().
  std::vector<int64_t> PodRequests(const api::Pod& pod) const;
  // True when every entry of `pod_requests` is 0 (a best-effort pod for these resources).
  static bool RequestsNothing(const std::vector<int64_t>& pod_requests);
  // The classes serving the configured resources the pod requests (`pod_requests`), with the
  // devices of the moment; null when no class serves any of them. Free when no configured
  // resource can be served by a class (the default cpu and memory).
  std::shared_ptr<const DeviceServedResources> DevicesFor(
      const std::vector<int64_t>& pod_requests) const;
  // Each node's score with the pod (whose PodRequests() are `pod_requests`) added to it, into
  // scores[i].score. A resource `devices` has a class for is, on a node that does not offer it as
  // allocatable, scored from the node's devices of that class, as kube-scheduler does: their
  // number is the allocatable, the allocated ones the use.
  void ScoreNodes(const std::vector<int64_t>& pod_requests,
                  std::span<const framework::NodeInfo* const> nodes,
                  std::span<framework::NodeScore> scores,
                  const DeviceServedResources* devices = nullptr) const;

  const std::vector<ResourceSpec>& resources() const { return resources_; }

 private:
  enum class Kind { kCpu, kMemory, kEphemeralStorage, kScalar, kOther };

  // Nodes are scored in runs of at most kRunNodes; configurations with at most kInlineResources
  // resources (every default one) from stack buffers, longer ones from per-thread vectors.
  static constexpr size_t kRunNodes = 16;
  static constexpr size_t kInlineResources = 8;

  // Fills, for every node of the run, the (requested including the pod, allocated without it,
  // allocatable) values of each resource; all 0 when the resource does not take part
  // (allocatable 0, or a scalar resource the pod does not request or the node lacks). Resource by
  // resource, so that the resource's kind is looked at once per run rather than once per node.
  void FillValues(const std::vector<int64_t>& pod_requests,
                  std::span<const framework::NodeInfo* const> nodes,
                  const DeviceServedResources* devices, int64_t* requested, int64_t* allocated,
                  int64_t* allocatable) const;

  std::vector<ResourceSpec> resources_;
  // resources_[i]'s kind, classified once: Score runs per node, and comparing names there was a
  // visible share of it.
  std::vector<Kind> kinds_;
  bool use_requested_;
  ResourceScorer scorer_;
  // The indices of resources_ a DeviceClass may serve, and where their classes and devices are;
  // empty and unset when there are none.
  std::vector<size_t> device_served_;
  DeviceSources devices_;
};

// The devices of `handle`'s scheduler when one of `resources` is a name a DeviceClass may serve
// (which starts the informers they are read from); null otherwise, so that a configuration
// scoring none (the default cpu and memory) costs nothing.
std::shared_ptr<dynamicresources::ClassDevices> DevicesToScore(
    const std::vector<ResourceSpec>& resources, framework::Handle& handle);

// Parses a `resources: [{name, weight}]` list at `path`. A missing or zero weight becomes 1
// (v1 defaulting); an empty or absent list yields DefaultResourceSpecs().
std::vector<ResourceSpec> ParseResourceSpecs(const nlohmann::json* list, const std::string& path,
                                             framework::ArgsErrors& errors);

// Parses a utilization shape (a list of {utilization, score} points) at `path` with upstream's
// checks: at least one point, utilization strictly increasing and in [0, kMaxUtilization], score in
// [0, kMaxCustomPriorityScore]. Shared by NodeResourcesFit's RequestedToCapacityRatio and
// VolumeBinding's storage capacity scoring.
std::vector<UtilizationShapePoint> ParseShapePoints(const nlohmann::json& list,
                                                    const std::string& path,
                                                    framework::ArgsErrors& errors);

}  // namespace berth::plugins::noderesources

#endif  // BERTH_PKG_PLUGINS_NODERESOURCES_RESOURCE_ALLOCATION_H_
