#include "pkg/plugins/volumebinding/volumebinding.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "pkg/api/requests.h"
#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/helper/volumes.h"

namespace berth::plugins::volumebinding {
namespace {

using framework::QueueingHint;
using framework::Status;
using json = nlohmann::json;

const framework::StateKey& StateKeyOf() {
  static const framework::StateKey kKey{kName};
  return kKey;
}

// What one cycle knows of the pod's volumes. Copies share it (as upstream's state is shared by
// its clones): nothing a PreFilter extension changes lives here.
class State final : public framework::StateData {
 public:
  struct Shared {
    PodVolumeClaims claims;
    // Whether any claim still needs binding here; without one every node's PodVolumes is empty.
    bool has_delay_binding = false;
    // Set by Reserve: nothing for PreBind to do.
    bool all_bound = false;
    std::mutex mu;
    // The nodes that passed Filter, with what they need done. Guarded by mu (Filter writes it
    // from many threads).
    std::unordered_map<std::string, PodVolumes> by_node;
  };

  std::shared_ptr<Shared> shared = std::make_shared<Shared>();

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<State>(*this);
  }
};

State::Shared* ReadState(const framework::CycleState& state) {
  State* s = state.Read<State>(StateKeyOf());
  return s == nullptr ? nullptr : s->shared.get();
}

Status NoState() {
  return Status::Error("error reading " + std::string(kName) + " state from cycleState: not found");
}

// Filter's rejection for each combination of ConflictReason bits, made once.
const framework::FixedReasons& ReasonsFor(unsigned bits) {
  static const std::vector<std::unique_ptr<framework::FixedReasons>> kAll = [] {
    std::vector<std::unique_ptr<framework::FixedReasons>> all;
    for (unsigned b = 0; b < 16; b++) {
      std::vector<std::string> reasons;
      if (b & kNodeConflict) reasons.emplace_back(kErrReasonNodeConflict);
      if (b & kBindConflict) reasons.emplace_back(kErrReasonBindConflict);
      if (b & kNotEnoughSpace) reasons.emplace_back(kErrReasonNotEnoughSpace);
      if (b & kPVNotExist) reasons.emplace_back(kErrReasonPVNotExist);
      all.push_back(std::make_unique<framework::FixedReasons>(std::move(reasons)));
    }
    return all;
  }();
  return *kAll[bits & 15];
}

// Whether the pod uses the claim named `name` in `namespace_`.
bool PodUsesClaim(const api::Pod& pod, const std::string& namespace_, const std::string& name) {
  if (pod.meta.namespace_ != namespace_) return false;
  for (const api::Volume& volume : pod.spec.volumes) {
    auto claim = helper::ClaimOf(pod, volume);
    if (claim && claim->name == name) return true;
  }
  return false;
}

std::optional<int64_t> VolumeLimit(const api::CSIStorageCapacity& capacity) {
  return capacity.maximum_volume_size ? capacity.maximum_volume_size : capacity.capacity;
}

}  // namespace

Args ParseArgs(const json& args) {
  Args out;
  framework::ArgsErrors errors;
  if (errors.CheckObject(args, {"bindTimeoutSeconds", "shape"})) {
    int64_t seconds = out.bind_timeout.count();
    errors.ReadInt(args, "bindTimeoutSeconds", "", 0, std::numeric_limits<int64_t>::max(),
                   "invalid BindTimeoutSeconds, should not be a negative value", &seconds);
    out.bind_timeout = std::chrono::seconds(seconds);
    if (auto it = args.find("shape");
        it != args.end() && !it->is_null() && !(it->is_array() && it->empty())) {
      out.shape = noderesources::ParseShapePoints(*it, "shape", errors);
    }
  }
  errors.ThrowIfAny();
  return out;
}

VolumeBinding::VolumeBinding(Args args, informer::Lister<api::PersistentVolumeClaim> claims,
                             std::unique_ptr<VolumeBinder> binder)
    : args_(std::move(args)), claims_(claims), binder_(std::move(binder)) {}

