#ifndef BERTH_PKG_SCHEDULER_UNSUPPORTED_FIELDS_H_
#define BERTH_PKG_SCHEDULER_UNSUPPORTED_FIELDS_H_

// Pod fields that change where upstream kube-scheduler places a pod but that no Berth plugin
// reads yet. Binding such a pod as if the field were absent is a silent wrong answer (a claim
// never allocated, a volume never bound, an anti-affinity broken), so the scheduler keeps the pod
// Pending and says which field it cannot honour. Each entry names the upstream plugins that
// honour the field; when Berth gains them, the entry goes.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pkg/api/types.h"

namespace berth::scheduler {

struct UnsupportedField {
  // Where the pod uses it: "spec.resourceClaims", "spec.volumes[2].persistentVolumeClaim".
  std::string path;
  // The upstream plugins that read the field for placement; Berth has none of them yet.
  std::span<const std::string_view> plugins;
  // The reason users see in the FailedScheduling event and the PodScheduled condition.
  std::string message;
};

// The first field the pod uses that Berth does not honour, in the table's order, or nullopt.
// Reads only the pod; thread-safe.
std::optional<UnsupportedField> FindUnsupportedField(const api::Pod& pod);

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_UNSUPPORTED_FIELDS_H_
