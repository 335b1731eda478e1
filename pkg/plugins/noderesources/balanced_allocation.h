#ifndef BERTH_PKG_PLUGINS_NODERESOURCES_BALANCED_ALLOCATION_H_
#define BERTH_PKG_PLUGINS_NODERESOURCES_BALANCED_ALLOCATION_H_

// NodeResourcesBalancedAllocation: favours nodes whose resource use the pod balances across the
// configured resources. A node's balance is (1 - std deviation of the used/allocatable fractions)
// * 100; the score is about 75 plus half the change the pod brings to it (BalancedAllocationScore),
// following upstream kube-scheduler v1.37 noderesources/balanced_allocation.go.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/noderesources/resource_allocation.h"

namespace berth::plugins::noderesources {

inline constexpr std::string_view kBalancedAllocationName = "NodeResourcesBalancedAllocation";
inline constexpr std::string_view kBalancedAllocationPreScoreStateKey =
    "PreScoreNodeResourcesBalancedAllocation";

// NodeResourcesBalancedAllocationArgs after defaulting and validation.
struct BalancedAllocationArgs {
  std::vector<ResourceSpec> resources = DefaultResourceSpecs();
};

// Decodes, defaults and validates NodeResourcesBalancedAllocationArgs; null means all defaults.
// Throws std::invalid_argument naming the field (duplicate names; weights other than 1).
BalancedAllocationArgs ParseBalancedAllocationArgs(const nlohmann::json& args);

// Immutable after construction: Score runs concurrently on many threads and only reads the
// plugin's configuration and the (read-only) CycleState.
class BalancedAllocation final : public framework::PreScorePlugin, public framework::ScorePlugin {
 public:
  // `devices`: where an extended resource served from devices is found, when `args` name one.
  explicit BalancedAllocation(BalancedAllocationArgs args, DeviceSources devices = {});

  std::string_view Name() const override { return kBalancedAllocationName; }

  // Skips scoring for a pod that requests none of the resources: every node would look equally
  // balanced, and scoring would pile best-effort pods onto the same nodes.
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                               std::span<const framework::NodeInfo* const> nodes,
                               std::span<framework::NodeScore> scores) override;

  const BalancedAllocationArgs& args() const { return args_; }

 private:
  BalancedAllocationArgs args_;
  ResourceAllocationScorer scorer_;
};

framework::PluginPtr NewBalancedAllocation(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::noderesources

#endif  // BERTH_PKG_PLUGINS_NODERESOURCES_BALANCED_ALLOCATION_H_
