#include "pkg/plugins/coscheduling/workload_podgroup_source.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "pkg/util/time.h"

namespace berth::plugins::coscheduling {
namespace {

std::string_view GroupOf(const api::Pod& pod) {
  return pod.spec.scheduling_group ? std::string_view(*pod.spec.scheduling_group)
                                   : std::string_view();
}

GangApi Api() {
  return {
      .kind = "PodGroup",
      .api_version = "scheduling.k8s.io/v1beta1",
      .resource = framework::EventResource::kWorkloadPodGroup,
      .gang_of = GroupOf,
      .not_served =
          "the PodGroup API (scheduling.k8s.io/v1beta1) is not served: the apiserver "
          "runs without the GenericWorkload feature gate or that API version",
      // Pods can only name such a group where the gate is on, so its absence is the common case.
      .off_log =
          "scheduling.k8s.io/v1beta1 PodGroups are not served; pods that name one in "
          "spec.schedulingGroup stay pending",
  };
}

}  // namespace

WorkloadPodGroupSource::WorkloadPodGroupSource(informer::SharedInformerFactory& informers,
                                               client::Client* client)
    : InformerSource(informers, Api()), client_(client) {}

void WorkloadPodGroupSource::Translate(const api::WorkloadPodGroup& group, GangSpec* spec) const {
  spec->min_member = group.spec.min_count;
  spec->priority = group.spec.priority;
  spec->preemption_policy = group.spec.preemption_policy;
  spec->all_or_nothing = group.spec.gang;
  spec->topology = group.spec.topology;
  spec->disrupted_whole = group.spec.disrupted_as_whole;
}

std::optional<api::WorkloadPodGroupCondition> WorkloadPodGroupSource::ConditionFor(
    const api::WorkloadPodGroup& group, const GangProgress& progress) {
  const auto& current = group.initially_scheduled;
  if (current && current->status == "True") return std::nullopt;
  api::WorkloadPodGroupCondition want;
  want.observed_generation = group.meta.generation;
  const int32_t allowed = progress.assumed - progress.waiting;
  if (!group.problem.empty()) {
    want = {"False", "SchedulerError", group.problem, group.meta.generation};
  } else if (progress.bound + allowed >= group.spec.min_count) {
    want = {"True", "Scheduled",
            group.spec.gang
                ? "all " + std::to_string(group.spec.min_count) + " required pods placed"
                : "",
            group.meta.generation};
  } else if (!progress.last_rejection.empty()) {
    want = {"False", "Unschedulable", progress.last_rejection, group.meta.generation};
  } else {
    return std::nullopt;
  }
  if (current && *current == want) return std::nullopt;
  return want;
}

void WorkloadPodGroupSource::WriteStatus(const std::string& namespace_, const std::string& name,
                                         const GangProgress& progress) const {
  if (client_ == nullptr) return;
  auto group = Find(namespace_, name);
  if (!group) return;
  const std::optional<api::WorkloadPodGroupCondition> condition = ConditionFor(*group, progress);
  if (!condition) return;
  nlohmann::json item = {{"type", api::kPodGroupInitiallyScheduled},
                         {"status", condition->status},
                         {"reason", condition->reason},
                         {"message", condition->message},
                         {"observedGeneration", condition->observed_generation}};
  // Merged by type into the list, so a transition time written before stays unless the status
  // changes.
  const auto& current = group->initially_scheduled;
  if (!current || current->status != condition->status) {
    item["lastTransitionTime"] = util::FormatRfc3339(std::chrono::system_clock::now());
  }
  PatchStatus(*client_, client::WorkloadPodGroupsResource().Path(namespace_, name, "status"),
              {{"status", {{"conditions", {item}}}}}, client::PatchType::kStrategicMerge);
}

}  // namespace berth::plugins::coscheduling
