#include "pkg/plugins/volumebinding/binder.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <nlohmann/json.hpp>
#include <utility>

#include "pkg/api/resources_codec.h"
#include "pkg/client/client.h"
#include "pkg/informer/factory.h"

namespace berth::plugins::volumebinding {
namespace {

using framework::Status;
using Clock = std::chrono::steady_clock;

// How often PreBind looks at the claims when no informer change wakes it (upstream polls at
// this interval).
constexpr std::chrono::seconds kBindPollInterval{1};

std::string ClaimKey(const api::PersistentVolumeClaim& claim) { return claim.meta.Key(); }

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// resourceVersions compare as the integers etcd makes them; an unparsable one as 0.
uint64_t ResourceVersionNumber(const std::string& version) {
  uint64_t out = 0;
  const auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), out);
  if (ec != std::errc() || end != version.data() + version.size()) return 0;
  return out;
}

// Whether the object we wrote (`written`) is newer than what the informer has (`seen`).
template <typename T>
bool InformerBehind(const T& written, const T& seen) {
  return ResourceVersionNumber(written.meta.resource_version) >
         ResourceVersionNumber(seen.meta.resource_version);
}

int64_t RequestOf(const api::PersistentVolumeClaim& claim) {
  return claim.spec.storage_request.value_or(0);
}

bool AccessModesCovered(const api::PersistentVolumeClaim& claim, const api::PersistentVolume& pv) {
  for (const auto mode : claim.spec.access_modes) {
    if (std::find(pv.spec.access_modes.begin(), pv.spec.access_modes.end(), mode) ==
        pv.spec.access_modes.end()) {
      return false;
    }
  }
  return true;
}

// The volume bound to the claim as the scheduler writes it: claimRef naming the claim, and the
// bound-by-controller annotation when the user had not pre-bound it. `dirty` when that changed.
api::PersistentVolume BindVolumeToClaim(const api::PersistentVolume& pv,
                                        const api::PersistentVolumeClaim& claim, bool* dirty) {
  *dirty = false;
  const bool set_bound_by_controller = !IsVolumeBoundToClaim(pv, claim);
  api::PersistentVolume out = pv;
  const auto& ref = pv.spec.claim_ref;
  if (!ref || ref->name != claim.meta.name || ref->namespace_ != claim.meta.namespace_ ||
      ref->uid != claim.meta.uid) {
    out.spec.claim_ref =
        api::ClaimReference{claim.meta.namespace_, claim.meta.name, claim.meta.uid};
    *dirty = true;
  }
  if (set_bound_by_controller &&
      !out.meta.annotations.Contains(helper::kBoundByControllerAnnotation)) {
    out.meta.annotations.Set(std::string(helper::kBoundByControllerAnnotation), "yes");
    *dirty = true;
  }
  return out;
}

}  // namespace

bool IsVolumeBoundToClaim(const api::PersistentVolume& pv,
                          const api::PersistentVolumeClaim& claim) {
  const auto& ref = pv.spec.claim_ref;
  if (!ref || ref->name != claim.meta.name || ref->namespace_ != claim.meta.namespace_)
    return false;
  return ref->uid.empty() || ref->uid == claim.meta.uid;
}

PVPtr FindMatchingVolume(const api::PersistentVolumeClaim& claim, const std::vector<PVPtr>& volumes,
                         const api::Node& node, const std::vector<std::string>& excluded) {
  const int64_t requested = RequestOf(claim);
  const std::string& requested_class = claim.StorageClassName();
  PVPtr smallest;
  for (const PVPtr& volume : volumes) {
    const api::PersistentVolume& pv = *volume;
    if (std::find(excluded.begin(), excluded.end(), pv.meta.name) != excluded.end()) continue;
    const bool bound_to_claim = IsVolumeBoundToClaim(pv, claim);
    if (pv.spec.claim_ref && !bound_to_claim) continue;
    if (pv.spec.capacity < requested) continue;
    if (pv.spec.volume_mode != claim.spec.volume_mode) continue;
    if (pv.spec.volume_attributes_class_name != claim.spec.volume_attributes_class_name) continue;
    if (pv.meta.deletion_timestamp) continue;
    const bool reachable = helper::VolumeAffinityMatches(pv.spec.node_affinity, node.meta.labels);
    if (bound_to_claim) return reachable ? volume : nullptr;
    if (pv.status.phase != api::PersistentVolumePhase::kAvailable) continue;
    if (claim.spec.selector && !claim.spec.selector->Matches(pv.meta.labels)) continue;
    if (pv.StorageClassName() != requested_class) continue;
    if (!reachable) continue;
    if (!AccessModesCovered(claim, pv)) continue;
    if (!smallest || smallest->spec.capacity > pv.spec.capacity) smallest = volume;
  }
  return smallest;
}

