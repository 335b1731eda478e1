#include "pkg/plugins/dynamicresources/extended_claim.h"

#include <algorithm>
#include <set>
#include <utility>

#include "pkg/plugins/dynamicresources/claim_status.h"

namespace berth::plugins::dynamicresources {
namespace {

using json = nlohmann::json;

// The names a container's requests map has, sorted as upstream sorts its keys.
std::vector<std::string> RequestNames(const api::Container& container) {
  std::vector<std::string> names;
  const api::ResourceRequirements& r = container.resources;
  if (r.has_cpu_request) names.emplace_back(api::kResourceCPU);
  if (r.has_memory_request) names.emplace_back(api::kResourceMemory);
  if (r.requests.ephemeral_storage != 0) names.emplace_back(api::kResourceEphemeralStorage);
  for (const auto& [name, amount] : r.requests.scalar) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

// One container's request for `resource`, less what `reusable` requests (of long-lived
// containers that run beside it) already cover; null when nothing is left to request.
std::optional<api::DeviceRequest> ContainerRequest(
    size_t index, const api::Container& container, const std::string& resource,
    const std::string& device_class, const std::vector<std::optional<api::DeviceRequest>>& reusable,
    size_t reusable_from, std::vector<api::ContainerExtendedResourceRequest>* mappings) {
  const int64_t wanted = container.resources.requests.Get(resource);
  if (wanted == 0) return std::nullopt;
  int64_t covered = 0;
  for (size_t i = reusable_from; i < reusable.size(); i++) {
    if (!reusable[i]) continue;
    covered += reusable[i]->exactly->count;
    mappings->push_back({container.name, resource, reusable[i]->name});
    if (covered >= wanted) return std::nullopt;
  }
  const std::vector<std::string> names = RequestNames(container);
  const size_t position = std::find(names.begin(), names.end(), resource) - names.begin();
  api::DeviceRequest request;
  request.name = "container-" + std::to_string(index) + "-request-" +
                 std::to_string(position == names.size() ? 0 : position);
  request.exactly.emplace();
  request.exactly->device_class_name = device_class;
  request.exactly->allocation_mode = api::DeviceAllocationMode::kExactCount;
  request.exactly->count = wanted - covered;
  mappings->push_back({container.name, resource, request.name});
  return request;
}

json EncodeRequest(const api::DeviceRequest& request) {
  return {{"name", request.name},
          {"exactly",
           {{"deviceClassName", request.exactly->device_class_name},
            {"allocationMode", "ExactCount"},
            {"count", request.exactly->count}}}};
}

}  // namespace

std::vector<api::DeviceRequest> ExtendedResourceRequests(
    const api::Pod& pod, const std::map<std::string, std::string>& needed,
    std::vector<api::ContainerExtendedResourceRequest>* mappings) {
  std::vector<const api::Container*> containers;
  for (const api::Container& c : pod.spec.init_containers) containers.push_back(&c);
  for (const api::Container& c : pod.spec.containers) containers.push_back(&c);
  const size_t inits = pod.spec.init_containers.size();
  std::vector<api::DeviceRequest> requests;
  // Sorted by resource name, as upstream iterates them.
  for (const auto& [resource, device_class] : needed) {
    std::vector<api::ContainerExtendedResourceRequest> long_lived_mappings;
    std::vector<api::ContainerExtendedResourceRequest> short_lived_mappings;
    std::vector<std::optional<api::DeviceRequest>> long_lived(containers.size());
    for (size_t i = 0; i < containers.size(); i++) {
      // Containers and sidecars run together for the pod's life.
      if (i < inits && !containers[i]->restartable) continue;
      long_lived[i] =
          ContainerRequest(i, *containers[i], resource, device_class, {}, 0, &long_lived_mappings);
    }
    std::optional<api::DeviceRequest> largest_short_lived;
    std::set<std::string> short_lived_names;
    for (size_t i = 0; i < inits; i++) {
      if (containers[i]->restartable) continue;
      // An init container runs before the long-lived containers after it start, so their
      // devices can serve it first.
      auto request = ContainerRequest(i, *containers[i], resource, device_class, long_lived, i,
                                      &short_lived_mappings);
      if (!request) continue;
      short_lived_names.insert(request->name);
      if (!largest_short_lived || largest_short_lived->exactly->count < request->exactly->count) {
        largest_short_lived = std::move(request);
      }
    }
    // Init containers run one at a time: the largest one's devices serve them all.
    if (largest_short_lived && short_lived_names.size() > 1) {
      short_lived_names.erase(largest_short_lived->name);
      for (auto& mapping : short_lived_mappings) {
        if (short_lived_names.contains(mapping.request_name)) {
          mapping.request_name = largest_short_lived->name;
        }
      }
    }
    if (largest_short_lived) requests.push_back(*largest_short_lived);
    for (auto& request : long_lived) {
      if (request) requests.push_back(std::move(*request));
    }
    mappings->insert(mappings->end(), long_lived_mappings.begin(), long_lived_mappings.end());
    mappings->insert(mappings->end(), short_lived_mappings.begin(), short_lived_mappings.end());
  }
  std::stable_sort(
      requests.begin(), requests.end(),
      [](const api::DeviceRequest& a, const api::DeviceRequest& b) { return a.name < b.name; });
  return requests;
}

std::string InMemoryExtendedClaimId(const api::Pod& pod) {
  return pod.meta.uid + "/extended-resources";
}

api::ResourceClaimPtr InMemoryExtendedClaim(const api::Pod& pod, const std::string& uid,
                                            std::vector<api::DeviceRequest> requests) {
  auto claim = std::make_shared<api::ResourceClaim>();
  claim->meta.namespace_ = pod.meta.namespace_;
  claim->meta.name = std::string(kExtendedClaimInMemoryName);
  claim->meta.uid = uid;
  claim->spec.requests = std::move(requests);
  return claim;
}

bool IsExtendedClaimOf(const api::ResourceClaim& claim, const api::Pod& pod) {
  const std::string* annotation = claim.meta.annotations.Find(kExtendedResourceClaimAnnotation);
  if (annotation == nullptr || *annotation != "true") return false;
  return std::any_of(claim.meta.owner_references.begin(), claim.meta.owner_references.end(),
                     [&](const api::OwnerReference& owner) {
                       return owner.controller && owner.name == pod.meta.name &&
                              owner.uid == pod.meta.uid;
                     });
}

json ExtendedClaimObject(const api::Pod& pod, const std::vector<api::DeviceRequest>& requests) {
  json encoded = json::array();
  for (const api::DeviceRequest& request : requests) encoded.push_back(EncodeRequest(request));
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata",
           {{"generateName", pod.meta.name + "-extended-resources-"},
            {"namespace", pod.meta.namespace_},
            {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                              {"kind", "Pod"},
                                              {"name", pod.meta.name},
                                              {"uid", pod.meta.uid},
                                              {"controller", true}}})},
            {"annotations", {{std::string(kExtendedResourceClaimAnnotation), "true"}}}}},
          {"spec", {{"devices", {{"requests", std::move(encoded)}}}}}};
}

