#include "pkg/plugins/nodeports/nodeports.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "pkg/framework/args.h"

namespace berth::plugins::nodeports {
namespace {

// Built once: Filter and Score read it for every node.
const framework::StateKey& PreFilterKey() {
  static const framework::StateKey key(kPreFilterStateKey);
  return key;
}

// The pod's host ports. Immutable once written (pod ports are immutable, and adding or removing
// other pods does not change them), so Clone shares nothing mutable and Filter reads it from
// many threads.
struct PreFilterState final : framework::StateData {
  std::vector<api::ContainerPort> ports;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreFilterState>(*this);
  }
};

}  // namespace

bool FitsPorts(const std::vector<api::ContainerPort>& ports, const framework::HostPortInfo& used) {
  return std::none_of(ports.begin(), ports.end(), [&](const api::ContainerPort& p) {
    return used.CheckConflict(p.host_ip, p.protocol, p.host_port);
  });
}

framework::Status NodePorts::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                       const std::vector<framework::NodeInfoPtr>&,
                                       framework::PreFilterResult*) {
  if (pod.host_ports.empty()) return framework::Status::Skip();
  auto data = std::make_shared<PreFilterState>();
  data->ports = pod.host_ports;
  state.Write(PreFilterKey(), std::move(data));
  return framework::Status::Success();
}

framework::Status NodePorts::Filter(const framework::CycleState& state, const api::Pod&,
                                    const framework::NodeInfo& node) {
  const auto* data = state.Read<PreFilterState>(PreFilterKey());
  if (data == nullptr) {
    return framework::Status::Error("reading \"" + PreFilterKey().str() +
                                    "\" from cycleState: not found");
  }
  if (FitsPorts(data->ports, node.used_ports())) return framework::Status::Success();
  static const framework::FixedReasons kConflict(kErrReason);
  return framework::Status::Unschedulable(kConflict);
}

std::vector<framework::ClusterEventWithHint> NodePorts::EventsToRegister() const {
  // Pod ports are immutable, so only a deletion frees a port; a new node always may fit.
  return {
      {{framework::EventResource::kPod, framework::kDelete, "AssignedPodDelete"},
       IsSchedulableAfterPodDeleted},
      {{framework::EventResource::kNode, framework::kAdd, "NodeAdd"}, nullptr},
  };
}

framework::QueueingHint IsSchedulableAfterPodDeleted(const api::Pod& pod,
                                                     const framework::EventObjects& event) {
  // A missing object is a malformed event; queueing is the safe answer.
  if (!event.old_pod) return framework::QueueingHint::kQueue;
  const api::Pod& deleted = *event.old_pod;
  // A pod that held no node (or nomination) held no ports anywhere.
  if (deleted.spec.node_name.empty() && deleted.status.nominated_node_name.empty()) {
    return framework::QueueingHint::kSkip;
  }
  if (deleted.host_ports.empty()) return framework::QueueingHint::kSkip;
  framework::HostPortInfo freed;
  for (const api::ContainerPort& p : deleted.host_ports) {
    freed.Add(p.host_ip, p.protocol, p.host_port);
  }
  return FitsPorts(pod.host_ports, freed) ? framework::QueueingHint::kSkip
                                          : framework::QueueingHint::kQueue;
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle&) {
  framework::ExpectNoArgs(args);
  return std::make_shared<NodePorts>();
}

}  // namespace berth::plugins::nodeports
