#include "pkg/plugins/volumezone/volumezone.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>
#include <stdexcept>
#include <utility>

#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/helper/volumes.h"

namespace berth::plugins::volumezone {
namespace {

using framework::QueueingHint;
using framework::Status;

// In the order upstream reads them.
constexpr std::string_view kTopologyLabels[] = {helper::kLabelBetaZone, helper::kLabelBetaRegion,
                                                helper::kLabelTopologyZone,
                                                helper::kLabelTopologyRegion};

std::string_view GAKey(std::string_view key) {
  if (key == helper::kLabelBetaZone) return helper::kLabelTopologyZone;
  if (key == helper::kLabelBetaRegion) return helper::kLabelTopologyRegion;
  return key;
}

const framework::StateKey& StateKeyOf() {
  static const framework::StateKey kKey{"PreFilter" + std::string(kName)};
  return kKey;
}

class State final : public framework::StateData {
 public:
  explicit State(std::vector<VolumeTopology> t) : topologies(std::move(t)) {}
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<State>(*this);
  }
  std::vector<VolumeTopology> topologies;
};

// The claims the pod names directly; generic ephemeral volumes are not read here.
std::vector<std::string> ClaimNames(const api::Pod& pod) {
  std::vector<std::string> names;
  for (const api::Volume& volume : pod.spec.volumes) {
    if (volume.source == "persistentVolumeClaim") names.push_back(volume.claim_name);
  }
  return names;
}

}  // namespace

std::vector<VolumeTopology> TopologiesOf(const api::PersistentVolume& pv) {
  std::vector<VolumeTopology> out;
  for (std::string_view key : kTopologyLabels) {
    const std::string* value = pv.meta.labels.Find(key);
    if (value == nullptr) continue;
    std::set<std::string> zones;
    bool valid = true;
    size_t start = 0;
    while (valid) {
      const size_t at = value->find(helper::kZoneDelimiter, start);
      std::string_view zone = std::string_view(*value).substr(
          start, at == std::string::npos ? std::string::npos : at - start);
      while (!zone.empty() && std::isspace(static_cast<unsigned char>(zone.front()))) {
        zone.remove_prefix(1);
      }
      while (!zone.empty() && std::isspace(static_cast<unsigned char>(zone.back()))) {
        zone.remove_suffix(1);
      }
      if (zone.empty()) valid = false;
      zones.emplace(zone);
      if (at == std::string::npos) break;
      start = at + helper::kZoneDelimiter.size();
    }
    // A malformed label is ignored, as upstream ignores what it cannot parse.
    if (!valid) continue;
    out.push_back({pv.meta.name, std::string(key), {zones.begin(), zones.end()}});
  }
  return out;
}

VolumeZone::VolumeZone(informer::Lister<api::PersistentVolumeClaim> claims,
                       informer::Lister<api::PersistentVolume> volumes,
                       informer::Lister<api::StorageClass> classes)
    : claims_(claims), volumes_(volumes), classes_(classes) {}

Status VolumeZone::VolumeTopologies(const api::Pod& pod, std::vector<VolumeTopology>* out) const {
  for (const std::string& name : ClaimNames(pod)) {
    if (name.empty()) return Status::Unresolvable("PersistentVolumeClaim had no name");
    api::PersistentVolumeClaimPtr claim = claims_.Get(pod.meta.namespace_, name);
    if (!claim) return Status::Unresolvable(helper::NotFoundMessage("persistentvolumeclaim", name));
    const std::string& volume_name = claim->spec.volume_name;
    if (volume_name.empty()) {
      const std::string& class_name = claim->StorageClassName();
      if (class_name.empty()) {
        return Status::Unresolvable("PersistentVolumeClaim had no pv name and storageClass name");
      }
      api::StorageClassPtr storage_class = classes_.Get(class_name);
      if (!storage_class) {
        return Status::Unresolvable(
            helper::NotFoundMessage("storageclass.storage.k8s.io", class_name));
      }
      // Not bound yet: VolumeBinding chooses its volume for the node.
      if (storage_class->volume_binding_mode == api::VolumeBindingMode::kWaitForFirstConsumer) {
        continue;
      }
      return Status::Unresolvable("PersistentVolume had no name");
    }
    api::PersistentVolumePtr pv = volumes_.Get(volume_name);
    if (!pv) return Status::Unresolvable(helper::NotFoundMessage("persistentvolume", volume_name));
    std::vector<VolumeTopology> topologies = TopologiesOf(*pv);
    out->insert(out->end(), topologies.begin(), topologies.end());
  }
  return {};
}