Status VolumeBinding::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                const std::vector<framework::NodeInfoPtr>&,
                                framework::PreFilterResult*) {
  bool has_claims = false;
  for (const api::Volume& volume : pod.spec.volumes) {
    const auto ref = helper::ClaimOf(pod, volume);
    if (!ref) continue;
    has_claims = true;
    api::PersistentVolumeClaimPtr claim = claims_.Get(pod.meta.namespace_, ref->name);
    if (!claim) {
      // Normal for a moment after an ephemeral volume's pod is created.
      return Status::Unresolvable(
          ref->ephemeral ? "waiting for ephemeral volume controller to create the "
                           "persistentvolumeclaim \"" +
                               ref->name + "\""
                         : helper::NotFoundMessage("persistentvolumeclaim", ref->name));
    }
    if (claim->status.phase == api::PersistentVolumeClaimPhase::kLost) {
      return Status::Unresolvable("persistentvolumeclaim \"" + claim->meta.name +
                                  "\" bound to non-existent persistentvolume \"" +
                                  claim->spec.volume_name + "\"");
    }
    if (claim->meta.deletion_timestamp) {
      return Status::Unresolvable("persistentvolumeclaim \"" + claim->meta.name +
                                  "\" is being deleted");
    }
    if (ref->ephemeral) {
      if (std::string owner = helper::EphemeralClaimOwnerError(pod, *claim); !owner.empty()) {
        return Status::Unresolvable(owner);
      }
    }
  }
  // No state is written for a pod without claims: the later extension points read its absence
  // as nothing to do, and most pods are such pods.
  if (!has_claims) return Status::Skip();
  auto data = std::make_shared<State>();
  State::Shared& shared = *data->shared;
  if (Status s = binder_->GetPodVolumeClaims(pod, &shared.claims); !s.IsSuccess()) return s;
  if (!shared.claims.unbound_immediate.empty()) {
    // The volume controller binds these claims; the claim's update brings the pod back.
    static const framework::FixedReasons kUnboundImmediate(kErrReasonUnboundImmediate);
    return Status::Unresolvable(kUnboundImmediate);
  }
  shared.has_delay_binding = !shared.claims.unbound_delay_binding.empty();
  state.Write(StateKeyOf(), data);
  return {};
}

Status VolumeBinding::Filter(const framework::CycleState& state, const api::Pod& pod,
                             const framework::NodeInfo& node) {
  State::Shared* shared = ReadState(state);
  if (shared == nullptr) return NoState();
  PodVolumes volumes;
  unsigned reasons = 0;
  Status s = binder_->FindPodVolumes(pod, shared->claims, *node.node(), &volumes, &reasons);
  if (!s.IsSuccess()) return s;
  if (reasons != 0) return Status::Unresolvable(ReasonsFor(reasons));
  if (shared->has_delay_binding) {
    std::lock_guard lock(shared->mu);
    shared->by_node[node.name()] = std::move(volumes);
  }
  return {};
}

Status VolumeBinding::PreScore(framework::CycleState& state, const api::Pod&,
                               std::span<const framework::NodeInfo* const>) {
  State::Shared* shared = ReadState(state);
  return shared != nullptr && shared->has_delay_binding ? Status() : Status::Skip();
}

int64_t VolumeBinding::ScoreClasses(
    const std::vector<std::pair<api::WideInt, api::WideInt>>& classes) const {
  if (classes.empty()) return 0;
  std::vector<noderesources::UtilizationShapePoint> scaled = args_.shape;
  for (auto& point : scaled) {
    point.score *= framework::kMaxNodeScore / noderesources::kMaxCustomPriorityScore;
  }
  int64_t total = 0;
  for (const auto& [requested, capacity] : classes) {
    total += noderesources::BrokenLinearFunction(
        scaled, noderesources::RequestedPercent(requested, capacity));
  }
  return std::llround(static_cast<double>(total) / static_cast<double>(classes.size()));
}

