#ifndef BERTH_PKG_PLUGINS_VOLUMEBINDING_BINDER_H_
#define BERTH_PKG_PLUGINS_VOLUMEBINDING_BINDER_H_

// The volume binder behind the VolumeBinding plugin: sorts a pod's claims (PreFilter), finds for
// one node the volumes its unbound claims can take or the provisioning they need (Filter),
// assumes that choice (Reserve), writes it through the apiserver and waits for the volume
// controller to finish (PreBind), and reverts it (Unreserve). Semantics are kube-scheduler's
// (pkg/scheduler/framework/plugins/volumebinding of the pinned release), messages included.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"
#include "pkg/plugins/helper/volumes.h"
#include "pkg/plugins/volumebinding/assume_cache.h"

namespace berth::client {
class Client;
}
namespace berth::informer {
class SharedInformerFactory;
}

namespace berth::plugins::volumebinding {

// Why a node cannot take the pod's volumes; Filter reports them in this order.
inline constexpr std::string_view kErrReasonNodeConflict =
    "node(s) didn't match PersistentVolume's node affinity";
inline constexpr std::string_view kErrReasonBindConflict =
    "node(s) didn't find available persistent volumes to bind";
inline constexpr std::string_view kErrReasonNotEnoughSpace =
    "node(s) did not have enough free storage";
inline constexpr std::string_view kErrReasonPVNotExist =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
// PreFilter's rejection of a pod whose claims of Immediate classes the volume controller has not
// bound yet.
inline constexpr std::string_view kErrReasonUnboundImmediate =
    "pod has unbound immediate PersistentVolumeClaims";

using PVCPtr = api::PersistentVolumeClaimPtr;
using PVPtr = api::PersistentVolumePtr;
using PVCache = AssumeCache<api::PersistentVolume>;
using PVCCache = AssumeCache<api::PersistentVolumeClaim>;

// An unbound claim and the volume chosen for it.
struct BindingInfo {
  PVCPtr pvc;
  PVPtr pv;
};

// An unbound claim to provision, with the storage capacity object that admitted the node (null
// when capacity was not checked).
struct DynamicProvision {
  PVCPtr pvc;
  api::CSIStorageCapacityPtr capacity;
};

// What one node needs done for the pod's unbound claims.
struct PodVolumes {
  std::vector<BindingInfo> static_bindings;
  std::vector<DynamicProvision> dynamic_provisions;
};

// A bound claim's volume, looked up once per cycle.
struct BoundVolume {
  PVCPtr pvc;
  PVPtr pv;  // Null: the claim names a volume the informer does not have.
  // For an in-tree volume kube-scheduler translates: the plugin and the translation, used on
  // nodes whose CSINode lists the plugin as migrated.
  const helper::InTreePlugin* migrated_plugin = nullptr;
  helper::TranslatedVolume translated;
};

// A pod's claims, sorted.
struct PodVolumeClaims {
  std::vector<BoundVolume> bound;
  // Claims of WaitForFirstConsumer classes that name no volume yet (bound or provisioned here).
  std::vector<PVCPtr> unbound_delay_binding;
  // Claims the volume controller binds on its own (Immediate classes, or naming a volume).
  std::vector<PVCPtr> unbound_immediate;
  // The volumes of the classes of unbound_delay_binding, by class.
  std::map<std::string, std::vector<PVPtr>> unbound_volumes_delay_binding;
};

// The bits of the reasons Filter returns, in report order.
enum ConflictReason : unsigned {
  kNodeConflict = 1u << 0,
  kBindConflict = 1u << 1,
  kNotEnoughSpace = 1u << 2,
  kPVNotExist = 1u << 3,
};

struct BinderDeps {
  // The listers of `informers`, and assume caches over its volume and claim informers (which
  // this creates, and so starts).
  explicit BinderDeps(informer::SharedInformerFactory& informers);

