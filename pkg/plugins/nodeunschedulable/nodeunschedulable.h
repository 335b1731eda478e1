#ifndef BERTH_PKG_PLUGINS_NODEUNSCHEDULABLE_NODEUNSCHEDULABLE_H_
#define BERTH_PKG_PLUGINS_NODEUNSCHEDULABLE_NODEUNSCHEDULABLE_H_

// NodeUnschedulable: rejects cordoned nodes (spec.unschedulable) unless the pod tolerates the
// node.kubernetes.io/unschedulable:NoSchedule taint that a cordon implies.

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::plugins::nodeunschedulable {

inline constexpr std::string_view kName = "NodeUnschedulable";
inline constexpr std::string_view kErrReasonUnschedulable = "node(s) were unschedulable";
// The taint key a pod tolerates to be placed on cordoned nodes.
inline constexpr std::string_view kTaintNodeUnschedulable = "node.kubernetes.io/unschedulable";

// Stateless; every method is safe to call from any thread.
class NodeUnschedulable final : public framework::FilterPlugin,
                                public framework::EnqueueExtensions,
                                public framework::HintPlugin {
 public:
  std::string_view Name() const override { return kName; }
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  void FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                   std::span<const framework::NodeInfo* const> nodes,
                   std::span<framework::Status> statuses) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // Tolerating the cordon's taint, with the cordoned nodes.
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;
};

// Whether the pod tolerates node.kubernetes.io/unschedulable:NoSchedule.
bool ToleratesUnschedulable(const api::Pod& pod);

// Queues on a node added schedulable, or updated from unschedulable to schedulable.
framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event);
// Queues when the pod itself now tolerates the unschedulable taint.
framework::QueueingHint IsSchedulableAfterPodTolerationChange(const api::Pod& pod,
                                                              const framework::EventObjects& event);

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::nodeunschedulable

#endif  // BERTH_PKG_PLUGINS_NODEUNSCHEDULABLE_NODEUNSCHEDULABLE_H_
