#ifndef BERTH_PKG_PLUGINS_NODENAME_NODENAME_H_
#define BERTH_PKG_PLUGINS_NODENAME_NODENAME_H_

// NodeName: a pod that names a node in spec.nodeName fits only that node.

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::plugins::nodename {

inline constexpr std::string_view kName = "NodeName";
inline constexpr std::string_view kErrReason = "node(s) didn't match the requested node name";

// Stateless; every method is safe to call from any thread.
class NodeName final : public framework::FilterPlugin, public framework::EnqueueExtensions {
 public:
  std::string_view Name() const override { return kName; }
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  void FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                   std::span<const framework::NodeInfo* const> nodes,
                   std::span<framework::Status> statuses) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
};

// True when the pod names no node or names `node_name`.
bool Fits(const api::Pod& pod, std::string_view node_name);

// Queues when the added or updated node is one the pod fits.
framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event);

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::nodename

#endif  // BERTH_PKG_PLUGINS_NODENAME_NODENAME_H_