  // Null: PreBind fails (plugin tests and benchmarks without an apiserver).
  client::Client* client = nullptr;
  informer::Lister<api::Pod> pods;
  informer::Lister<api::Node> nodes;
  informer::Lister<api::StorageClass> classes;
  informer::Lister<api::CSINode> csi_nodes;
  informer::Lister<api::CSIDriver> csi_drivers;
  informer::Lister<api::CSIStorageCapacity> capacities;
  std::shared_ptr<PVCache> pv_cache;
  std::shared_ptr<PVCCache> pvc_cache;
  // How long PreBind waits for the volume controller (bindTimeoutSeconds).
  std::chrono::milliseconds bind_timeout{std::chrono::seconds(600)};
  // True once the scheduler is stopping: PreBind stops waiting.
  std::function<bool()> stopping;
};

// Wakes PreBind's waits to look at the claims again. Thread-safe; shared with the informers'
// handlers, which may outlive the binder.
class Waker {
 public:
  void Notify();
  // Waits until the next Notify, `until`, or `stop` returning true (checked on every wake).
  void WaitUntil(std::chrono::steady_clock::time_point until, const std::function<bool()>& stop);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;  // Guarded by mu_.
};

// Thread-safe: FindPodVolumes runs for many nodes at once; BindPodVolumes for many pods.
class VolumeBinder {
 public:
  explicit VolumeBinder(BinderDeps deps);
  ~VolumeBinder();
  VolumeBinder(const VolumeBinder&) = delete;
  VolumeBinder& operator=(const VolumeBinder&) = delete;

  // Sorts the pod's claims. Error when a claim cannot be read from the cache.
  framework::Status GetPodVolumeClaims(const api::Pod& pod, PodVolumeClaims* out) const;

  // For one node: the bindings and provisioning the pod's unbound claims need there, and the
  // ConflictReason bits when the node cannot take them. Error for a claim without a class, a
  // missing class, or a volume that cannot be translated.
  framework::Status FindPodVolumes(const api::Pod& pod, const PodVolumeClaims& claims,
                                   const api::Node& node, PodVolumes* volumes,
                                   unsigned* reasons) const;

  // Assumes `volumes` (the chosen node's) in the caches and rewrites them as assumed. Sets
  // `all_bound` when the pod's claims are all bound already (nothing to do).
  framework::Status AssumePodVolumes(const api::Pod& pod, const std::string& node,
                                     PodVolumes* volumes, bool* all_bound);
  void RevertAssumedPodVolumes(const PodVolumes& volumes);

  // Writes the assumed bindings and provisioning requests, then waits until the volume controller
  // bound every claim (or reports why it never will), for at most the bind timeout.
  framework::Status BindPodVolumes(const api::Pod& pod, const std::string& node,
                                   PodVolumes* volumes);

  // What wakes BindPodVolumes' waits: give it to whatever reports volume and claim changes.
  const std::shared_ptr<Waker>& waker() const { return waker_; }

 private:
  struct ClaimState;
  // Whether the volume's claim is fully bound; its claim (null for a volume without one).
  framework::Status IsVolumeBound(const api::Pod& pod, const api::Volume& volume, bool* bound,
                                  PVCPtr* claim) const;
  bool ArePodVolumesBound(const api::Pod& pod) const;
  // The volume as the node sees it: translated when its plugin is migrated there.
  framework::Status VolumeForNode(const api::PersistentVolume& pv, const api::CSINode* csi_node,
                                  std::optional<api::NodeSelector>* affinity) const;
  bool FindMatchingVolumes(const api::Pod& pod, std::vector<PVCPtr> claims,
                           const PodVolumeClaims& all, const api::Node& node,
                           std::vector<BindingInfo>* bindings,
                           std::vector<PVCPtr>* unmatched) const;
  framework::Status CheckVolumeProvisions(const std::vector<PVCPtr>& claims, const api::Node& node,
                                          bool* satisfied, bool* sufficient,
                                          std::vector<DynamicProvision>* provisions) const;
  framework::Status HasEnoughCapacity(const std::string& provisioner,
                                      const api::PersistentVolumeClaim& claim,
                                      const api::StorageClass& storage_class, const api::Node& node,
                                      bool* sufficient, api::CSIStorageCapacityPtr* capacity) const;
  framework::Status BindAPIUpdate(PodVolumes* volumes);
  // True when every binding and provisioning is complete; an error when one never will be.
  framework::Status CheckBindings(const api::Pod& pod, const std::string& node,
                                  const PodVolumes& volumes, bool* done) const;

  BinderDeps deps_;
  std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
};

// Upstream's FindMatchingVolume for a node: the claim's pre-bound volume if it is among `volumes`
// and reachable from the node (else none), otherwise the smallest Available volume of the claim's
// class, mode, attributes class, access modes and selector that is large enough, reachable from
// the node and not in `excluded`.
PVPtr FindMatchingVolume(const api::PersistentVolumeClaim& claim, const std::vector<PVPtr>& volumes,
                         const api::Node& node, const std::vector<std::string>& excluded);

// Whether the volume's claimRef names this claim (by uid too, when the reference has one).
bool IsVolumeBoundToClaim(const api::PersistentVolume& pv, const api::PersistentVolumeClaim& claim);

}  // namespace berth::plugins::volumebinding

#endif  // BERTH_PKG_PLUGINS_VOLUMEBINDING_BINDER_H_
