#include "pkg/plugins/volumerestrictions/volumerestrictions.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>

#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/helper/volumes.h"

namespace berth::plugins::volumerestrictions {
namespace {

using framework::QueueingHint;
using framework::Status;

const framework::StateKey& StateKeyOf() {
  static const framework::StateKey kKey{"PreFilter" + std::string(kName)};
  return kKey;
}

// The pod's ReadWriteOncePod claims (by name) and how many uses of them by other pods the cycle
// sees; AddPod and RemovePod move the count, so a copy is deep.
class State final : public framework::StateData {
 public:
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<State>(*this);
  }
  // How many of the pod's volumes name one of the claims.
  int UsesBy(const api::Pod& pod) const {
    int uses = 0;
    for (const api::Volume& volume : pod.spec.volumes) {
      if (volume.source == "persistentVolumeClaim" &&
          read_write_once_pod.count(volume.claim_name)) {
        uses++;
      }
    }
    return uses;
  }

  std::set<std::string> read_write_once_pod;
  int conflicting_uses = 0;
};

bool IsInTreeDisk(const api::Volume& volume) {
  return volume.source == "gcePersistentDisk" || volume.source == "awsElasticBlockStore" ||
         volume.source == "rbd" || volume.source == "iscsi";
}

bool Overlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::any_of(a.begin(), a.end(), [&](const std::string& x) {
    return std::find(b.begin(), b.end(), x) != b.end();
  });
}

}  // namespace

bool VolumeConflicts(const api::Volume& volume, const api::Pod& existing) {
  for (const api::Volume& other : existing.spec.volumes) {
    if (other.source != volume.source) continue;
    const bool both_read_only = volume.read_only && other.read_only;
    if (volume.source == "gcePersistentDisk" || volume.source == "iscsi") {
      if (volume.disk == other.disk && !both_read_only) return true;
    } else if (volume.source == "awsElasticBlockStore") {
      if (volume.disk == other.disk) return true;
    } else if (volume.source == "rbd") {
      if (Overlap(volume.rbd_monitors, other.rbd_monitors) && volume.rbd_pool == other.rbd_pool &&
          volume.disk == other.disk && !both_read_only) {
        return true;
      }
    }
  }
  return false;
}

bool SatisfiesVolumeConflicts(const api::Pod& pod, const std::vector<framework::PodInfoPtr>& pods) {
  for (const api::Volume& volume : pod.spec.volumes) {
    if (!IsInTreeDisk(volume)) continue;
    for (const auto& existing : pods) {
      if (VolumeConflicts(volume, *existing->pod)) return false;
    }
  }
  return true;
}

VolumeRestrictions::VolumeRestrictions(informer::Lister<api::PersistentVolumeClaim> claims,
                                       const framework::NodeInfoLister& snapshot)
    : claims_(claims), snapshot_(snapshot) {}

Status VolumeRestrictions::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                     const std::vector<framework::NodeInfoPtr>&,
                                     framework::PreFilterResult*) {
  if (pod.spec.volumes.empty()) return Status::Skip();
  const bool needs_check = std::any_of(pod.spec.volumes.begin(), pod.spec.volumes.end(),
                                       [](const api::Volume& v) { return IsInTreeDisk(v); });
  auto s = std::make_shared<State>();
  for (const api::Volume& volume : pod.spec.volumes) {
    if (volume.source != "persistentVolumeClaim") continue;
    api::PersistentVolumeClaimPtr claim = claims_.Get(pod.meta.namespace_, volume.claim_name);
    if (!claim) {
      return Status::Unresolvable(
          helper::NotFoundMessage("persistentvolumeclaim", volume.claim_name));
    }
    if (claim->HasAccessMode(api::PersistentVolumeAccessMode::kReadWriteOncePod)) {
      s->read_write_once_pod.insert(claim->meta.name);
    }
  }
  for (const std::string& name : s->read_write_once_pod) {
    if (snapshot_.IsPVCUsedByPods(pod.meta.namespace_ + "/" + name)) s->conflicting_uses++;
  }
  if (!needs_check && s->conflicting_uses == 0) return Status::Skip();
  state.Write(StateKeyOf(), std::move(s));
  return {};
}

