#include "pkg/plugins/nodename/nodename.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "pkg/framework/args.h"

namespace berth::plugins::nodename {

bool Fits(const api::Pod& pod, std::string_view node_name) {
  return pod.spec.node_name.empty() || pod.spec.node_name == node_name;
}

framework::Status NodeName::Filter(const framework::CycleState&, const api::Pod& pod,
                                   const framework::NodeInfo& node) {
  if (Fits(pod, node.name())) return framework::Status::Success();
  static const framework::FixedReasons kMismatch(kErrReason);
  return framework::Status::Unresolvable(kMismatch);
}

void NodeName::FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                           std::span<const framework::NodeInfo* const> nodes,
                           std::span<framework::Status> statuses) {
  // A pod that names no node fits every node.
  if (pod.spec.node_name.empty()) return;
  for (size_t i = 0; i < nodes.size(); i++) {
    framework::Status s = Filter(state, pod, *nodes[i]);
    if (!s.IsSuccess()) statuses[i] = std::move(s);
  }
}

std::vector<framework::ClusterEventWithHint> NodeName::EventsToRegister() const {
  // A node's name never changes, so only a node appearing can help; label and taint updates are
  // registered as upstream does (with the same hint) so that a pod whose node was first seen
  // through an update event is not left waiting for an Add that already passed.
  return {
      {{framework::EventResource::kNode,
        framework::kAdd | framework::kUpdateNodeLabel | framework::kUpdateNodeTaint,
        "NodeAddOrUpdateNodeLabelOrTaint"},
       IsSchedulableAfterNodeChange},
  };
}

framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event) {
  // A missing object is a malformed event; queueing is the safe answer.
  if (!event.new_node) return framework::QueueingHint::kQueue;
  return Fits(pod, event.new_node->Name()) ? framework::QueueingHint::kQueue
                                           : framework::QueueingHint::kSkip;
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle&) {
  framework::ExpectNoArgs(args);
  return std::make_shared<NodeName>();
}

}  // namespace berth::plugins::nodename
