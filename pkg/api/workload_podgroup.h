#ifndef BERTH_PKG_API_WORKLOAD_PODGROUP_H_
#define BERTH_PKG_API_WORKLOAD_PODGROUP_H_

// Upstream Kubernetes' own gang object, scheduling.k8s.io/v1beta1 PodGroup (the Workload API,
// served behind the GenericWorkload feature gate): its scheduling policy, the priority its pods
// must share, and the PodGroupInitiallyScheduled condition the scheduler keeps on it. Pods join
// one through spec.schedulingGroup.podGroupName, in the group's namespace.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "pkg/api/podgroup.h"
#include "pkg/api/types.h"

namespace berth::api {

// The condition a scheduler writes once it has tried to place the group: True (reason
// "Scheduled") once the group's quorum is placed, after which it never turns False again; False
// with reason "Unschedulable" or "SchedulerError" until then.
inline constexpr char kPodGroupInitiallyScheduled[] = "PodGroupInitiallyScheduled";

struct WorkloadPodGroupSpec {
  // schedulingPolicy.gang.minCount; 1 under the basic policy, whose pods are placed one by one.
  int32_t min_count = 1;
  bool gang = false;
  // spec.priority (0 when absent, as upstream reads it): every pod of the group must have it.
  int32_t priority = 0;
  // spec.preemptionPolicy, when set: every pod of the group must have it.
  std::optional<PreemptionPolicy> preemption_policy;
  // spec.disruptionMode.all: its pods may only be disrupted (preempted) together.
  bool disrupted_as_whole = false;
  // spec.schedulingConstraints.topology (the TopologyAwareWorkloadScheduling gate): one key.
  std::optional<PodGroupTopology> topology;

  bool operator==(const WorkloadPodGroupSpec& other) const = default;
};

// status.conditions[type=PodGroupInitiallyScheduled] as last written.
struct WorkloadPodGroupCondition {
  std::string status;  // "True" or "False".
  std::string reason;
  std::string message;
  int64_t observed_generation = 0;

  bool operator==(const WorkloadPodGroupCondition& other) const = default;
};

struct WorkloadPodGroup {
  ObjectMeta meta;
  WorkloadPodGroupSpec spec;
  std::optional<WorkloadPodGroupCondition> initially_scheduled;
  // Empty when Berth can honour the spec; otherwise why not, naming the field. A group asking for
  // what Berth does not do (shared resource claims, a composite parent) is
  // refused rather than placed as if the field were absent.
  std::string problem;

  bool operator==(const WorkloadPodGroup& other) const = default;
};

// Unusable metadata (no name) throws DecodeError, as every decoder does. A malformed or
// unsupported spec does not: the object is kept with `problem` set, so the group's pods can say
// why they wait. A malformed status is read as none, since the scheduler rewrites it.
WorkloadPodGroup DecodeWorkloadPodGroup(const nlohmann::json& object);

}  // namespace berth::api

#endif  // BERTH_PKG_API_WORKLOAD_PODGROUP_H_
