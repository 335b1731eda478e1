#include "pkg/plugins/nodevolumelimits/nodevolumelimits.h"

#include <algorithm>
#include <random>
#include <stdexcept>

#include "pkg/informer/factory.h"
#include "pkg/plugins/helper/volumes.h"

namespace berth::plugins::nodevolumelimits {
namespace {

using framework::QueueingHint;
using framework::Status;

const framework::StateKey& StateKeyOf() {
  static const framework::StateKey kKey{"PreFilter" + std::string(kName)};
  return kKey;
}

// The pod's attachable volumes when they do not depend on the node (the common case), worked out
// once per cycle; otherwise Filter works them out per node.
class State final : public framework::StateData {
 public:
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<State>(*this);
  }
  bool node_independent = false;
  Status status;  // AttachableVolumes' verdict, when node_independent.
  std::vector<Attachable> volumes;
};

// Sorted by name, each name once (a volume the pod mounts twice counts once).
void Dedupe(std::vector<Attachable>* volumes) {
  std::sort(volumes->begin(), volumes->end());
  volumes->erase(
      std::unique(volumes->begin(), volumes->end(),
                  [](const Attachable& a, const Attachable& b) { return a.first == b.first; }),
      volumes->end());
}

std::string RandomPrefix() {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::random_device device;
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string out;
  for (int i = 0; i < 32; i++) out += kAlphabet[pick(device)];
  return out;
}

// An in-tree volume CSI migration can hand to a driver (whether or not this scheduler counts it).
bool InlineMigratable(const api::Volume& volume) {
  return helper::InTreePluginForSource(volume.source) != nullptr;
}

}  // namespace

std::shared_ptr<AttachmentIndex> AttachmentIndex::New(
    informer::Informer<api::VolumeAttachment>& informer) {
  auto index = std::make_shared<AttachmentIndex>();
  std::weak_ptr<AttachmentIndex> weak = index;
  informer::EventHandler<api::VolumeAttachment> handler;
  handler.on_add = [weak](const api::VolumeAttachmentPtr& object) {
    if (auto i = weak.lock()) i->Put(nullptr, object);
  };
  handler.on_update = [weak](const api::VolumeAttachmentPtr& old_object,
                             const api::VolumeAttachmentPtr& object) {
    if (auto i = weak.lock()) i->Put(old_object, object);
  };
  handler.on_delete = [weak](const api::VolumeAttachmentPtr& object) {
    if (auto i = weak.lock()) i->Put(object, nullptr);
  };
  informer.AddEventHandler(std::move(handler));
  return index;
}

void AttachmentIndex::Put(const api::VolumeAttachmentPtr& old_object,
                          const api::VolumeAttachmentPtr& object) {
  std::lock_guard lock(mu_);
  if (old_object) {
    auto node = by_node_.find(old_object->node_name);
    if (node != by_node_.end()) {
      node->second.erase(old_object->meta.name);
      if (node->second.empty()) by_node_.erase(node);
    }
  }
  if (object) by_node_[object->node_name][object->meta.name] = object;
}

std::vector<api::VolumeAttachmentPtr> AttachmentIndex::OnNode(const std::string& node) const {
  std::lock_guard lock(mu_);
  std::vector<api::VolumeAttachmentPtr> out;
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return out;
  for (const auto& [name, attachment] : it->second) out.push_back(attachment);
  return out;
}

NodeVolumeLimits::NodeVolumeLimits(Listers listers,
                                   std::shared_ptr<const AttachmentIndex> attachments,
                                   std::string volume_id_prefix)
    : listers_(listers),
      attachments_(std::move(attachments)),
      volume_id_prefix_(std::move(volume_id_prefix)) {}