Status VolumeZone::PreFilter(framework::CycleState& state, const api::Pod& pod,
                             const std::vector<framework::NodeInfoPtr>&,
                             framework::PreFilterResult*) {
  std::vector<VolumeTopology> topologies;
  if (Status s = VolumeTopologies(pod, &topologies); !s.IsSuccess()) return s;
  if (topologies.empty()) return Status::Skip();
  state.Write(StateKeyOf(), std::make_shared<State>(std::move(topologies)));
  return {};
}

Status VolumeZone::Filter(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node) {
  if (pod.spec.volumes.empty()) return {};
  std::vector<VolumeTopology> computed;
  const std::vector<VolumeTopology>* topologies = nullptr;
  if (const State* s = state.Read<State>(StateKeyOf())) {
    topologies = &s->topologies;
  } else {
    if (Status s = VolumeTopologies(pod, &computed); !s.IsSuccess()) return s;
    topologies = &computed;
  }
  const api::Labels& labels = node.node()->meta.labels;
  const bool constrained = std::any_of(std::begin(kTopologyLabels), std::end(kTopologyLabels),
                                       [&](std::string_view key) { return labels.Contains(key); });
  if (!constrained) return {};
  static const framework::FixedReasons kConflict(kErrReasonConflict);
  for (const VolumeTopology& t : *topologies) {
    const std::string* value = labels.Find(t.key);
    if (value == nullptr) value = labels.Find(GAKey(t.key));
    if (value == nullptr || !std::binary_search(t.values.begin(), t.values.end(), *value)) {
      return Status::Unresolvable(kConflict);
    }
  }
  return {};
}

QueueingHint IsSchedulableAfterClaimChange(const api::Pod& pod,
                                           const framework::EventObjects& event) {
  auto claim = event.NewAs<api::PersistentVolumeClaim>();
  if (!claim || claim->meta.namespace_ != pod.meta.namespace_) return QueueingHint::kSkip;
  for (const std::string& name : ClaimNames(pod)) {
    if (name == claim->meta.name) return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterStorageClassAdded(const api::Pod&,
                                                 const framework::EventObjects& event) {
  auto added = event.NewAs<api::StorageClass>();
  if (!added) return QueueingHint::kQueue;
  return added->volume_binding_mode == api::VolumeBindingMode::kWaitForFirstConsumer
             ? QueueingHint::kQueue
             : QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterVolumeChange(const api::Pod&, const framework::EventObjects& event) {
  auto before = event.OldAs<api::PersistentVolume>();
  auto after = event.NewAs<api::PersistentVolume>();
  if (!before || !after) return QueueingHint::kQueue;
  return TopologiesOf(*before) == TopologiesOf(*after) ? QueueingHint::kSkip : QueueingHint::kQueue;
}

std::vector<framework::ClusterEventWithHint> VolumeZone::EventsToRegister() const {
  using framework::EventResource;
  return {
      {{EventResource::kStorageClass, framework::kAdd, ""}, IsSchedulableAfterStorageClassAdded},
      {{EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel, ""}, nullptr},
      {{EventResource::kPersistentVolumeClaim, framework::kAdd | framework::kUpdate, ""},
       IsSchedulableAfterClaimChange},
      {{EventResource::kPersistentVolume, framework::kAdd | framework::kUpdate, ""},
       IsSchedulableAfterVolumeChange},
  };
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle) {
  framework::ExpectNoArgs(args);
  auto& informers = handle.SharedInformerFactory();
  return std::make_shared<VolumeZone>(informers.ListerFor<api::PersistentVolumeClaim>(),
                                      informers.ListerFor<api::PersistentVolume>(),
                                      informers.ListerFor<api::StorageClass>());
}

}  // namespace berth::plugins::volumezone