BinderDeps::BinderDeps(informer::SharedInformerFactory& informers)
    : pods(informers.ListerFor<api::Pod>()),
      nodes(informers.ListerFor<api::Node>()),
      classes(informers.ListerFor<api::StorageClass>()),
      csi_nodes(informers.ListerFor<api::CSINode>()),
      csi_drivers(informers.ListerFor<api::CSIDriver>()),
      capacities(informers.ListerFor<api::CSIStorageCapacity>()),
      pv_cache(PVCache::New(informers.For<api::PersistentVolume>(), "persistentvolumes",
                            [](const api::PersistentVolume& pv) { return pv.StorageClassName(); })),
      pvc_cache(
          PVCCache::New(informers.For<api::PersistentVolumeClaim>(), "persistentvolumeclaims")) {}

VolumeBinder::VolumeBinder(BinderDeps deps) : deps_(std::move(deps)) {}

VolumeBinder::~VolumeBinder() = default;

void Waker::Notify() {
  {
    std::lock_guard lock(mu_);
    generation_++;
  }
  cv_.notify_all();
}

void Waker::WaitUntil(std::chrono::steady_clock::time_point until,
                      const std::function<bool()>& stop) {
  std::unique_lock lock(mu_);
  const uint64_t seen = generation_;
  cv_.wait_until(lock, until, [&] { return generation_ != seen || (stop && stop()); });
}

Status VolumeBinder::IsVolumeBound(const api::Pod& pod, const api::Volume& volume, bool* bound,
                                   PVCPtr* claim) const {
  *bound = true;
  claim->reset();
  const auto ref = helper::ClaimOf(pod, volume);
  if (!ref) return {};
  const std::string key = pod.meta.namespace_ + "/" + ref->name;
  std::string error;
  PVCPtr pvc = deps_.pvc_cache->Get(key, &error);
  *bound = false;
  if (!pvc) return Status::Error("error getting PVC " + Quoted(key) + ": " + error);
  if (ref->ephemeral) {
    if (std::string owner = helper::EphemeralClaimOwnerError(pod, *pvc); !owner.empty()) {
      return Status::Error(owner);
    }
  }
  *bound = helper::ClaimFullyBound(*pvc);
  *claim = std::move(pvc);
  return {};
}

bool VolumeBinder::ArePodVolumesBound(const api::Pod& pod) const {
  for (const api::Volume& volume : pod.spec.volumes) {
    bool bound = false;
    PVCPtr claim;
    if (!IsVolumeBound(pod, volume, &bound, &claim).IsSuccess() || !bound) return false;
  }
  return true;
}

Status VolumeBinder::GetPodVolumeClaims(const api::Pod& pod, PodVolumeClaims* out) const {
  for (const api::Volume& volume : pod.spec.volumes) {
    bool bound = false;
    PVCPtr claim;
    if (Status s = IsVolumeBound(pod, volume, &bound, &claim); !s.IsSuccess()) return s;
    if (!claim) continue;
    if (bound) {
      BoundVolume& b = out->bound.emplace_back();
      b.pvc = claim;
      b.pv = deps_.pv_cache->Get(claim->spec.volume_name, nullptr);
      if (b.pv) {
        const helper::InTreePlugin* plugin = helper::InTreePluginForSource(b.pv->spec.source);
        if (plugin != nullptr) {
          b.migrated_plugin = plugin;
          b.translated = helper::TranslateInTreeVolume(*b.pv, *plugin);
        }
      }
      continue;
    }
    bool delay_binding = false;
    const std::string& class_name = claim->StorageClassName();
    if (!class_name.empty()) {
      if (auto storage_class = deps_.classes.Get(class_name)) {
        delay_binding =
            storage_class->volume_binding_mode == api::VolumeBindingMode::kWaitForFirstConsumer;
      }
    }
    if (delay_binding && claim->spec.volume_name.empty()) {
      out->unbound_delay_binding.push_back(std::move(claim));
    } else {
      out->unbound_immediate.push_back(std::move(claim));
    }
  }
  for (const PVCPtr& claim : out->unbound_delay_binding) {
    const std::string& class_name = claim->StorageClassName();
    if (out->unbound_volumes_delay_binding.count(class_name)) continue;
    out->unbound_volumes_delay_binding[class_name] = deps_.pv_cache->ByIndex(class_name);
  }
  return {};
}