Attachable NodeVolumeLimits::DriverOfClass(const api::CSINode* csi_node,
                                           const api::PersistentVolumeClaim& claim) const {
  const std::string& class_name = claim.StorageClassName();
  if (class_name.empty()) return {};
  api::StorageClassPtr storage_class = listers_.classes.Get(class_name);
  if (!storage_class) return {};
  // The handle the provisioned volume will have is unknown: one made up per claim stands for it.
  std::string handle = volume_id_prefix_ + "-" + claim.meta.namespace_ + "/" + claim.meta.name;
  const std::string& provisioner = storage_class->provisioner;
  if (const helper::InTreePlugin* plugin = helper::InTreePluginByName(provisioner)) {
    if (csi_node == nullptr || !plugin->scheduler_translates) return {};
    return {std::move(handle), std::string(plugin->csi_driver)};
  }
  return {std::move(handle), provisioner};
}

Attachable NodeVolumeLimits::DriverOfClaim(const api::CSINode* csi_node,
                                           const api::PersistentVolumeClaim& claim) const {
  if (claim.spec.volume_name.empty()) return DriverOfClass(csi_node, claim);
  api::PersistentVolumePtr pv = listers_.volumes.Get(claim.spec.volume_name);
  if (!pv) return DriverOfClass(csi_node, claim);
  if (pv->spec.csi) return {pv->spec.csi->volume_handle, pv->spec.csi->driver};
  const helper::InTreePlugin* plugin = helper::InTreePluginForSource(pv->spec.source);
  if (plugin == nullptr || csi_node == nullptr || !plugin->scheduler_translates) return {};
  helper::TranslatedVolume translated = helper::TranslateInTreeVolume(*pv, *plugin);
  if (!translated.error.empty()) return {};
  return {std::move(translated.volume_handle), std::move(translated.driver)};
}

Status NodeVolumeLimits::AttachableVolumes(const api::Pod& pod, const api::CSINode* csi_node,
                                           bool new_pod, std::vector<Attachable>* out) const {
  for (const api::Volume& volume : pod.spec.volumes) {
    const auto claim_ref = helper::ClaimOf(pod, volume);
    if (!claim_ref) {
      const helper::InTreePlugin* plugin = helper::InTreePluginForSource(volume.source);
      if (plugin == nullptr || csi_node == nullptr || !plugin->scheduler_translates) continue;
      helper::TranslatedVolume translated = helper::TranslateInlineVolume(volume, *plugin);
      if (!translated.error.empty()) {
        return Status::Error("converting volume(" + volume.name +
                             ") from inline to csi: " + translated.error);
      }
      out->push_back({translated.driver + "/" + translated.volume_handle, translated.driver});
      continue;
    }
    if (claim_ref->name.empty()) return Status::Error("PersistentVolumeClaim had no name");
    api::PersistentVolumeClaimPtr claim = listers_.claims.Get(pod.meta.namespace_, claim_ref->name);
    if (!claim) {
      if (!new_pod) continue;
      return Status::Unresolvable(
          "looking up PVC " + pod.meta.namespace_ + "/" + claim_ref->name + ": " +
          helper::NotFoundMessage("persistentvolumeclaim", claim_ref->name));
    }
    if (claim_ref->ephemeral) {
      if (std::string owner = helper::EphemeralClaimOwnerError(pod, *claim); !owner.empty()) {
        return Status::Error(owner);
      }
    }
    auto [handle, driver] = DriverOfClaim(csi_node, *claim);
    if (handle.empty() || driver.empty()) continue;
    std::string name = driver;
    name.append("/").append(handle);
    out->push_back({std::move(name), std::move(driver)});
  }
  return {};
}

Status NodeVolumeLimits::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                   const std::vector<framework::NodeInfoPtr>&,
                                   framework::PreFilterResult*) {
  const bool counted =
      std::any_of(pod.spec.volumes.begin(), pod.spec.volumes.end(), [&](const api::Volume& v) {
        return helper::ClaimOf(pod, v).has_value() || InlineMigratable(v);
      });
  if (!counted) return Status::Skip();
  // Migration depends on the node only through whether it has a CSINode at all: the volumes are
  // node-independent when both answers agree.
  auto s = std::make_shared<State>();
  static const api::CSINode kSomeCSINode;
  std::vector<Attachable> with_csi_node;
  s->status = AttachableVolumes(pod, nullptr, true, &s->volumes);
  Status with = AttachableVolumes(pod, &kSomeCSINode, true, &with_csi_node);
  Dedupe(&s->volumes);
  Dedupe(&with_csi_node);
  s->node_independent = s->status.code() == with.code() && s->status.reasons() == with.reasons() &&
                        s->volumes == with_csi_node;
  state.Write(StateKeyOf(), std::move(s));
  return {};
}

