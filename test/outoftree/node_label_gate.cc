#include "test/outoftree/node_label_gate.h"

#include <stdexcept>

#include "pkg/plugins/registry/registry.h"

namespace berth::example {

framework::Status NodeLabelGate::Filter(const framework::CycleState&, const api::Pod&,
                                        const framework::NodeInfo& node) {
  if (node.node() && node.node()->meta.labels.Contains(label_)) return {};
  return framework::Status::Unresolvable("node(s) lack label " + label_);
}

std::vector<framework::ClusterEventWithHint> NodeLabelGate::EventsToRegister() const {
  return {{{framework::EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel,
            "NodeAddOrLabel"},
           nullptr}};
}

framework::PluginPtr NewNodeLabelGate(const nlohmann::json& args, framework::Handle&) {
  if (!args.is_object() || !args.contains("label") || !args["label"].is_string() ||
      args["label"].get<std::string>().empty()) {
    throw std::invalid_argument("label: required, a node label key");
  }
  return std::make_shared<NodeLabelGate>(args["label"].get<std::string>());
}

namespace {
const plugins::registry::Registration kRegistration(std::string(kNodeLabelGateName),
                                                    NewNodeLabelGate);
}  // namespace

}  // namespace berth::example