Status VolumeBinding::Score(const framework::CycleState& state, const api::Pod&,
                            const framework::NodeInfo& node, int64_t* score) {
  *score = 0;
  State::Shared* shared = ReadState(state);
  if (shared == nullptr) return {};
  const PodVolumes* volumes = nullptr;
  {
    std::lock_guard lock(shared->mu);
    auto it = shared->by_node.find(node.name());
    if (it == shared->by_node.end()) return {};
    volumes = &it->second;
  }
  // Class -> (requested, capacity) bytes.
  // Exact sums: volumes and claims of exabytes add up past int64.
  std::map<std::string, std::pair<api::WideInt, api::WideInt>> classes;
  if (!volumes->static_bindings.empty()) {
    for (const BindingInfo& b : volumes->static_bindings) {
      auto& c = classes[b.pv->spec.storage_class_name];
      c.first += b.pvc->spec.storage_request.value_or(0);
      c.second += b.pv->spec.capacity;
    }
  } else {
    for (const DynamicProvision& p : volumes->dynamic_provisions) {
      if (!p.capacity) continue;
      auto& c = classes[p.pvc->spec.storage_class_name];
      // Every claim of a class draws on the same published capacity: it is not summed.
      c.second = p.capacity->capacity.value_or(0);
      c.first += p.pvc->spec.storage_request.value_or(0);
    }
  }
  std::vector<std::pair<api::WideInt, api::WideInt>> list;
  list.reserve(classes.size());
  for (const auto& [name, c] : classes) list.push_back(c);
  *score = ScoreClasses(list);
  return {};
}

Status VolumeBinding::Reserve(framework::CycleState& state, const api::Pod& pod,
                              const std::string& node) {
  State::Shared* shared = ReadState(state);
  if (shared == nullptr) return {};
  std::lock_guard lock(shared->mu);
  auto it = shared->by_node.find(node);
  if (it == shared->by_node.end()) {
    shared->all_bound = true;
    return {};
  }
  return binder_->AssumePodVolumes(pod, node, &it->second, &shared->all_bound);
}

void VolumeBinding::Unreserve(framework::CycleState& state, const api::Pod&,
                              const std::string& node) {
  State::Shared* shared = ReadState(state);
  if (shared == nullptr) return;
  std::lock_guard lock(shared->mu);
  auto it = shared->by_node.find(node);
  if (it != shared->by_node.end()) binder_->RevertAssumedPodVolumes(it->second);
}

Status VolumeBinding::PreBindPreFlight(framework::CycleState& state, const api::Pod&,
                                       const std::string&) {
  State::Shared* shared = ReadState(state);
  if (shared == nullptr) return Status::Skip();
  std::lock_guard lock(shared->mu);
  return shared->all_bound ? Status::Skip() : Status();
}

Status VolumeBinding::PreBind(framework::CycleState& state, const api::Pod& pod,
                              const std::string& node) {
  State::Shared* shared = ReadState(state);
  if (shared == nullptr) return {};
  PodVolumes* volumes = nullptr;
  {
    std::lock_guard lock(shared->mu);
    if (shared->all_bound) return {};
    auto it = shared->by_node.find(node);
    if (it == shared->by_node.end()) {
      return Status::Error("no pod volumes found for node \"" + node + "\"");
    }
    volumes = &it->second;
  }
  // Only this pod's binding cycle touches its node's entry from here on.
  return binder_->BindPodVolumes(pod, node, volumes);
}