Status VolumeBinder::VolumeForNode(const api::PersistentVolume& pv, const api::CSINode* csi_node,
                                   std::optional<api::NodeSelector>* affinity) const {
  const helper::InTreePlugin* plugin = helper::InTreePluginForSource(pv.spec.source);
  if (plugin == nullptr || !helper::MigratedOnNode(*plugin, csi_node)) {
    *affinity = pv.spec.node_affinity;
    return {};
  }
  helper::TranslatedVolume translated = helper::TranslateInTreeVolume(pv, *plugin);
  if (!translated.error.empty())
    return Status::Error("could not translate pv: " + translated.error);
  *affinity = std::move(translated.node_affinity);
  return {};
}

Status VolumeBinder::FindPodVolumes(const api::Pod& pod, const PodVolumeClaims& claims,
                                    const api::Node& node, PodVolumes* volumes,
                                    unsigned* reasons) const {
  *volumes = PodVolumes();
  *reasons = 0;
  bool bound_satisfied = true;
  bool bound_found = true;
  bool unbound_satisfied = true;
  bool sufficient = true;
  auto report = [&] {
    if (!bound_satisfied) *reasons |= kNodeConflict;
    if (!unbound_satisfied) *reasons |= kBindConflict;
    if (!sufficient) *reasons |= kNotEnoughSpace;
    if (!bound_found) *reasons |= kPVNotExist;
    return Status();
  };

  api::CSINodePtr csi_node;
  bool csi_node_read = false;
  for (const BoundVolume& b : claims.bound) {
    if (!b.pv) {
      bound_found = false;
      break;
    }
    const std::optional<api::NodeSelector>* affinity = &b.pv->spec.node_affinity;
    if (b.migrated_plugin != nullptr) {
      if (!csi_node_read) {
        csi_node = deps_.csi_nodes.Get(node.Name());
        csi_node_read = true;
      }
      if (helper::MigratedOnNode(*b.migrated_plugin, csi_node.get())) {
        if (!b.translated.error.empty()) {
          return Status::Error("could not translate pv: " + b.translated.error);
        }
        affinity = &b.translated.node_affinity;
      }
    }
    if (!helper::VolumeAffinityMatches(*affinity, node.meta.labels)) {
      bound_satisfied = false;
      break;
    }
  }

  if (claims.unbound_delay_binding.empty()) return report();
  std::vector<PVCPtr> to_match;
  std::vector<PVCPtr> to_provision;
  for (const PVCPtr& claim : claims.unbound_delay_binding) {
    if (const std::string* selected = claim->meta.annotations.Find(api::kSelectedNodeAnnotation)) {
      if (*selected != node.Name()) {
        unbound_satisfied = false;
        return report();
      }
      to_provision.push_back(claim);
    } else {
      to_match.push_back(claim);
    }
  }
  if (!to_match.empty()) {
    std::vector<PVCPtr> unmatched;
    unbound_satisfied = FindMatchingVolumes(pod, std::move(to_match), claims, node,
                                            &volumes->static_bindings, &unmatched);
    to_provision.insert(to_provision.end(), unmatched.begin(), unmatched.end());
  }
  if (!to_provision.empty()) {
    Status s = CheckVolumeProvisions(to_provision, node, &unbound_satisfied, &sufficient,
                                     &volumes->dynamic_provisions);
    if (!s.IsSuccess()) return s;
  }
  return report();
}

