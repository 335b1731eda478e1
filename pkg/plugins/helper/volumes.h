#ifndef BERTH_PKG_PLUGINS_HELPER_VOLUMES_H_
#define BERTH_PKG_PLUGINS_HELPER_VOLUMES_H_

// What the volume plugins (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits) share:
// which claim a pod volume uses, the messages upstream's listers give for missing objects, a
// volume's node affinity, and how kube-scheduler sees in-tree volumes that CSI migration hands to
// a CSI driver. Pure functions of their arguments; thread-safe.

#include <optional>
#include <string>
#include <string_view>

#include "pkg/api/resources.h"
#include "pkg/api/types.h"

namespace berth::plugins::helper {

// The storage labels of a node or volume that the volume plugins compare.
inline constexpr std::string_view kLabelTopologyZone = "topology.kubernetes.io/zone";
inline constexpr std::string_view kLabelTopologyRegion = "topology.kubernetes.io/region";
inline constexpr std::string_view kLabelBetaZone = "failure-domain.beta.kubernetes.io/zone";
inline constexpr std::string_view kLabelBetaRegion = "failure-domain.beta.kubernetes.io/region";
// A volume label value listing several zones separates them with this.
inline constexpr std::string_view kZoneDelimiter = "__";
// A StorageClass whose provisioner is this provisions nothing.
inline constexpr std::string_view kNoProvisioner = "kubernetes.io/no-provisioner";
// Set on a volume the scheduler (not the user) bound to a claim.
inline constexpr std::string_view kBoundByControllerAnnotation =
    "pv.kubernetes.io/bound-by-controller";

struct VolumeClaim {
  std::string name;
  // A generic ephemeral volume's claim: "<pod>-<volume>", created by the ephemeral volume
  // controller and owned by the pod.
  bool ephemeral = false;
};

// The claim a pod volume uses (persistentVolumeClaim or ephemeral); std::nullopt for any other
// source.
std::optional<VolumeClaim> ClaimOf(const api::Pod& pod, const api::Volume& volume);

// Empty when `claim` was made for `pod` (same namespace, the pod its controller); otherwise
// upstream's refusal: "PVC ns/name was not created for pod ns/pod (pod is not owner)".
std::string EphemeralClaimOwnerError(const api::Pod& pod, const api::PersistentVolumeClaim& claim);

// What an upstream lister says of an object it does not have: `<resource> "<name>" not found`,
// with the resource's singular name and group ("persistentvolumeclaim",
// "storageclass.storage.k8s.io").
std::string NotFoundMessage(std::string_view resource, std::string_view name);

// A claim the volume controller finished binding: it names a volume and carries
// pv.kubernetes.io/bind-completed.
bool ClaimFullyBound(const api::PersistentVolumeClaim& claim);

// Whether a node with `node_labels` satisfies `affinity` (a volume's nodeAffinity.required;
// std::nullopt: every node). Upstream evaluates it against the node's labels alone, so a
// matchFields term (metadata.name) matches no node; so does this.
bool VolumeAffinityMatches(const std::optional<api::NodeSelector>& affinity,
                           const api::Labels& node_labels);

// ---- In-tree volumes migrated to CSI ----

// An in-tree volume plugin that CSI migration serves with a CSI driver.
struct InTreePlugin {
  std::string_view source;       // The volume source's member name: "awsElasticBlockStore".
  std::string_view plugin_name;  // "kubernetes.io/aws-ebs", as StorageClass provisioners name it.
  std::string_view csi_driver;   // "ebs.csi.aws.com".
  // The CSI driver's zone key that translation puts in the volume's node affinity; empty for a
  // driver whose translation leaves topology alone.
  std::string_view topology_key;
  // The CSI driver's region key when translation renames the region key too (vSphere); empty
  // when it only moves the beta region key to the GA one.
  std::string_view region_key;
  // NodeVolumeLimits counts this plugin's volumes against its CSI driver's limit (aws-ebs,
  // gce-pd, azure-disk, cinder, portworx). VolumeBinding translates every plugin listed here on a
  // node whose CSINode says it is migrated, azure-file and vsphere included.
  bool counts_for_limits = false;
};

// The plugin of a volume source (member name), or of a provisioner name; null when none.
const InTreePlugin* InTreePluginForSource(std::string_view source);
const InTreePlugin* InTreePluginByName(std::string_view plugin_name);

// Whether the CSINode lists `plugin` in storage.alpha.kubernetes.io/migrated-plugins.
bool MigratedOnNode(const InTreePlugin& plugin, const api::CSINode* csi_node);

// A volume as CSI translation presents it, or the translation's error.
struct TranslatedVolume {
  std::string driver;
  std::string volume_handle;
  std::optional<api::NodeSelector> node_affinity;
  std::string error;  // Non-empty when the volume cannot be translated.
};

// Translates an in-tree persistent volume of `plugin`. The handle is
// the CSI driver's: an EBS volume id without its aws://zone/ prefix, a GCE disk as
// projects/UNSPECIFIED/zones|regions/<from the volume's zone labels>/disks/<pdName>, the disk URI
// or volume id otherwise. The node affinity gets the driver's zone key in place of the in-tree
// zone key (or one made from the zone labels), and the GA region key in place of the beta one;
// vSphere's gets its driver's zone and region keys (or ones made from the zone and region labels).
// An azureFile volume keeps its topology; it fails when neither its secretNamespace nor its
// claimRef names a namespace.
TranslatedVolume TranslateInTreeVolume(const api::PersistentVolume& pv, const InTreePlugin& plugin);
// The same for an in-tree volume inline in a pod (no labels: a GCE disk's zone is UNSPECIFIED).
TranslatedVolume TranslateInlineVolume(const api::Volume& volume, const InTreePlugin& plugin);

}  // namespace berth::plugins::helper

#endif  // BERTH_PKG_PLUGINS_HELPER_VOLUMES_H_
