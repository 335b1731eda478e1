#ifndef BERTH_TEST_OUTOFTREE_NODE_LABEL_GATE_H_
#define BERTH_TEST_OUTOFTREE_NODE_LABEL_GATE_H_

// An example out-of-tree plugin: admits only nodes that carry a configured label. It lives outside
// pkg/plugins, is not in the in-tree registry, and reaches a scheduler binary only through
// berth_scheduler_binary() (see CMakeLists.txt beside it).

#include <string>
#include <string_view>

#include "pkg/framework/interface.h"

namespace berth::example {

inline constexpr std::string_view kNodeLabelGateName = "NodeLabelGate";

class NodeLabelGate : public framework::FilterPlugin, public framework::EnqueueExtensions {
 public:
  explicit NodeLabelGate(std::string label) : label_(std::move(label)) {}
  std::string_view Name() const override { return kNodeLabelGateName; }
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  std::string label_;
};

// args: {"label": "<required node label key>"}.
framework::PluginPtr NewNodeLabelGate(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::example

#endif  // BERTH_TEST_OUTOFTREE_NODE_LABEL_GATE_H_
