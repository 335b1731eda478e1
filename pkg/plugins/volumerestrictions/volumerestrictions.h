#ifndef BERTH_PKG_PLUGINS_VOLUMERESTRICTIONS_VOLUMERESTRICTIONS_H_
#define BERTH_PKG_PLUGINS_VOLUMERESTRICTIONS_VOLUMERESTRICTIONS_H_

// VolumeRestrictions: volumes that only one pod may use. A claim with the ReadWriteOncePod access
// mode that a pod anywhere already uses keeps every other pod that names it off every node; an
// in-tree disk (GCE persistent disk, AWS EBS, iSCSI, RBD) already mounted by a pod on a node keeps
// a pod wanting it read-write (or, for EBS, at all) off that node. Preemption sees the claim's
// users come and go through the PreFilter extensions.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"

namespace berth::plugins::volumerestrictions {

inline constexpr std::string_view kName = "VolumeRestrictions";
inline constexpr std::string_view kErrReasonDiskConflict = "node(s) had no available disk";
inline constexpr std::string_view kErrReasonReadWriteOncePodConflict =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
    "in-use by another pod";

// Whether `volume` of a pod to place conflicts with a volume of `existing` (upstream's
// isVolumeConflict).
bool VolumeConflicts(const api::Volume& volume, const api::Pod& existing);
// Whether none of the pod's in-tree disks conflicts with a pod on `node`.
bool SatisfiesVolumeConflicts(const api::Pod& pod, const std::vector<framework::PodInfoPtr>& pods);

// Safe to call concurrently; the snapshot lister is read on the scheduling thread only.
class VolumeRestrictions final : public framework::PreFilterPlugin,
                                 public framework::PreFilterExtensions,
                                 public framework::FilterPlugin,
                                 public framework::EnqueueExtensions {
 public:
  VolumeRestrictions(informer::Lister<api::PersistentVolumeClaim> claims,
                     const framework::NodeInfoLister& snapshot);

  std::string_view Name() const override { return kName; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::PreFilterExtensions* Extensions() override { return this; }
  framework::Status AddPod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                           const framework::PodInfo& pod_to_add,
                           const framework::NodeInfo& node) override;
  framework::Status RemovePod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                              const framework::PodInfo& pod_to_remove,
                              const framework::NodeInfo& node) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  const informer::Lister<api::PersistentVolumeClaim> claims_;
  const framework::NodeInfoLister& snapshot_;
};

framework::QueueingHint IsSchedulableAfterAssignedPodDeleted(const api::Pod& pod,
                                                             const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterClaimAdded(const api::Pod& pod,
                                                     const framework::EventObjects& event);

// Takes no args.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::volumerestrictions

#endif  // BERTH_PKG_PLUGINS_VOLUMERESTRICTIONS_VOLUMERESTRICTIONS_H_