bool VolumeBinder::FindMatchingVolumes(const api::Pod&, std::vector<PVCPtr> claims,
                                       const PodVolumeClaims& all, const api::Node& node,
                                       std::vector<BindingInfo>* bindings,
                                       std::vector<PVCPtr>* unmatched) const {
  // The smallest claims choose first, so that each takes the smallest volume that fits it.
  std::stable_sort(claims.begin(), claims.end(),
                   [](const PVCPtr& a, const PVCPtr& b) { return RequestOf(*a) < RequestOf(*b); });
  std::vector<std::string> chosen;
  bool found = true;
  static const std::vector<PVPtr> kNoVolumes;
  for (const PVCPtr& claim : claims) {
    auto it = all.unbound_volumes_delay_binding.find(claim->StorageClassName());
    const std::vector<PVPtr>& volumes =
        it == all.unbound_volumes_delay_binding.end() ? kNoVolumes : it->second;
    PVPtr pv = FindMatchingVolume(*claim, volumes, node, chosen);
    if (!pv) {
      unmatched->push_back(claim);
      found = false;
      continue;
    }
    chosen.push_back(pv->meta.name);
    bindings->push_back({claim, std::move(pv)});
  }
  return found;
}

Status VolumeBinder::CheckVolumeProvisions(const std::vector<PVCPtr>& claims, const api::Node& node,
                                           bool* satisfied, bool* sufficient,
                                           std::vector<DynamicProvision>* provisions) const {
  provisions->clear();
  for (const PVCPtr& claim : claims) {
    const std::string& class_name = claim->StorageClassName();
    if (class_name.empty()) {
      return Status::Error("no class for claim " + Quoted(ClaimKey(*claim)));
    }
    api::StorageClassPtr storage_class = deps_.classes.Get(class_name);
    if (!storage_class) return Status::Error("failed to find storage class " + Quoted(class_name));
    const std::string& provisioner = storage_class->provisioner;
    if (provisioner.empty() || provisioner == helper::kNoProvisioner ||
        !storage_class->AllowsTopology(node.meta.labels)) {
      provisions->clear();
      *satisfied = false;
      *sufficient = true;
      return {};
    }
    bool enough = true;
    api::CSIStorageCapacityPtr capacity;
    Status s = HasEnoughCapacity(provisioner, *claim, *storage_class, node, &enough, &capacity);
    if (!s.IsSuccess()) return s;
    if (!enough) {
      provisions->clear();
      *satisfied = true;
      *sufficient = false;
      return {};
    }
    provisions->push_back({claim, std::move(capacity)});
  }
  *satisfied = true;
  *sufficient = true;
  return {};
}

Status VolumeBinder::HasEnoughCapacity(const std::string& provisioner,
                                       const api::PersistentVolumeClaim& claim,
                                       const api::StorageClass& storage_class,
                                       const api::Node& node, bool* sufficient,
                                       api::CSIStorageCapacityPtr* capacity) const {
  *sufficient = true;
  if (!claim.spec.storage_request) return {};
  // Only CSI drivers that publish their capacity opt into the check.
  api::CSIDriverPtr driver = deps_.csi_drivers.Get(provisioner);
  if (!driver || !driver->storage_capacity) return {};
  const int64_t size = *claim.spec.storage_request;
  std::vector<api::CSIStorageCapacityPtr> all = deps_.capacities.List();
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a->meta.Key() < b->meta.Key(); });
  for (const auto& candidate : all) {
    if (candidate->storage_class_name != storage_class.meta.name) continue;
    const std::optional<int64_t>& limit =
        candidate->maximum_volume_size ? candidate->maximum_volume_size : candidate->capacity;
    if (!limit || *limit < size) continue;
    if (!candidate->node_topology || !candidate->node_topology->Matches(node.meta.labels)) continue;
    *capacity = candidate;
    return {};
  }
  *sufficient = false;
  return {};
}

