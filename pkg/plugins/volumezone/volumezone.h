#ifndef BERTH_PKG_PLUGINS_VOLUMEZONE_VOLUMEZONE_H_
#define BERTH_PKG_PLUGINS_VOLUMEZONE_VOLUMEZONE_H_

// VolumeZone: a pod whose bound volumes carry zone or region labels (the GA
// topology.kubernetes.io ones or the beta failure-domain ones, a value listing zones joined by
// "__") goes only to nodes in those zones and regions. A node without any such label is not
// constrained. Claims of WaitForFirstConsumer classes that are not bound yet are left to
// VolumeBinding.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"

namespace berth::plugins::volumezone {

inline constexpr std::string_view kName = "VolumeZone";
inline constexpr std::string_view kErrReasonConflict = "node(s) had no available volume zone";

// One topology label of one of the pod's volumes.
struct VolumeTopology {
  std::string volume;
  std::string key;
  std::vector<std::string> values;  // Sorted.

  bool operator==(const VolumeTopology&) const = default;
};

// The zone and region labels of a volume, in upstream's key order; a label whose value lists an
// empty zone is ignored.
std::vector<VolumeTopology> TopologiesOf(const api::PersistentVolume& pv);

// Stateless apart from the listers; safe to call concurrently.
class VolumeZone final : public framework::PreFilterPlugin,
                         public framework::FilterPlugin,
                         public framework::EnqueueExtensions {
 public:
  VolumeZone(informer::Lister<api::PersistentVolumeClaim> claims,
             informer::Lister<api::PersistentVolume> volumes,
             informer::Lister<api::StorageClass> classes);

  std::string_view Name() const override { return kName; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  // The topologies of the pod's bound volumes, or the status that rejects the pod.
  framework::Status VolumeTopologies(const api::Pod& pod, std::vector<VolumeTopology>* out) const;

  const informer::Lister<api::PersistentVolumeClaim> claims_;
  const informer::Lister<api::PersistentVolume> volumes_;
  const informer::Lister<api::StorageClass> classes_;
};

framework::QueueingHint IsSchedulableAfterClaimChange(const api::Pod& pod,
                                                      const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterStorageClassAdded(const api::Pod& pod,
                                                            const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterVolumeChange(const api::Pod& pod,
                                                       const framework::EventObjects& event);

// Takes no args.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::volumezone

#endif  // BERTH_PKG_PLUGINS_VOLUMEZONE_VOLUMEZONE_H_
