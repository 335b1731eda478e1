#include "pkg/api/resources.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "pkg/api/types.h"

namespace berth::api {

int64_t IntOrPercent::Scaled(int32_t total, bool round_up) const {
  if (!percent) {
    return value;
  }
  // Both factors are int32, so the product fits.
  const int64_t product = static_cast<int64_t>(value) * total;
  int64_t quotient = product / 100;
  const int64_t remainder = product % 100;
  // C++ division truncates toward zero; move to the floor or the ceiling.
  if (remainder != 0) {
    if (round_up && product > 0) {
      quotient++;
    } else if (!round_up && product < 0) {
      quotient--;
    }
  }
  return quotient;
}

bool PodDisruptionBudgetStatus::IsDisrupted(std::string_view pod_name) const {
  return std::binary_search(disrupted_pods.begin(), disrupted_pods.end(), pod_name);
}

namespace {

const std::string& ClassName(const ObjectMeta& meta, const std::string& spec_class) {
  if (const std::string* annotated = meta.annotations.Find(kBetaStorageClassAnnotation)) {
    return *annotated;
  }
  return spec_class;
}

}  // namespace

const std::string& PersistentVolumeClaim::StorageClassName() const {
  return ClassName(meta, spec.storage_class_name);
}

bool PersistentVolumeClaim::HasAccessMode(PersistentVolumeAccessMode mode) const {
  return std::find(spec.access_modes.begin(), spec.access_modes.end(), mode) !=
         spec.access_modes.end();
}

const std::string& PersistentVolume::StorageClassName() const {
  return ClassName(meta, spec.storage_class_name);
}

bool StorageClass::AllowsTopology(const Labels& node_labels) const {
  if (allowed_topologies.empty()) {
    return true;
  }
  for (const TopologySelectorTerm& term : allowed_topologies) {
    if (term.match_label_expressions.empty()) {
      continue;
    }
    const bool all_match = std::all_of(
        term.match_label_expressions.begin(), term.match_label_expressions.end(),
        [&](const TopologySelectorRequirement& requirement) {
          const std::string* value = node_labels.Find(requirement.key);
          return value != nullptr &&
                 std::binary_search(requirement.values.begin(), requirement.values.end(), *value);
        });
    if (all_match) {
      return true;
    }
  }
  return false;
}

const CSINodeDriver* CSINode::FindDriver(std::string_view name) const {
  for (const CSINodeDriver& driver : drivers) {
    if (driver.name == name) {
      return &driver;
    }
  }
  return nullptr;
}

}  // namespace berth::api