Status VolumeBinder::AssumePodVolumes(const api::Pod& pod, const std::string& node,
                                      PodVolumes* volumes, bool* all_bound) {
  *all_bound = ArePodVolumesBound(pod);
  if (*all_bound) return {};
  std::string error;
  std::vector<BindingInfo> bindings;
  auto revert_bindings = [&] {
    for (const BindingInfo& b : bindings) deps_.pv_cache->Restore(*b.pv);
  };
  for (const BindingInfo& binding : volumes->static_bindings) {
    bool dirty = false;
    auto pv = std::make_shared<const api::PersistentVolume>(
        BindVolumeToClaim(*binding.pv, *binding.pvc, &dirty));
    if (dirty && !deps_.pv_cache->Assume(pv, &error)) {
      revert_bindings();
      return Status::Error(error);
    }
    bindings.push_back({binding.pvc, std::move(pv)});
  }
  std::vector<DynamicProvision> provisions;
  for (const DynamicProvision& provision : volumes->dynamic_provisions) {
    auto claim = std::make_shared<api::PersistentVolumeClaim>(*provision.pvc);
    claim->meta.annotations.Set(std::string(api::kSelectedNodeAnnotation), node);
    if (!deps_.pvc_cache->Assume(claim, &error)) {
      revert_bindings();
      for (const DynamicProvision& p : provisions) deps_.pvc_cache->Restore(*p.pvc);
      return Status::Error(error);
    }
    provisions.push_back({std::move(claim), nullptr});
  }
  volumes->static_bindings = std::move(bindings);
  volumes->dynamic_provisions = std::move(provisions);
  return {};
}

void VolumeBinder::RevertAssumedPodVolumes(const PodVolumes& volumes) {
  for (const BindingInfo& b : volumes.static_bindings) deps_.pv_cache->Restore(*b.pv);
  for (const DynamicProvision& p : volumes.dynamic_provisions) deps_.pvc_cache->Restore(*p.pvc);
}

