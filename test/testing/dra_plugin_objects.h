#ifndef BERTH_TEST_TESTING_DRA_PLUGIN_OBJECTS_H_
#define BERTH_TEST_TESTING_DRA_PLUGIN_OBJECTS_H_

// Objects as the apiserver serves them (JSON) for the DynamicResources plugin's tests: claims in
// namespace "ns" and pods that name them.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/types.h"

namespace berth::testing::dra {

// Claim `name` in namespace ns, asking with request "gpu" for `count` devices of the class.
inline nlohmann::json ClaimJson(const std::string& name, const std::string& device_class,
                                int count = 1) {
  using json = nlohmann::json;
  return {
      {"metadata",
       {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}, {"resourceVersion", "10"}}},
      {"spec",
       {{"devices",
         {{"requests", json::array({{{"name", "gpu"},
                                     {"exactly",
                                      {{"deviceClassName", device_class},
                                       {"allocationMode", "ExactCount"},
                                       {"count", count}}}}})}}}}}};
}

// A pod's spec.resourceClaims entry `entry` naming claim `claim`.
inline nlohmann::json ClaimEntry(const std::string& entry, const std::string& claim) {
  return {{"name", entry}, {"resourceClaimName", claim}};
}

// Pod `name` in namespace ns (uid "uid-<name>") with these resourceClaims entries and, when given,
// status.resourceClaimStatuses.
inline api::PodPtr PodWithClaims(const std::string& name,
                                 const std::vector<nlohmann::json>& entries,
                                 const nlohmann::json& statuses = nlohmann::json::array()) {
  nlohmann::json pod = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}}},
                        {"spec", {{"containers", nlohmann::json::array({{{"name", "c"}}})}}}};
  pod["spec"]["resourceClaims"] = entries;
  if (!statuses.empty()) pod["status"]["resourceClaimStatuses"] = statuses;
  return std::make_shared<api::Pod>(api::DecodePod(pod));
}

}  // namespace berth::testing::dra

#endif  // BERTH_TEST_TESTING_DRA_PLUGIN_OBJECTS_H_
