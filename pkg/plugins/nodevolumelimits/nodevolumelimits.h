#ifndef BERTH_PKG_PLUGINS_NODEVOLUMELIMITS_NODEVOLUMELIMITS_H_
#define BERTH_PKG_PLUGINS_NODEVOLUMELIMITS_NODEVOLUMELIMITS_H_

// NodeVolumeLimits (upstream's CSI volume limits): a node takes no more volumes of a CSI driver
// than its CSINode's allocatable.count for that driver. The pod's volumes count once each (by
// driver and volume handle) against those already attached there: used by the node's pods, or
// named by a VolumeAttachment to the node. Volumes are claims bound to CSI volumes, claims still
// to be provisioned (counted for their class's provisioner), and in-tree volumes that CSI
// migration hands to a CSI driver. A driver whose CSIDriver sets preventPodSchedulingIfMissing
// must also be installed on the node (VolumeLimitScaling, on by default in the pinned release).

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

// Safe to call concurrently.
class NodeVolumeLimits final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::EnqueueExtensions {
 public:
  // `volume_id_prefix` stands in for the handle a claim still to be provisioned will get; upstream
  // draws it at random per scheduler.
  NodeVolumeLimits(Listers listers, std::shared_ptr<const AttachmentIndex> attachments,
                   std::string volume_id_prefix);

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
  framework::Status FilterWith(const api::Pod& pod, const framework::NodeInfo& node,
                               const api::CSINode* csi_node,
                               const std::vector<Attachable>& new_volumes) const;

  const Listers listers_;
  const std::shared_ptr<const AttachmentIndex> attachments_;
  const std::string volume_id_prefix_;
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