Status VolumeBinder::BindAPIUpdate(PodVolumes* volumes) {
  if (deps_.client == nullptr) return Status::Error("no client to bind volumes with");
  size_t bound = 0;
  size_t provisioned = 0;
  // Only what was not written is reverted; what was written the informer will bring back.
  auto fail = [&](const std::string& message) {
    for (size_t i = bound; i < volumes->static_bindings.size(); i++) {
      deps_.pv_cache->Restore(*volumes->static_bindings[i].pv);
    }
    for (size_t i = provisioned; i < volumes->dynamic_provisions.size(); i++) {
      deps_.pvc_cache->Restore(*volumes->dynamic_provisions[i].pvc);
    }
    return Status::Error(message);
  };
  try {
    for (BindingInfo& binding : volumes->static_bindings) {
      const api::PersistentVolume& pv = *binding.pv;
      const api::PersistentVolumeClaim& claim = *binding.pvc;
      nlohmann::json patch = {{"metadata", {{"resourceVersion", pv.meta.resource_version}}},
                              {"spec",
                               {{"claimRef",
                                 {{"kind", "PersistentVolumeClaim"},
                                  {"apiVersion", "v1"},
                                  {"namespace", claim.meta.namespace_},
                                  {"name", claim.meta.name},
                                  {"uid", claim.meta.uid},
                                  {"resourceVersion", claim.meta.resource_version}}}}}};
      if (const std::string* by = pv.meta.annotations.Find(helper::kBoundByControllerAnnotation)) {
        patch["metadata"]["annotations"] = {
            {std::string(helper::kBoundByControllerAnnotation), *by}};
      }
      nlohmann::json written =
          deps_.client->Patch(client::PersistentVolumesResource().Path("", pv.meta.name), patch,
                              client::PatchType::kMerge);
      binding.pv =
          std::make_shared<const api::PersistentVolume>(api::DecodePersistentVolume(written));
      bound++;
    }
    for (DynamicProvision& provision : volumes->dynamic_provisions) {
      const api::PersistentVolumeClaim& claim = *provision.pvc;
      const std::string* node = claim.meta.annotations.Find(api::kSelectedNodeAnnotation);
      nlohmann::json patch = {
          {"metadata",
           {{"resourceVersion", claim.meta.resource_version},
            {"annotations", {{std::string(api::kSelectedNodeAnnotation), node ? *node : ""}}}}}};
      nlohmann::json written = deps_.client->Patch(
          client::PersistentVolumeClaimsResource().Path(claim.meta.namespace_, claim.meta.name),
          patch, client::PatchType::kMerge);
      provision.pvc = std::make_shared<const api::PersistentVolumeClaim>(
          api::DecodePersistentVolumeClaim(written));
      provisioned++;
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return {};
}

Status VolumeBinder::CheckBindings(const api::Pod& pod, const std::string& node_name,
                                   const PodVolumes& volumes, bool* done) const {
  *done = false;
  api::NodePtr node = deps_.nodes.Get(node_name);
  if (!node) {
    return Status::Error("failed to get node " + Quoted(node_name) + ": " +
                         helper::NotFoundMessage("node", node_name));
  }
  api::CSINodePtr csi_node = deps_.csi_nodes.Get(node_name);
  // A pod deleted meanwhile needs no volumes any more.
  if (!deps_.pods.Get(pod.meta.namespace_, pod.meta.name)) {
    return Status::Error("pod does not exist any more: " +
                         helper::NotFoundMessage("pod", pod.meta.name));
  }
  auto affinity_error = [&](const api::PersistentVolume& pv) {
    return Status::Error("pv " + Quoted(pv.meta.name) + " node affinity doesn't match node " +
                         Quoted(node_name) + ": no matching NodeSelectorTerms");
  };
  std::string error;
  for (const BindingInfo& binding : volumes.static_bindings) {
    PVPtr pv = deps_.pv_cache->GetAPIObj(binding.pv->meta.name, &error);
    if (!pv) return Status::Error("failed to check binding: " + error);
    PVCPtr pvc = deps_.pvc_cache->GetAPIObj(ClaimKey(*binding.pvc), &error);
    if (!pvc) return Status::Error("failed to check binding: " + error);
    // The informer has not seen our write yet.
    if (InformerBehind(*binding.pv, *pv)) return {};
    std::optional<api::NodeSelector> affinity;
    if (Status s = VolumeForNode(*pv, csi_node.get(), &affinity); !s.IsSuccess()) {
      return Status::Error("failed to translate pv to csi: " + s.Message());
    }
    if (!helper::VolumeAffinityMatches(affinity, node->meta.labels)) return affinity_error(*pv);
    if (!pv->spec.claim_ref || pv->spec.claim_ref->uid.empty()) {
      return Status::Error("ClaimRef got reset for pv " + Quoted(pv->meta.name));
    }
    if (!helper::ClaimFullyBound(*pvc)) return {};
  }
  for (const DynamicProvision& provision : volumes.dynamic_provisions) {
    PVCPtr pvc = deps_.pvc_cache->GetAPIObj(ClaimKey(*provision.pvc), &error);
    if (!pvc) return Status::Error("failed to check provisioning pvc: " + error);
    if (InformerBehind(*provision.pvc, *pvc)) return {};
    if (pvc->meta.annotations.empty()) {
      return Status::Error("selectedNode annotation reset for PVC " + Quoted(pvc->meta.name));
    }
    // A provisioner that fails takes the annotation away, asking for another node.
    const std::string* selected = pvc->meta.annotations.Find(api::kSelectedNodeAnnotation);
    if (selected == nullptr || *selected != node_name) {
      return Status::Error("provisioning failed for PVC " + Quoted(pvc->meta.name));
    }
    if (!pvc->spec.volume_name.empty()) {
      // The volume may not have reached the informer yet.
      PVPtr pv = deps_.pv_cache->GetAPIObj(pvc->spec.volume_name, nullptr);
      if (!pv) return {};
      std::optional<api::NodeSelector> affinity;
      if (Status s = VolumeForNode(*pv, csi_node.get(), &affinity); !s.IsSuccess()) return s;
      if (!helper::VolumeAffinityMatches(affinity, node->meta.labels)) return affinity_error(*pv);
    }
    if (!helper::ClaimFullyBound(*pvc)) return {};
  }
  *done = true;
  return {};
}

Status VolumeBinder::BindPodVolumes(const api::Pod& pod, const std::string& node,
                                    PodVolumes* volumes) {
  if (Status s = BindAPIUpdate(volumes); !s.IsSuccess()) return s;
  const auto deadline = Clock::now() + deps_.bind_timeout;
  while (true) {
    waker_->WaitUntil(std::min(deadline, Clock::now() + kBindPollInterval), deps_.stopping);
    if (deps_.stopping && deps_.stopping()) {
      return Status::Error("binding volumes: the scheduler is stopping");
    }
    if (Clock::now() >= deadline)
      return Status::Error("binding volumes: context deadline exceeded");
    bool done = false;
    Status s = CheckBindings(pod, node, *volumes, &done);
    if (!s.IsSuccess()) return Status::Error("binding volumes: " + s.Message());
    if (done) return {};
  }
}

}  // namespace berth::plugins::volumebinding
