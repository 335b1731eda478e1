#ifndef BERTH_PKG_PLUGINS_NODEDECLAREDFEATURES_NODEDECLAREDFEATURES_H_
#define BERTH_PKG_PLUGINS_NODEDECLAREDFEATURES_NODEDECLAREDFEATURES_H_

// NodeDeclaredFeatures: a pod that uses a node feature newer than some kubelets (restart rules
// that restart all containers, user namespaces with the host network, bind mount options) only
// fits nodes whose status.declaredFeatures lists that feature. Always on in v1.37's default
// profile, last in its plugin list.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::plugins::nodedeclaredfeatures {

inline constexpr std::string_view kName = "NodeDeclaredFeatures";
inline constexpr std::string_view kErrReasonUnsatisfiedRequirements =
    "node(s) didn't match Pod's required features";
inline constexpr std::string_view kPreFilterStateKey = "PreFilterNodeDeclaredFeatures";

// The features a pod can require, as the kubelet names them in status.declaredFeatures. A
// FeatureSet holds one bit per entry of this list.
inline constexpr std::string_view kRestartAllContainersOnContainerExits =
    "RestartAllContainersOnContainerExits";
inline constexpr std::string_view kUserNamespacesHostNetworkSupport =
    "UserNamespacesHostNetworkSupport";
inline constexpr std::string_view kVolumeBindMountOptions = "VolumeBindMountOptions";

using FeatureSet = uint32_t;

// The features the pod needs its node to declare.
FeatureSet RequiredFeatures(const api::Pod& pod);
// The known features among a node's declared ones; names Berth does not know are ignored, as
// upstream maps only the features it registers.
FeatureSet DeclaredFeatures(const api::Node& node);

// Stateless apart from the per-cycle data in CycleState; Filter only reads that state and is safe
// to call concurrently.
class NodeDeclaredFeatures final : public framework::PreFilterPlugin,
                                   public framework::FilterPlugin,
                                   public framework::EnqueueExtensions {
 public:
  std::string_view Name() const override { return kName; }
  // Skips pods that need no declared feature (nearly all of them).
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
};

// Queues on a node added, or updated with different declared features.
framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event);
// Queues when the pod itself changed what it requires.
framework::QueueingHint IsSchedulableAfterPodUpdate(const api::Pod& pod,
                                                    const framework::EventObjects& event);

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::nodedeclaredfeatures

#endif  // BERTH_PKG_PLUGINS_NODEDECLAREDFEATURES_NODEDECLAREDFEATURES_H_
