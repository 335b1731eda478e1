#include "pkg/plugins/nodevolumelimits/nodevolumelimits.h"

#include <algorithm>
#include <optional>
#include <random>
#include <stdexcept>

#include "pkg/framework/args.h"
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

// The pod's attachable volumes, worked out once per cycle. They depend on the node only through
// whether it has a CSINode at all (in-tree volumes count as CSI volumes only there), so both
// answers are kept.
class State final : public framework::StateData {
 public:
  struct Volumes {
    Status status;  // AttachableVolumes' verdict.
    std::vector<Attachable> volumes;
    // Their drivers whose CSIDriver asks for pods to wait until it is installed on the node.
    std::vector<std::string> must_be_installed;
  };
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<State>(*this);
  }
  Volumes without_csi_node;
  Volumes with_csi_node;
  uint64_t storage_epoch = 0;
};

// Adds `amount` to `driver`'s entry of a sorted driver -> amount list.
void AddTo(std::vector<std::pair<std::string, int64_t>>* list, const std::string& driver,
           int64_t amount) {
  auto it = std::lower_bound(list->begin(), list->end(), driver,
                             [](const auto& e, const std::string& d) { return e.first < d; });
  if (it == list->end() || it->first != driver) it = list->insert(it, {driver, 0});
  it->second += amount;
}

// `driver`'s amount in a sorted list, or nullopt.
std::optional<int64_t> Find(const std::vector<std::pair<std::string, int64_t>>& list,
                            const std::string& driver) {
  auto it = std::lower_bound(list.begin(), list.end(), driver,
                             [](const auto& e, const std::string& d) { return e.first < d; });
  if (it == list.end() || it->first != driver) return std::nullopt;
  return it->second;
}

bool Contains(const std::vector<Attachable>& sorted, const std::string& name) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), name,
                             [](const Attachable& a, const std::string& n) { return a.first < n; });
  return it != sorted.end() && it->first == name;
}

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

// Bumps `epoch` on every change the informer delivers.
template <typename T>
void BumpOnChange(informer::Informer<T>& informer,
                  const std::shared_ptr<std::atomic<uint64_t>>& epoch) {
  informer::EventHandler<T> handler;
  handler.on_add = [epoch](const std::shared_ptr<const T>&) { epoch->fetch_add(1); };
  handler.on_update = [epoch](const std::shared_ptr<const T>&, const std::shared_ptr<const T>&) {
    epoch->fetch_add(1);
  };
  handler.on_delete = [epoch](const std::shared_ptr<const T>&) { epoch->fetch_add(1); };
  informer.AddEventHandler(std::move(handler));
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
                                   std::string volume_id_prefix,
                                   std::shared_ptr<const std::atomic<uint64_t>> storage_epoch)
    : listers_(listers),
      attachments_(std::move(attachments)),
      volume_id_prefix_(std::move(volume_id_prefix)),
      storage_epoch_(std::move(storage_epoch)) {}

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
    if (csi_node == nullptr || !plugin->counts_for_limits) return {};
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
  if (plugin == nullptr || csi_node == nullptr || !plugin->counts_for_limits) return {};
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
      if (plugin == nullptr || csi_node == nullptr || !plugin->counts_for_limits) continue;
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
                                   const std::vector<framework::NodeInfoPtr>& nodes,
                                   framework::PreFilterResult*) {
  const bool counted =
      std::any_of(pod.spec.volumes.begin(), pod.spec.volumes.end(), [&](const api::Volume& v) {
        return helper::ClaimOf(pod, v).has_value() || InlineMigratable(v);
      });
  if (!counted) return Status::Skip();
  tracker_.Sync(nodes);
  by_position_.resize(tracker_.nodes().size());
  for (size_t i : tracker_.changed_now()) by_position_[i].reset();
  auto s = std::make_shared<State>();
  s->storage_epoch = storage_epoch_->load();
  static const api::CSINode kSomeCSINode;
  s->without_csi_node.status = AttachableVolumes(pod, nullptr, true, &s->without_csi_node.volumes);
  s->with_csi_node.status = AttachableVolumes(pod, &kSomeCSINode, true, &s->with_csi_node.volumes);
  for (State::Volumes* v : {&s->without_csi_node, &s->with_csi_node}) {
    Dedupe(&v->volumes);
    v->must_be_installed = MustBeInstalled(v->volumes);
  }
  state.Write(StateKeyOf(), std::move(s));
  return {};
}

std::shared_ptr<const NodeAttachments> NodeVolumeLimits::Attachments(
    const framework::NodeInfo& node, uint64_t epoch) const {
  auto out = std::make_shared<NodeAttachments>();
  out->epoch = epoch;
  out->csi_node = listers_.csi_nodes.Get(node.name());
  if (out->csi_node) {
    for (const api::CSINodeDriver& d : out->csi_node->drivers) {
      if (d.allocatable_count) AddTo(&out->limits, d.name, *d.allocatable_count);
    }
  }
  if (out->limits.empty()) return out;
  for (const auto& existing : node.pods()) {
    if (existing->pod->spec.volumes.empty()) continue;
    Status s = AttachableVolumes(*existing->pod, out->csi_node.get(), false, &out->attached);
    if (!s.IsSuccess()) {
      out->status = Status::Error(s.Message());
      return out;
    }
  }
  Dedupe(&out->attached);
  for (const auto& [name, driver] : out->attached) AddTo(&out->counts, driver, 1);
  // Volumes still attached to the node whose pods are gone count too.
  for (const auto& attachment : attachments_->OnNode(node.name())) {
    if (attachment->attacher.empty() || attachment->persistent_volume_name.empty()) continue;
    api::PersistentVolumePtr pv = listers_.volumes.Get(attachment->persistent_volume_name);
    if (!pv || !pv->spec.csi) continue;
    std::string name = attachment->attacher;
    name.append("/").append(pv->spec.csi->volume_handle);
    if (!Contains(out->attached, name)) AddTo(&out->counts, attachment->attacher, 1);
  }
  return out;
}

