#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_PODGROUP_SOURCE_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_PODGROUP_SOURCE_H_

// Gangs from scheduler-plugins' PodGroup custom resource (scheduling.x-k8s.io/v1alpha1): a pod
// joins with the label scheduling.x-k8s.io/pod-group: <name>, in the group's namespace. Berth
// keeps the status scheduler-plugins' controller would (phase, counts, scheduleStartTime).

#include <nlohmann/json.hpp>
#include <string>

#include "pkg/api/podgroup.h"
#include "pkg/plugins/coscheduling/informer_source.h"

namespace berth::plugins::coscheduling {

class PodGroupSource final : public InformerSource<api::PodGroup> {
 public:
  // Without the CRD the source answers kUnavailable, and says once in the log that gang
  // scheduling is off. `client` writes statuses; null: none are written.
  PodGroupSource(informer::SharedInformerFactory& informers, client::Client* client);

  void WriteStatus(const std::string& namespace_, const std::string& name,
                   const GangProgress& progress) const override;

  // The status a group of `min_member` gets from its pods as the apiserver lists them (a PodList)
  // and the scheduler's progress; `current` supplies what the scheduler does not know (a start
  // time written before a restart).
  static api::PodGroupStatus StatusFor(const nlohmann::json& pods, int32_t min_member,
                                       const GangProgress& progress,
                                       const api::PodGroupStatus& current);

 protected:
  void Translate(const api::PodGroup& group, GangSpec* spec) const override;

 private:
  client::Client* client_;
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_PODGROUP_SOURCE_H_
