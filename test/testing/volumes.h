#ifndef BERTH_TEST_TESTING_VOLUMES_H_
#define BERTH_TEST_TESTING_VOLUMES_H_

// Storage objects for the volume plugins' tests, made as the apiserver serves them and decoded
// with the real decoders.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/resources.h"
#include "pkg/api/resources_codec.h"
#include "pkg/api/types.h"

namespace berth::plugins::volumetesting {

using json = nlohmann::json;

inline json ClaimJson(const std::string& name, const std::string& class_name,
                      const std::string& storage = "1Gi") {
  json claim = {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolumeClaim"},
      {"metadata",
       {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}, {"resourceVersion", "10"}}},
      {"spec",
       {{"accessModes", {"ReadWriteOnce"}}, {"resources", {{"requests", {{"storage", storage}}}}}}},
      {"status", {{"phase", "Pending"}}}};
  if (!class_name.empty()) claim["spec"]["storageClassName"] = class_name;
  return claim;
}

// A claim the volume controller bound to `volume`.
inline json BoundClaimJson(const std::string& name, const std::string& volume,
                           const std::string& class_name = "") {
  json claim = ClaimJson(name, class_name);
  claim["spec"]["volumeName"] = volume;
  claim["metadata"]["annotations"] = {{"pv.kubernetes.io/bind-completed", "yes"}};
  claim["status"]["phase"] = "Bound";
  return claim;
}

inline json HostAffinity(const std::string& node) {
  return {
      {"required",
       {{"nodeSelectorTerms",
         {{{"matchExpressions",
            {{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {node}}}}}}}}}}};
}

// A local volume on `node` (no node: reachable everywhere).
inline json VolumeJson(const std::string& name, const std::string& class_name,
                       const std::string& capacity, const std::string& node = "") {
  json pv = {{"apiVersion", "v1"},
             {"kind", "PersistentVolume"},
             {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "20"}}},
             {"spec",
              {{"capacity", {{"storage", capacity}}},
               {"accessModes", {"ReadWriteOnce"}},
               {"persistentVolumeReclaimPolicy", "Retain"},
               {"local", {{"path", "/mnt/" + name}}}}},
             {"status", {{"phase", "Available"}}}};
  if (!class_name.empty()) pv["spec"]["storageClassName"] = class_name;
  if (!node.empty()) pv["spec"]["nodeAffinity"] = HostAffinity(node);
  return pv;
}

inline json ClassJson(const std::string& name, const std::string& mode,
                      const std::string& provisioner = "kubernetes.io/no-provisioner") {
  return {{"apiVersion", "storage.k8s.io/v1"},
          {"kind", "StorageClass"},
          {"metadata", {{"name", name}, {"resourceVersion", "1"}}},
          {"provisioner", provisioner},
          {"volumeBindingMode", mode}};
}

inline api::PersistentVolumeClaimPtr Claim(const json& object) {
  return std::make_shared<const api::PersistentVolumeClaim>(
      api::DecodePersistentVolumeClaim(object));
}
inline api::PersistentVolumePtr Volume(const json& object) {
  return std::make_shared<const api::PersistentVolume>(api::DecodePersistentVolume(object));
}
inline api::StorageClassPtr Class(const json& object) {
  return std::make_shared<const api::StorageClass>(api::DecodeStorageClass(object));
}

inline api::NodePtr Node(const std::string& name, const json& labels = json::object()) {
  json node = {{"metadata", {{"name", name}, {"labels", labels}}},
               {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}}}}};
  node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  return std::make_shared<const api::Node>(api::DecodeNode(node));
}

// A pod in namespace "ns" with `volumes` (JSON volume entries).
inline api::PodPtr PodWith(const std::string& name, const json& volumes,
                           const std::string& node = "") {
  json pod = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}}},
              {"spec",
               {{"schedulerName", "berth-scheduler"},
                {"containers", {{{"name", "c"}, {"image", "busybox"}}}},
                {"volumes", volumes}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return std::make_shared<const api::Pod>(api::DecodePod(pod));
}

inline json ClaimVolume(const std::string& claim, const std::string& name = "data") {
  return {{"name", name}, {"persistentVolumeClaim", {{"claimName", claim}}}};
}

}  // namespace berth::plugins::volumetesting

#endif  // BERTH_TEST_TESTING_VOLUMES_H_