Status NodeVolumeLimits::Filter(const framework::CycleState& state, const api::Pod& pod,
                                const framework::NodeInfo& node) {
  if (pod.spec.volumes.empty()) return {};
  api::CSINodePtr csi_node = listers_.csi_nodes.Get(node.name());
  const State* s = state.Read<State>(StateKeyOf());
  if (s != nullptr && s->node_independent) {
    if (!s->status.IsSuccess()) return s->status;
    return FilterWith(pod, node, csi_node.get(), s->volumes);
  }
  std::vector<Attachable> volumes;
  if (Status st = AttachableVolumes(pod, csi_node.get(), true, &volumes); !st.IsSuccess()) {
    return st;
  }
  Dedupe(&volumes);
  return FilterWith(pod, node, csi_node.get(), volumes);
}

Status NodeVolumeLimits::FilterWith(const api::Pod&, const framework::NodeInfo& node,
                                    const api::CSINode* csi_node,
                                    const std::vector<Attachable>& new_volumes) const {
  if (new_volumes.empty()) return {};
  // A driver that asks for pods to wait until it is installed on the node.
  std::vector<std::string> drivers;
  drivers.reserve(new_volumes.size());
  for (const auto& [name, driver] : new_volumes) drivers.push_back(driver);
  std::sort(drivers.begin(), drivers.end());
  drivers.erase(std::unique(drivers.begin(), drivers.end()), drivers.end());
  for (const std::string& driver : drivers) {
    api::CSIDriverPtr spec = listers_.csi_drivers.Get(driver);
    if (!spec || !spec->prevent_pod_scheduling_if_missing) continue;
    if (csi_node == nullptr || csi_node->FindDriver(driver) == nullptr) {
      return Status::Unschedulable(driver + " CSI driver is not installed on the node");
    }
  }
  std::map<std::string, int64_t> limits;
  if (csi_node != nullptr) {
    for (const api::CSINodeDriver& d : csi_node->drivers) {
      if (d.allocatable_count) limits[d.name] = *d.allocatable_count;
    }
  }
  if (limits.empty()) return {};

  std::vector<Attachable> attached;
  for (const auto& existing : node.pods()) {
    if (existing->pod->spec.volumes.empty()) continue;
    if (Status s = AttachableVolumes(*existing->pod, csi_node, false, &attached); !s.IsSuccess()) {
      return Status::Error(s.Message());
    }
  }
  Dedupe(&attached);
  std::map<std::string, int64_t> attached_count;
  for (const auto& [name, driver] : attached) attached_count[driver]++;
  const auto is_attached = [&](const std::string& name) {
    auto it =
        std::lower_bound(attached.begin(), attached.end(), name,
                         [](const Attachable& a, const std::string& n) { return a.first < n; });
    return it != attached.end() && it->first == name;
  };
  for (const auto& attachment : attachments_->OnNode(node.name())) {
    if (attachment->attacher.empty() || attachment->persistent_volume_name.empty()) continue;
    api::PersistentVolumePtr pv = listers_.volumes.Get(attachment->persistent_volume_name);
    if (!pv || !pv->spec.csi) continue;
    if (!is_attached(attachment->attacher + "/" + pv->spec.csi->volume_handle)) {
      attached_count[attachment->attacher]++;
    }
  }
  std::map<std::string, int64_t> new_count;
  for (const auto& [name, driver] : new_volumes) {
    if (!is_attached(name)) new_count[driver]++;
  }
  static const framework::FixedReasons kExceeded(kErrReasonMaxVolumeCountExceeded);
  for (const auto& [driver, count] : new_count) {
    auto limit = limits.find(driver);
    if (limit != limits.end() && attached_count[driver] + count > limit->second) {
      return Status::Unschedulable(kExceeded);
    }
  }
  return {};
}

