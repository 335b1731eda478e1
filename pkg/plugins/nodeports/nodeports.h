#ifndef BERTH_PKG_PLUGINS_NODEPORTS_NODEPORTS_H_
#define BERTH_PKG_PLUGINS_NODEPORTS_NODEPORTS_H_

// NodePorts: rejects nodes where a host port the pod asks for (same protocol and port, on the
// same ip or where either side binds 0.0.0.0) is already taken by a pod on the node.

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::plugins::nodeports {

inline constexpr std::string_view kName = "NodePorts";
inline constexpr std::string_view kErrReason =
    "node(s) didn't have free ports for the requested pod ports";
// CycleState key of the host ports PreFilter collects for Filter.
inline constexpr std::string_view kPreFilterStateKey = "PreFilterNodePorts";

// Stateless apart from the per-cycle data it keeps in CycleState; Filter only reads that state
// and is safe to call concurrently.
class NodePorts final : public framework::PreFilterPlugin,
                        public framework::FilterPlugin,
                        public framework::EnqueueExtensions {
 public:
  std::string_view Name() const override { return kName; }
  // Skips pods without host ports.
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
};

// True when none of `ports` conflicts with the ports in use.
bool FitsPorts(const std::vector<api::ContainerPort>& ports, const framework::HostPortInfo& used);

// Queues when a deleted assigned (or nominated) pod held a host port the pod wants.
framework::QueueingHint IsSchedulableAfterPodDeleted(const api::Pod& pod,
                                                     const framework::EventObjects& event);

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::nodeports

#endif  // BERTH_PKG_PLUGINS_NODEPORTS_NODEPORTS_H_
