#include "pkg/plugins/nodeunschedulable/nodeunschedulable.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "pkg/framework/args.h"

namespace berth::plugins::nodeunschedulable {

bool ToleratesUnschedulable(const api::Pod& pod) {
  static const api::Taint kUnschedulableTaint{std::string(kTaintNodeUnschedulable), "",
                                              api::TaintEffect::kNoSchedule};
  return api::TolerationsTolerate(pod.spec.tolerations, kUnschedulableTaint);
}

framework::Status NodeUnschedulable::Filter(const framework::CycleState&, const api::Pod& pod,
                                            const framework::NodeInfo& node) {
  if (node.node() == nullptr || !node.node()->spec.unschedulable) {
    return framework::Status::Success();
  }
  if (ToleratesUnschedulable(pod)) return framework::Status::Success();
  static const framework::FixedReasons kUnschedulable(kErrReasonUnschedulable);
  return framework::Status::Unresolvable(kUnschedulable);
}

void NodeUnschedulable::FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                                    std::span<const framework::NodeInfo* const> nodes,
                                    std::span<framework::Status> statuses) {
  for (size_t i = 0; i < nodes.size(); i++) {
    const api::Node* node = nodes[i]->node();
    // Schedulable nodes, the common case, are decided without building a status.
    if (node == nullptr || !node->spec.unschedulable) continue;
    framework::Status s = Filter(state, pod, *nodes[i]);
    if (!s.IsSuccess()) statuses[i] = std::move(s);
  }
}

std::vector<framework::ClusterEventWithHint> NodeUnschedulable::EventsToRegister() const {
  return {
      {{framework::EventResource::kNode,
        framework::kAdd | framework::kUpdateNodeTaint | framework::kUpdateNodeSpecUnschedulable,
        "NodeAddOrUpdateNodeTaintOrSpecUnschedulable"},
       IsSchedulableAfterNodeChange},
      {{framework::EventResource::kUnscheduledPod, framework::kUpdatePodTolerations,
        "UnscheduledPodUpdatePodTolerations"},
       IsSchedulableAfterPodTolerationChange},
  };
}

framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod&,
                                                     const framework::EventObjects& event) {
  // A missing object is a malformed event; queueing is the safe answer.
  if (!event.new_node) return framework::QueueingHint::kQueue;
  if (event.new_node->spec.unschedulable) return framework::QueueingHint::kSkip;
  // Added schedulable, or cordon lifted. An update of a node that was already schedulable
  // cannot undo a rejection by this plugin.
  const bool was_unschedulable = !event.old_node || event.old_node->spec.unschedulable;
  return was_unschedulable ? framework::QueueingHint::kQueue : framework::QueueingHint::kSkip;
}

framework::QueueingHint IsSchedulableAfterPodTolerationChange(
    const api::Pod& pod, const framework::EventObjects& event) {
  if (!event.new_pod) return framework::QueueingHint::kQueue;
  if (event.new_pod->meta.uid != pod.meta.uid) return framework::QueueingHint::kSkip;
  // Tolerations can only be added, so a pod this plugin rejected did not tolerate the taint
  // before: only the new version matters.
  return ToleratesUnschedulable(*event.new_pod) ? framework::QueueingHint::kQueue
                                                : framework::QueueingHint::kSkip;
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle&) {
  framework::ExpectNoArgs(args);
  return std::make_shared<NodeUnschedulable>();
}

}  // namespace berth::plugins::nodeunschedulable