QueueingHint IsSchedulableAfterCSINodeUpdated(const api::Pod&,
                                              const framework::EventObjects& event) {
  auto before = event.OldAs<api::CSINode>();
  auto after = event.NewAs<api::CSINode>();
  if (!before || !after) return QueueingHint::kQueue;
  for (const api::CSINodeDriver& d : after->drivers) {
    const api::CSINodeDriver* old_driver = before->FindDriver(d.name);
    const int32_t old_limit =
        old_driver != nullptr && old_driver->allocatable_count ? *old_driver->allocatable_count : 0;
    if (d.allocatable_count.value_or(0) > old_limit) return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterAssignedPodDeleted(const api::Pod&,
                                                  const framework::EventObjects& event) {
  const api::PodPtr& deleted = event.old_pod;
  if (!deleted) return QueueingHint::kQueue;
  if (deleted->spec.volumes.empty()) return QueueingHint::kSkip;
  if (deleted->spec.node_name.empty() && deleted->status.nominated_node_name.empty()) {
    return QueueingHint::kSkip;
  }
  for (const api::Volume& volume : deleted->spec.volumes) {
    if (helper::ClaimOf(*deleted, volume) || InlineMigratable(volume)) return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterClaimAdded(const api::Pod& pod,
                                          const framework::EventObjects& event) {
  auto claim = event.NewAs<api::PersistentVolumeClaim>();
  if (!claim) return QueueingHint::kQueue;
  if (claim->meta.namespace_ != pod.meta.namespace_) return QueueingHint::kSkip;
  for (const api::Volume& volume : pod.spec.volumes) {
    auto ref = helper::ClaimOf(pod, volume);
    if (ref && ref->name == claim->meta.name) return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterAttachmentDeleted(const api::Pod& pod,
                                                 const framework::EventObjects& event) {
  auto attachment = event.OldAs<api::VolumeAttachment>();
  if (!attachment) return QueueingHint::kQueue;
  for (const api::Volume& volume : pod.spec.volumes) {
    if (volume.source == "persistentVolumeClaim") return QueueingHint::kQueue;
    const helper::InTreePlugin* plugin = helper::InTreePluginForSource(volume.source);
    if (plugin == nullptr) continue;
    helper::TranslatedVolume translated = helper::TranslateInlineVolume(volume, *plugin);
    if (!translated.error.empty() || translated.driver == attachment->attacher) {
      return QueueingHint::kQueue;
    }
  }
  return QueueingHint::kSkip;
}

std::vector<framework::ClusterEventWithHint> NodeVolumeLimits::EventsToRegister() const {
  using framework::EventResource;
  return {
      {{EventResource::kCSINode, framework::kAdd, ""}, nullptr},
      {{EventResource::kCSINode, framework::kUpdate, ""}, IsSchedulableAfterCSINodeUpdated},
      {{EventResource::kPod, framework::kDelete, "AssignedPodDelete"},
       IsSchedulableAfterAssignedPodDeleted},
      {{EventResource::kPersistentVolumeClaim, framework::kAdd, ""}, IsSchedulableAfterClaimAdded},
      {{EventResource::kVolumeAttachment, framework::kDelete, ""},
       IsSchedulableAfterAttachmentDeleted},
  };
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle) {
  if (!args.is_null() && !args.empty()) {
    throw std::invalid_argument(std::string(kName) + ": plugin takes no args");
  }
  auto& informers = handle.SharedInformerFactory();
  Listers listers{informers.ListerFor<api::PersistentVolumeClaim>(),
                  informers.ListerFor<api::PersistentVolume>(),
                  informers.ListerFor<api::StorageClass>(), informers.ListerFor<api::CSINode>(),
                  informers.ListerFor<api::CSIDriver>()};
  return std::make_shared<NodeVolumeLimits>(
      listers, AttachmentIndex::New(informers.For<api::VolumeAttachment>()), RandomPrefix());
}

}  // namespace berth::plugins::nodevolumelimits