Status VolumeRestrictions::AddPod(framework::CycleState& state, const api::Pod&,
                                  const framework::PodInfo& pod_to_add,
                                  const framework::NodeInfo&) {
  State* s = state.Read<State>(StateKeyOf());
  if (s == nullptr)
    return Status::Error("cannot read \"PreFilterVolumeRestrictions\" from cycleState");
  s->conflicting_uses += s->UsesBy(*pod_to_add.pod);
  return {};
}

Status VolumeRestrictions::RemovePod(framework::CycleState& state, const api::Pod&,
                                     const framework::PodInfo& pod_to_remove,
                                     const framework::NodeInfo&) {
  State* s = state.Read<State>(StateKeyOf());
  if (s == nullptr)
    return Status::Error("cannot read \"PreFilterVolumeRestrictions\" from cycleState");
  s->conflicting_uses -= s->UsesBy(*pod_to_remove.pod);
  return {};
}

Status VolumeRestrictions::Filter(const framework::CycleState& state, const api::Pod& pod,
                                  const framework::NodeInfo& node) {
  static const framework::FixedReasons kDisk(kErrReasonDiskConflict);
  static const framework::FixedReasons kReadWriteOncePod(kErrReasonReadWriteOncePodConflict);
  if (!SatisfiesVolumeConflicts(pod, node.pods())) return Status::Unschedulable(kDisk);
  const State* s = state.Read<State>(StateKeyOf());
  if (s == nullptr)
    return Status::Error("cannot read \"PreFilterVolumeRestrictions\" from cycleState");
  if (s->conflicting_uses > 0) return Status::Unschedulable(kReadWriteOncePod);
  return {};
}

QueueingHint IsSchedulableAfterAssignedPodDeleted(const api::Pod& pod,
                                                  const framework::EventObjects& event) {
  const api::PodPtr& deleted = event.old_pod;
  if (!deleted) return QueueingHint::kQueue;
  if (deleted->meta.namespace_ != pod.meta.namespace_) return QueueingHint::kSkip;
  // Its disks are free again.
  if (!SatisfiesVolumeConflicts(pod, {std::make_shared<framework::PodInfo>(deleted)})) {
    return QueueingHint::kQueue;
  }
  for (const api::Volume& mine : pod.spec.volumes) {
    if (mine.source != "persistentVolumeClaim") continue;
    for (const api::Volume& theirs : deleted->spec.volumes) {
      if (theirs.source == "persistentVolumeClaim" && theirs.claim_name == mine.claim_name) {
        return QueueingHint::kQueue;
      }
    }
  }
  return QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterClaimAdded(const api::Pod& pod,
                                          const framework::EventObjects& event) {
  auto claim = event.NewAs<api::PersistentVolumeClaim>();
  if (!claim) return QueueingHint::kQueue;
  if (claim->meta.namespace_ != pod.meta.namespace_) return QueueingHint::kSkip;
  for (const api::Volume& volume : pod.spec.volumes) {
    if (volume.source == "persistentVolumeClaim" && volume.claim_name == claim->meta.name) {
      return QueueingHint::kQueue;
    }
  }
  return QueueingHint::kSkip;
}

std::vector<framework::ClusterEventWithHint> VolumeRestrictions::EventsToRegister() const {
  using framework::EventResource;
  return {
      {{EventResource::kPod, framework::kDelete, "AssignedPodDelete"},
       IsSchedulableAfterAssignedPodDeleted},
      {{EventResource::kNode, framework::kAdd, "NodeAdd"}, nullptr},
      {{EventResource::kPersistentVolumeClaim, framework::kAdd, ""}, IsSchedulableAfterClaimAdded},
  };
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle) {
  framework::ExpectNoArgs(args);
  return std::make_shared<VolumeRestrictions>(
      handle.SharedInformerFactory().ListerFor<api::PersistentVolumeClaim>(),
      handle.SnapshotSharedLister());
}

}  // namespace berth::plugins::volumerestrictions
