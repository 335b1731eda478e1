#ifndef BERTH_PKG_PLUGINS_NODERESOURCES_FIT_H_
#define BERTH_PKG_PLUGINS_NODERESOURCES_FIT_H_

// NodeResourcesFit: filters out nodes without room for the pod's requests (cpu, memory,
// ephemeral-storage, extended/hugepages resources and the pod count) and scores nodes with the
// configured strategy (LeastAllocated, MostAllocated or RequestedToCapacityRatio), following
// upstream kube-scheduler v1.34 noderesources/fit.go.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/noderesources/resource_allocation.h"

namespace berth::plugins::noderesources {

inline constexpr std::string_view kName = "NodeResourcesFit";
// CycleState keys ("PreFilter" / "PreScore" + plugin name, as upstream).
inline constexpr std::string_view kPreFilterStateKey = "PreFilterNodeResourcesFit";
inline constexpr std::string_view kPreScoreStateKey = "PreScoreNodeResourcesFit";

inline constexpr std::string_view kErrReasonTooManyPods = "Too many pods";
inline constexpr std::string_view kErrReasonInsufficientCPU = "Insufficient cpu";
inline constexpr std::string_view kErrReasonInsufficientMemory = "Insufficient memory";
inline constexpr std::string_view kErrReasonInsufficientEphemeralStorage =
    "Insufficient ephemeral-storage";
// Scalar resources are reported as this prefix followed by the resource name.
inline constexpr std::string_view kErrReasonInsufficientPrefix = "Insufficient ";

enum class ScoringStrategyType { kLeastAllocated, kMostAllocated, kRequestedToCapacityRatio };

struct ScoringStrategy {
  ScoringStrategyType type = ScoringStrategyType::kLeastAllocated;
  std::vector<ResourceSpec> resources = DefaultResourceSpecs();
  // Only used by kRequestedToCapacityRatio; scores in [0, kMaxCustomPriorityScore].
  std::vector<UtilizationShapePoint> shape;
};

// NodeResourcesFitArgs (kubescheduler.config.k8s.io/v1) after defaulting and validation.
struct FitArgs {
  // Extended resources the filter does not check.
  std::set<std::string> ignored_resources;
  // Extended-resource groups (the part before '/') the filter does not check.
  std::set<std::string> ignored_resource_groups;
  ScoringStrategy scoring_strategy;
};

// Decodes, defaults and validates NodeResourcesFitArgs; null means all defaults. Throws
// std::invalid_argument naming the offending field, e.g.
// `scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", ...`.
FitArgs ParseFitArgs(const nlohmann::json& args);

// One resource the node lacks for the pod.
struct InsufficientResource {
  std::string resource_name;
  std::string reason;
  int64_t requested = 0;
  int64_t used = 0;
  int64_t capacity = 0;
  // Even the empty node could not hold the request, so preemption cannot help.
  bool unresolvable = false;

  bool operator==(const InsufficientResource&) const = default;
};

// Which extended resources the fit check skips.
struct IgnoredResources {
  std::set<std::string> names;
  std::set<std::string> groups;
};

// Everything `pod_request` lacks on a node with `allocatable`, `node_requested` already used by
// `pods_on_node` pods. A request of 0 for a resource never fails; a pod requesting nothing is
// only checked against the pod count.
std::vector<InsufficientResource> FitsRequest(const api::ResourceList& pod_request,
                                              const api::ResourceList& allocatable,
                                              const api::ResourceList& node_requested,
                                              size_t pods_on_node, const IgnoredResources& ignored);

// The pod's shortfalls on `node`, ignoring nothing (used by callers outside the plugin, such as
// preemption checks).
std::vector<InsufficientResource> Fits(const api::Pod& pod, const framework::NodeInfo& node);

// Immutable after construction: Filter and Score run concurrently on many threads and only read
// the plugin's configuration and the (read-only) CycleState.
class Fit final : public framework::PreFilterPlugin,
                  public framework::FilterPlugin,
                  public framework::EnqueueExtensions,
                  public framework::PreScorePlugin,
                  public framework::ScorePlugin,
                  public framework::HintPlugin {
 public:
  // `classes`: the DeviceClasses, for requests of extended resources served from devices; null
  // (tests, and profiles without DynamicResources' informers) when there are none. `devices`: the
  // devices that score such a resource when the scoring strategy names one (DevicesToScore).
  explicit Fit(FitArgs args, std::function<std::vector<api::DeviceClassPtr>()> classes = nullptr,
               std::shared_ptr<dynamicresources::ClassDevices> devices = nullptr);

  std::string_view Name() const override { return kName; }

  // Records the pod's requests; never skips (upstream Fit always filters).
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  void FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                   std::span<const framework::NodeInfo* const> nodes,
                   std::span<framework::Status> statuses) override;

  // Assigned-pod deletion (or in-place scale-down) frees room; a node that is added or whose
  // allocatable grows may now fit the pod.
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                               std::span<const framework::NodeInfo* const> nodes,
                               std::span<framework::NodeScore> scores) override;

  // The smallest request reduction that fits the node closest to fitting (nodes short of the
  // pod count cannot be helped by one), with the closest nodes and what each lacks.
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;

  const FitArgs& args() const { return args_; }

 private:
  // Filter's result for the pod's `request` (its PreFilter state): true when the pod fits;
  // otherwise false, with `*rejection` set.
  bool FitsNode(const api::ResourceList& request, const std::vector<std::string>& delegated,
                const framework::NodeInfo& node, framework::Status* rejection) const;

  FitArgs args_;
  std::function<std::vector<api::DeviceClassPtr>()> classes_;
  // Shared with the queueing-hint closures, which may outlive a call into this object.
  std::shared_ptr<const IgnoredResources> ignored_;
  ResourceAllocationScorer scorer_;
};

// A resource amount as a person would write it in a pod spec, rounded up to a whole unit of that
// form: cpu "300m" or "2", memory and storage "128Mi", "1Gi" or bytes, other resources a count.
// `*rounded` receives the amount the text stands for (at least `amount`).
std::string HumanAmount(std::string_view resource, int64_t amount, int64_t* rounded);

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::noderesources

#endif  // BERTH_PKG_PLUGINS_NODERESOURCES_FIT_H_
