#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_PODGROUP_SOURCE_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_PODGROUP_SOURCE_H_

// Gangs from scheduler-plugins' PodGroup custom resource (scheduling.x-k8s.io/v1alpha1): a pod
// joins with the label scheduling.x-k8s.io/pod-group: <name>, in the group's namespace.

#include <atomic>
#include <memory>
#include <string>

#include "pkg/api/podgroup.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/coscheduling/gang_source.h"

namespace berth::plugins::coscheduling {

class PodGroupSource final : public GangSource {
 public:
  // Takes the PodGroup informer from `informers`; it is listed only if API discovery finds the
  // CRD, and without it the source answers kUnavailable (logged once per process). `client`
  // writes statuses; null: none are written.
  PodGroupSource(informer::SharedInformerFactory& informers, client::Client* client);

  const std::string& Kind() const override;
  std::string_view GangOf(const api::Pod& pod) const override;
  Lookup Get(const std::string& namespace_, const std::string& name, GangSpec* spec,
             std::string* why) const override;
  std::vector<framework::ClusterEventWithHint> Events() const override;
  api::ObjectReference Reference(const std::string& namespace_,
                                 const std::string& name) const override;
  void WriteStatus(const std::string& namespace_, const std::string& name,
                   const GangProgress& progress) const override;
  void OnChange(
      std::function<void(const std::string& namespace_, const std::string& name)> fn) override;

  // The status a group of `min_member` gets from its pods as the apiserver lists them (a PodList)
  // and the scheduler's progress; `current` supplies what the scheduler does not know (a start
  // time written before a restart).
  static api::PodGroupStatus StatusFor(const nlohmann::json& pods, int32_t min_member,
                                       const GangProgress& progress,
                                       const api::PodGroupStatus& current);

 private:
  informer::Informer<api::PodGroup>& informer_;
  client::Client* client_;
  // -1 until discovery answered, then 0 or 1. Shared with the informer's callback, which may
  // outlive this object.
  std::shared_ptr<std::atomic<int>> served_ = std::make_shared<std::atomic<int>>(-1);
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_PODGROUP_SOURCE_H_
