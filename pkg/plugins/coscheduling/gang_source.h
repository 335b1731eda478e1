#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_GANG_SOURCE_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_GANG_SOURCE_H_

// Where gangs come from. Coscheduling's logic (who belongs together, when they may bind) knows a
// gang only through this interface, so another API that defines gangs (the upstream
// scheduling.k8s.io PodGroup beside scheduler-plugins' scheduling.x-k8s.io one) is one more
// implementation, not a change to the plugin.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/podgroup.h"
#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::plugins::coscheduling {

// One gang as its API defines it.
struct GangSpec {
  std::string uid;
  // How many of its pods must be placed before any of them binds; at least 1.
  int32_t min_member = 1;
  // Checked against the cluster's free capacity before any of its pods is placed.
  std::optional<api::ResourceList> min_resources;
  // How long its pods wait at Permit for the rest; unset: the plugin's permitWaitingTimeSeconds.
  std::optional<std::chrono::seconds> wait;
  std::chrono::system_clock::time_point created;
  // When set, what every pod of the gang must have; a pod that differs is not placed.
  std::optional<int32_t> priority;
  std::optional<api::PreemptionPolicy> preemption_policy;
  // False for a group whose pods are placed one by one (upstream's basic policy): a pod that fits
  // nowhere then fails alone, and the group does not back off.
  bool all_or_nothing = true;
  // Its placed pods may only be preempted together (upstream's disruptionMode: {all: {}}).
  bool disrupted_whole = false;
  // All its pods in one domain of a node-label key (see api::PodGroupTopology).
  std::optional<api::PodGroupTopology> topology;
  // Non-empty when the object cannot be used, saying why and naming the field; its pods are then
  // not attempted.
  std::string problem;
};

// What the scheduler knows of a gang's progress, for the status the source keeps on it.
struct GangProgress {
  // Pods placed in the current attempt and parked at Permit until the rest are placed.
  int32_t waiting = 0;
  // Pods placed (assumed) and not yet seen bound, waiting ones included.
  int32_t assumed = 0;
  // Pods of the gang seen bound.
  int32_t bound = 0;
  // Why the gang's last attempt failed; empty when none did.
  std::string last_rejection;
  // When the scheduler first began placing the gang's pods; unset until then.
  std::optional<std::chrono::system_clock::time_point> schedule_start;
};

enum class Lookup {
  kFound,
  kNotFound,
  // The API is not served (its definition is not installed) or not read yet.
  kUnavailable,
};

// Thread-safety: every method may be called from any thread at once.
class GangSource {
 public:
  virtual ~GangSource() = default;

  // The object kind, for messages ("PodGroup").
  virtual const std::string& Kind() const = 0;
  // The name of the gang `pod` joins through this source, in the pod's namespace; empty when it
  // joins none. A view into `pod`.
  virtual std::string_view GangOf(const api::Pod& pod) const = 0;
  // The gang namespace/name. kUnavailable sets *why ("the PodGroup API ... is not served").
  virtual Lookup Get(const std::string& namespace_, const std::string& name, GangSpec* spec,
                     std::string* why) const = 0;
  // The cluster events of this source's objects that may help a pod of the gang they define, with
  // hints that say so only for the gang's own pods.
  virtual std::vector<framework::ClusterEventWithHint> Events() const = 0;
  // The object events about the gang are recorded on.
  virtual api::ObjectReference Reference(const std::string& namespace_,
                                         const std::string& name) const = 0;
  // Brings the gang's status up to date with `progress` and what the cluster shows of its pods.
  // Called from a background thread; may block on the network; throws on failure.
  virtual void WriteStatus(const std::string& namespace_, const std::string& name,
                           const GangProgress& progress) const = 0;
  // Calls `fn` (on an informer thread, quickly) whenever one of the source's gangs is added,
  // changed or deleted. `fn` must stay callable for as long as the informers run.
  virtual void OnChange(
      std::function<void(const std::string& namespace_, const std::string& name)> fn) = 0;
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_GANG_SOURCE_H_
