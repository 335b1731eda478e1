#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_WORKLOAD_PODGROUP_SOURCE_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_WORKLOAD_PODGROUP_SOURCE_H_

// Gangs from upstream Kubernetes' own PodGroup (scheduling.k8s.io/v1beta1, the Workload API
// behind the GenericWorkload feature gate): a pod joins with spec.schedulingGroup.podGroupName, in
// the group's namespace; schedulingPolicy.gang.minCount is the gang's minimum, and the basic
// policy places pods one by one. The status Berth keeps is the one kube-scheduler keeps: the
// PodGroupInitiallyScheduled condition.

#include <optional>
#include <string>

#include "pkg/api/workload_podgroup.h"
#include "pkg/plugins/coscheduling/informer_source.h"

namespace berth::plugins::coscheduling {

class WorkloadPodGroupSource final : public InformerSource<api::WorkloadPodGroup> {
 public:
  // `client` writes statuses; null: none are written.
  WorkloadPodGroupSource(informer::SharedInformerFactory& informers, client::Client* client);

  void WriteStatus(const std::string& namespace_, const std::string& name,
                   const GangProgress& progress) const override;

  // The PodGroupInitiallyScheduled condition `group` should carry given the scheduler's
  // progress, or nullopt when what it carries is right: True ("Scheduled") once the quorum is
  // placed, and never False again after; False "SchedulerError" while the spec cannot be used;
  // False "Unschedulable" with the last failed attempt's message; nothing before any attempt.
  static std::optional<api::WorkloadPodGroupCondition> ConditionFor(
      const api::WorkloadPodGroup& group, const GangProgress& progress);

 protected:
  void Translate(const api::WorkloadPodGroup& group, GangSpec* spec) const override;

 private:
  client::Client* client_;
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_WORKLOAD_PODGROUP_SOURCE_H_
