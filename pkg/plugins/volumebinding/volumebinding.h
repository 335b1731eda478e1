#ifndef BERTH_PKG_PLUGINS_VOLUMEBINDING_VOLUMEBINDING_H_
#define BERTH_PKG_PLUGINS_VOLUMEBINDING_VOLUMEBINDING_H_

// VolumeBinding: a pod with PersistentVolumeClaims (or generic ephemeral volumes) goes only where
// its volumes can be, and its claims get bound. PreFilter requires the claims to exist, not be
// terminating, and (for Immediate classes) be bound already. Filter checks bound volumes' node
// affinity, and for unbound WaitForFirstConsumer claims finds an Available volume the node can
// reach or a provisioner whose class (allowedTopologies, published CSI capacity) admits the node.
// Reserve assumes the choice in the plugin's caches; PreBind writes it (the volume's claimRef, or
// volume.kubernetes.io/selected-node on a claim to provision) and waits until the volume
// controller bound every claim, for at most bindTimeoutSeconds; Unreserve reverts. Score prefers
// nodes by the utilization of the volumes chosen there (StorageCapacityScoring, on by default in
// the pinned release).
//
// Args (VolumeBindingArgs):
//   bindTimeoutSeconds: 600   (>= 0)
//   shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]   (the default)

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "pkg/api/requests.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/noderesources/resource_allocation.h"
#include "pkg/plugins/volumebinding/binder.h"

namespace berth::plugins::volumebinding {

inline constexpr std::string_view kName = "VolumeBinding";

struct Args {
  std::chrono::seconds bind_timeout{600};
  std::vector<noderesources::UtilizationShapePoint> shape = {{0, 10}, {100, 0}};
};

// Parses VolumeBindingArgs (null for the defaults). Throws std::invalid_argument naming the field.
Args ParseArgs(const nlohmann::json& args);

// PreFilter, Reserve and Unreserve run on the scheduling thread; Filter and Score on many at once
// (the cycle's state guards what Filter writes); PreBind on many binding threads for different
// pods. The binder and its caches are thread-safe.
class VolumeBinding final : public framework::PreFilterPlugin,
                            public framework::FilterPlugin,
                            public framework::PreScorePlugin,
                            public framework::ScorePlugin,
                            public framework::ReservePlugin,
                            public framework::PreBindPlugin,
                            public framework::EnqueueExtensions {
 public:
  VolumeBinding(Args args, informer::Lister<api::PersistentVolumeClaim> claims,
                std::unique_ptr<VolumeBinder> binder);

  std::string_view Name() const override { return kName; }

  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  // Skips scoring when no claim is left to bind: every node would score 0.
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const std::string& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod,
                 const std::string& node) override;
  framework::Status PreBindPreFlight(framework::CycleState& state, const api::Pod& pod,
                                     const std::string& node) override;
  framework::Status PreBind(framework::CycleState& state, const api::Pod& pod,
                            const std::string& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  VolumeBinder& binder() { return *binder_; }

 private:
  // The score of a node from the requested and capacity bytes of each class of the volumes
  // chosen there.
  int64_t ScoreClasses(const std::vector<std::pair<api::WideInt, api::WideInt>>& classes) const;

  const Args args_;
  const informer::Lister<api::PersistentVolumeClaim> claims_;
  std::unique_ptr<VolumeBinder> binder_;
};

// The queueing hints, exposed for tests.
framework::QueueingHint IsSchedulableAfterClaimChange(const api::Pod& pod,
                                                      const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterStorageClassChange(const api::Pod& pod,
                                                             const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterCSINodeChange(const api::Pod& pod,
                                                        const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterCSIDriverChange(const api::Pod& pod,
                                                          const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterCapacityChange(const api::Pod& pod,
                                                         const framework::EventObjects& event);

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::volumebinding

#endif  // BERTH_PKG_PLUGINS_VOLUMEBINDING_VOLUMEBINDING_H_
