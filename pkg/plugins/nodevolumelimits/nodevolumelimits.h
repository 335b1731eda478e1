#ifndef BERTH_PKG_PLUGINS_NODEVOLUMELIMITS_NODEVOLUMELIMITS_H_
#define BERTH_PKG_PLUGINS_NODEVOLUMELIMITS_NODEVOLUMELIMITS_H_

// NodeVolumeLimits (upstream's CSI volume limits): a node takes no more volumes of a CSI driver
// than its CSINode's allocatable.count for that driver. The pod's volumes count once each (by
// driver and volume handle) against those already attached there: used by the node's pods, or
// named by a VolumeAttachment to the node. Volumes are claims bound to CSI volumes, claims still
// to be provisioned (counted for their class's provisioner), and in-tree volumes that CSI
// migration hands to a CSI driver. A driver whose CSIDriver sets preventPodSchedulingIfMissing
// must also be installed on the node (VolumeLimitScaling, on by default in the pinned release).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/informer.h"
#include "pkg/informer/lister.h"
#include "pkg/plugins/helper/node_list_tracker.h"

namespace berth::plugins::nodevolumelimits {

inline constexpr std::string_view kName = "NodeVolumeLimits";
inline constexpr std::string_view kErrReasonMaxVolumeCountExceeded =
    "node(s) exceed max volume count";

// VolumeAttachments by the node they attach to. Thread-safe; kept in a shared_ptr that the
// informer's handlers hold.
class AttachmentIndex {
 public:
  static std::shared_ptr<AttachmentIndex> New(informer::Informer<api::VolumeAttachment>& informer);
  std::vector<api::VolumeAttachmentPtr> OnNode(const std::string& node) const;

 private:
  void Put(const api::VolumeAttachmentPtr& old_object, const api::VolumeAttachmentPtr& object);

  mutable std::mutex mu_;
  // Node -> attachment name -> attachment. Guarded by mu_.
  std::map<std::string, std::map<std::string, api::VolumeAttachmentPtr>> by_node_;
};

struct Listers {
  informer::Lister<api::PersistentVolumeClaim> claims;
  informer::Lister<api::PersistentVolume> volumes;
  informer::Lister<api::StorageClass> classes;
  informer::Lister<api::CSINode> csi_nodes;
  informer::Lister<api::CSIDriver> csi_drivers;
};

// A volume counted against a driver's limit: "<driver>/<volume handle>" and the driver.
using Attachable = std::pair<std::string, std::string>;

// What one node already has attached, as Filter compares a pod's volumes with it.
struct NodeAttachments {
  // The storage epoch (see NodeVolumeLimits) it was worked out at.
  uint64_t epoch = 0;
  api::CSINodePtr csi_node;
  // allocatable.count by driver, sorted; empty when the node has no limits (nothing else is then
  // worked out).
  std::vector<std::pair<std::string, int64_t>> limits;
  // The error reading the volumes of a pod there.
  framework::Status status;
  // The volumes the node's pods use, sorted by name.
  std::vector<Attachable> attached;
  // By driver, sorted: those volumes plus the volumes VolumeAttachments attach there.
  std::vector<std::pair<std::string, int64_t>> counts;
};

// Filter compares the pod's volumes with what each node already has attached, which takes reading
// every claim and volume of the node's pods; that is kept per node across cycles and worked out
// again only for nodes whose NodeInfo changed, or for all after any change to claims, volumes,
// classes, CSINodes or VolumeAttachments (the storage epoch).
//
// Thread-safety: PreFilter (the scheduling thread) syncs the kept list with the snapshot; Filter
// runs on many threads, each node's entry touched only by the one filtering it, and nodes not in
// the snapshot's list (preemption's copies) are worked out without it.
class NodeVolumeLimits final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::EnqueueExtensions {
 public:
  // `volume_id_prefix` stands in for the handle a claim still to be provisioned will get; upstream
  // draws it at random per scheduler.
  // `storage_epoch` must be bumped on every change to claims, volumes, StorageClasses, CSINodes
  // and VolumeAttachments (New subscribes it to their informers).
  NodeVolumeLimits(Listers listers, std::shared_ptr<const AttachmentIndex> attachments,
                   std::string volume_id_prefix,
                   std::shared_ptr<const std::atomic<uint64_t>> storage_epoch);

  std::string_view Name() const override { return kName; }
  // Skips pods without claims, generic ephemeral volumes or migratable in-tree volumes.
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  // The pod's volumes that count against limits on a node with `csi_node` (null: none), added to
  // `out`. For the pod being placed (`new_pod`) a claim that cannot be read is an error; for a
  // pod already there it is left out.
  framework::Status AttachableVolumes(const api::Pod& pod, const api::CSINode* csi_node,
                                      bool new_pod, std::vector<Attachable>* out) const;

 private:
  // Whether the pod's attachable volumes are the same whatever the node's CSINode says (no
  // in-tree volume whose migration depends on it).
  bool NodeIndependent(const api::Pod& pod) const;
  Attachable DriverOfClaim(const api::CSINode* csi_node,
                           const api::PersistentVolumeClaim& claim) const;
  Attachable DriverOfClass(const api::CSINode* csi_node,
                           const api::PersistentVolumeClaim& claim) const;
  std::shared_ptr<const NodeAttachments> Attachments(const framework::NodeInfo& node,
                                                     uint64_t epoch) const;
  // The drivers of `volumes` whose CSIDriver sets preventPodSchedulingIfMissing, sorted.
  std::vector<std::string> MustBeInstalled(const std::vector<Attachable>& volumes) const;
  framework::Status FilterWith(const NodeAttachments& node,
                               const std::vector<Attachable>& new_volumes,
                               const std::vector<std::string>& must_be_installed) const;

  const Listers listers_;
  const std::shared_ptr<const AttachmentIndex> attachments_;
  const std::string volume_id_prefix_;
  const std::shared_ptr<const std::atomic<uint64_t>> storage_epoch_;
  helper::NodeListTracker tracker_;
  // By list position, as the tracker's list (see the class comment).
  mutable std::vector<std::shared_ptr<const NodeAttachments>> by_position_;
};

framework::QueueingHint IsSchedulableAfterCSINodeUpdated(const api::Pod& pod,
                                                         const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterAssignedPodDeleted(const api::Pod& pod,
                                                             const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterClaimAdded(const api::Pod& pod,
                                                     const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterAttachmentDeleted(const api::Pod& pod,
                                                            const framework::EventObjects& event);

// Takes no args.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::nodevolumelimits

#endif  // BERTH_PKG_PLUGINS_NODEVOLUMELIMITS_NODEVOLUMELIMITS_H_