Status NodeVolumeLimits::Filter(const framework::CycleState& state, const api::Pod& pod,
                                const framework::NodeInfo& node) {
  if (pod.spec.volumes.empty()) return {};
  const State* s = state.Read<State>(StateKeyOf());
  const uint64_t epoch = s != nullptr ? s->storage_epoch : storage_epoch_->load();
  std::shared_ptr<const NodeAttachments> computed;
  const NodeAttachments* attachments = nullptr;
  if (s != nullptr && tracker_.Listed(node) && node.list_index() < by_position_.size()) {
    std::shared_ptr<const NodeAttachments>& kept = by_position_[node.list_index()];
    if (!kept || kept->epoch != epoch) kept = Attachments(node, epoch);
    attachments = kept.get();
  } else {
    computed = Attachments(node, epoch);
    attachments = computed.get();
  }
  if (s != nullptr) {
    const State::Volumes& v = attachments->csi_node ? s->with_csi_node : s->without_csi_node;
    if (!v.status.IsSuccess()) return v.status;
    return FilterWith(*attachments, v.volumes, v.must_be_installed);
  }
  std::vector<Attachable> volumes;
  Status st = AttachableVolumes(pod, attachments->csi_node.get(), true, &volumes);
  if (!st.IsSuccess()) return st;
  Dedupe(&volumes);
  return FilterWith(*attachments, volumes, MustBeInstalled(volumes));
}

std::vector<std::string> NodeVolumeLimits::MustBeInstalled(
    const std::vector<Attachable>& volumes) const {
  std::vector<std::string> drivers;
  for (const auto& [name, driver] : volumes) {
    if (std::find(drivers.begin(), drivers.end(), driver) != drivers.end()) continue;
    api::CSIDriverPtr spec = listers_.csi_drivers.Get(driver);
    if (spec && spec->prevent_pod_scheduling_if_missing) drivers.push_back(driver);
  }
  std::sort(drivers.begin(), drivers.end());
  return drivers;
}

Status NodeVolumeLimits::FilterWith(const NodeAttachments& node,
                                    const std::vector<Attachable>& new_volumes,
                                    const std::vector<std::string>& must_be_installed) const {
  if (new_volumes.empty()) return {};
  for (const std::string& driver : must_be_installed) {
    if (!node.csi_node || node.csi_node->FindDriver(driver) == nullptr) {
      return Status::Unschedulable(driver + " CSI driver is not installed on the node");
    }
  }
  if (node.limits.empty()) return {};
  if (!node.status.IsSuccess()) return node.status;
  // Filter runs for every node: the few new volumes are counted by driver in place.
  static const framework::FixedReasons kExceeded(kErrReasonMaxVolumeCountExceeded);
  const auto is_new = [&](const Attachable& v) { return !Contains(node.attached, v.first); };
  for (size_t i = 0; i < new_volumes.size(); i++) {
    const std::string& driver = new_volumes[i].second;
    if (!is_new(new_volumes[i])) continue;
    bool counted_before = false;
    for (size_t j = 0; j < i && !counted_before; j++) {
      counted_before = new_volumes[j].second == driver && is_new(new_volumes[j]);
    }
    if (counted_before) continue;
    const std::optional<int64_t> limit = Find(node.limits, driver);
    if (!limit) continue;
    int64_t count = 0;
    for (size_t j = i; j < new_volumes.size(); j++) {
      if (new_volumes[j].second == driver && is_new(new_volumes[j])) count++;
    }
    if (Find(node.counts, driver).value_or(0) + count > *limit) {
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
  framework::ExpectNoArgs(args);
  auto& informers = handle.SharedInformerFactory();
  Listers listers{informers.ListerFor<api::PersistentVolumeClaim>(),
                  informers.ListerFor<api::PersistentVolume>(),
                  informers.ListerFor<api::StorageClass>(), informers.ListerFor<api::CSINode>(),
                  informers.ListerFor<api::CSIDriver>()};
  auto epoch = std::make_shared<std::atomic<uint64_t>>(0);
  BumpOnChange(informers.For<api::PersistentVolumeClaim>(), epoch);
  BumpOnChange(informers.For<api::PersistentVolume>(), epoch);
  BumpOnChange(informers.For<api::StorageClass>(), epoch);
  BumpOnChange(informers.For<api::CSINode>(), epoch);
  BumpOnChange(informers.For<api::VolumeAttachment>(), epoch);
  return std::make_shared<NodeVolumeLimits>(
      listers, AttachmentIndex::New(informers.For<api::VolumeAttachment>()), RandomPrefix(),
      std::move(epoch));
}

}  // namespace berth::plugins::nodevolumelimits
