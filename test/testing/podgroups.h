#ifndef BERTH_TEST_TESTING_PODGROUPS_H_
#define BERTH_TEST_TESTING_PODGROUPS_H_

// PodGroups for unit tests, decoded from manifests as the informer decodes them.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "pkg/api/podgroup.h"

namespace berth::testing {

// A PodGroup (scheduling.x-k8s.io) `name` in `ns` asking for `min_member` pods, decoded as the
// informer decodes it.
inline std::shared_ptr<api::PodGroup> PodGroupObject(const std::string& name, int64_t min_member,
                                                     const std::string& ns = "default") {
  return std::make_shared<api::PodGroup>(
      api::DecodePodGroup(nlohmann::json{{"metadata",
                                          {{"name", name},
                                           {"namespace", ns},
                                           {"uid", "uid-" + name},
                                           {"resourceVersion", "1"},
                                           {"creationTimestamp", "2025-01-01T00:00:00Z"}}},
                                         {"spec", {{"minMember", min_member}}}}));
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_PODGROUPS_H_