json ExtendedClaimStatusPatch(const std::string& claim_name,
                              const std::vector<api::ContainerExtendedResourceRequest>& mappings) {
  json encoded = json::array();
  for (const auto& m : mappings) {
    encoded.push_back({{"containerName", m.container_name},
                       {"resourceName", m.resource_name},
                       {"requestName", m.request_name}});
  }
  return {{"status",
           {{"extendedResourceClaimStatus",
             {{"requestMappings", std::move(encoded)}, {"resourceClaimName", claim_name}}}}}};
}

std::optional<std::string> DeleteClaim(client::Client& client, const api::ResourceClaim& claim) {
  try {
    if (HasFinalizer(claim)) {
      json finalizers = json::array();
      for (const std::string& f : claim.finalizers) {
        if (f != api::kResourceClaimFinalizer) finalizers.push_back(f);
      }
      client.Patch(ClaimPath(claim), {{"metadata", {{"finalizers", std::move(finalizers)}}}},
                   client::PatchType::kMerge);
    }
    client.Delete(ClaimPath(claim), client::DeleteOptions{claim.meta.uid});
  } catch (const client::ApiError& e) {
    if (e.reason() != client::ErrorReason::kNotFound) return e.what();
  } catch (const std::exception& e) {
    return e.what();
  }
  return std::nullopt;
}

}  // namespace berth::plugins::dynamicresources