QueueingHint IsSchedulableAfterClaimChange(const api::Pod& pod,
                                           const framework::EventObjects& event) {
  auto claim = event.NewAs<api::PersistentVolumeClaim>();
  if (!claim) return QueueingHint::kQueue;
  return PodUsesClaim(pod, claim->meta.namespace_, claim->meta.name) ? QueueingHint::kQueue
                                                                     : QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterStorageClassChange(const api::Pod&,
                                                  const framework::EventObjects& event) {
  auto before = event.OldAs<api::StorageClass>();
  auto after = event.NewAs<api::StorageClass>();
  if (!before || !after) return QueueingHint::kQueue;
  return before->allowed_topologies == after->allowed_topologies ? QueueingHint::kSkip
                                                                 : QueueingHint::kQueue;
}

QueueingHint IsSchedulableAfterCSINodeChange(const api::Pod&,
                                             const framework::EventObjects& event) {
  auto before = event.OldAs<api::CSINode>();
  auto after = event.NewAs<api::CSINode>();
  if (!before || !after) return QueueingHint::kQueue;
  const std::string* a = before->meta.annotations.Find(api::kMigratedPluginsAnnotation);
  const std::string* b = after->meta.annotations.Find(api::kMigratedPluginsAnnotation);
  const bool same = (a ? *a : std::string()) == (b ? *b : std::string());
  return same ? QueueingHint::kSkip : QueueingHint::kQueue;
}

QueueingHint IsSchedulableAfterCSIDriverChange(const api::Pod& pod,
                                               const framework::EventObjects& event) {
  auto before = event.OldAs<api::CSIDriver>();
  auto after = event.NewAs<api::CSIDriver>();
  if (!before || !after) return QueueingHint::kQueue;
  for (const api::Volume& volume : pod.spec.volumes) {
    if (volume.source != "csi" || volume.csi_driver != after->meta.name) continue;
    // Capacity no longer published: the capacity check no longer holds the pod back.
    if (before->storage_capacity && !after->storage_capacity) return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

QueueingHint IsSchedulableAfterCapacityChange(const api::Pod&,
                                              const framework::EventObjects& event) {
  auto before = event.OldAs<api::CSIStorageCapacity>();
  auto after = event.NewAs<api::CSIStorageCapacity>();
  if (!before || !after) return QueueingHint::kQueue;
  const std::optional<int64_t> old_limit = VolumeLimit(*before);
  const std::optional<int64_t> new_limit = VolumeLimit(*after);
  return new_limit && (!old_limit || *new_limit > *old_limit) ? QueueingHint::kQueue
                                                              : QueueingHint::kSkip;
}

std::vector<framework::ClusterEventWithHint> VolumeBinding::EventsToRegister() const {
  using framework::EventResource;
  using framework::kAdd;
  using framework::kUpdate;
  return {
      // A class's allowedTopologies or a new class may admit nodes.
      {{EventResource::kStorageClass, kAdd | kUpdate, ""}, IsSchedulableAfterStorageClassChange},
      {{EventResource::kPersistentVolumeClaim, kAdd | kUpdate, ""}, IsSchedulableAfterClaimChange},
      {{EventResource::kPersistentVolume, kAdd | kUpdate, ""}, nullptr},
      // New nodes or labels may match a volume's node affinity or a class's topology.
      {{EventResource::kNode, kAdd | framework::kUpdateNodeLabel, ""}, nullptr},
      // In-tree volumes are translated for nodes whose CSINode says they were migrated.
      {{EventResource::kCSINode, kAdd | kUpdate, ""}, IsSchedulableAfterCSINodeChange},
      {{EventResource::kCSIDriver, kUpdate, ""}, IsSchedulableAfterCSIDriverChange},
      {{EventResource::kCSIStorageCapacity, kAdd | kUpdate, ""}, IsSchedulableAfterCapacityChange},
  };
}

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  Args parsed = ParseArgs(args);
  informer::SharedInformerFactory& informers = handle.SharedInformerFactory();
  BinderDeps deps(informers);
  deps.client = handle.ClientSet();
  deps.bind_timeout = parsed.bind_timeout;
  deps.stopping = [&handle] { return handle.Stopping(); };
  auto binder = std::make_unique<VolumeBinder>(deps);
  // PreBind's waits look again whenever a volume or claim changes.
  deps.pv_cache->OnChange([waker = binder->waker()] { waker->Notify(); });
  deps.pvc_cache->OnChange([waker = binder->waker()] { waker->Notify(); });
  return std::make_shared<VolumeBinding>(
      std::move(parsed), informers.ListerFor<api::PersistentVolumeClaim>(), std::move(binder));
}

}  // namespace berth::plugins::volumebinding
