#ifndef BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_PODTOPOLOGYSPREAD_H_
#define BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_PODTOPOLOGYSPREAD_H_

// PodTopologySpread: spreads pods over topology domains (zones, hosts, ...) as their
// spec.topologySpreadConstraints ask. Filter enforces the DoNotSchedule constraints (the skew of
// matching pods between the node's domain and the least loaded one stays within maxSkew, with
// minDomains and the node inclusion policies); Score prefers nodes whose domains hold fewer
// matching pods for the ScheduleAnyway ones. A pod with no constraints of its own gets the
// profile's default constraints, with a selector made from the Services, ReplicaSets,
// StatefulSets and ReplicationControllers that select it.
//
// Args (PodTopologySpreadArgs):
//   defaultConstraints: [{maxSkew, topologyKey, whenUnsatisfiable}, ...]  (no labelSelector)
//   defaultingType: System (default: hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway;
//                   defaultConstraints must then be empty) or List (defaultConstraints as given)

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"
#include "pkg/plugins/podtopologyspread/node_index.h"

namespace berth::plugins::podtopologyspread {

inline constexpr std::string_view kName = "PodTopologySpread";
inline constexpr std::string_view kErrReasonConstraintsNotMatch =
    "node(s) didn't match pod topology spread constraints";
inline constexpr std::string_view kErrReasonNodeLabelNotMatch =
    "node(s) didn't match pod topology spread constraints (missing required label)";
// CycleState keys ("PreFilter" / "PreScore" + plugin name, as upstream).
inline constexpr std::string_view kPreFilterStateKey = "PreFilterPodTopologySpread";
inline constexpr std::string_view kPreScoreStateKey = "PreScorePodTopologySpread";
// The score weight of the default profile; the framework runtime applies it, not the plugin.
inline constexpr int32_t kDefaultWeight = 2;

inline constexpr std::string_view kHostnameKey = "kubernetes.io/hostname";
inline constexpr std::string_view kZoneKey = "topology.kubernetes.io/zone";

enum class DefaultingType { kSystem, kList };

// PodTopologySpreadArgs after defaulting and validation.
struct Args {
  std::vector<api::TopologySpreadConstraint> default_constraints;
  DefaultingType defaulting_type = DefaultingType::kSystem;
};

// Decodes, defaults and validates PodTopologySpreadArgs (null: all defaults). Throws
// std::invalid_argument naming the field, e.g. "defaultConstraints[0].maxSkew: Invalid value: 0:
// not in valid range (0, inf)".
Args ParseArgs(const nlohmann::json& args);

// The constraints the system defaulting applies: hostname maxSkew 3, zone maxSkew 5, both
// ScheduleAnyway.
const std::vector<api::TopologySpreadConstraint>& SystemDefaultConstraints();

// One constraint of a pod with its selector resolved: the pod's labelSelector with the pod's
// values of matchLabelKeys added, or, for a default constraint, the selector of the pod's
// Services and controller.
struct Constraint {
  int32_t max_skew = 1;
  std::string topology_key;
  // Absent: matches no pod (a constraint without labelSelector).
  std::optional<api::LabelSelector> selector;
  int32_t min_domains = 1;
  api::NodeInclusionPolicy node_affinity_policy = api::NodeInclusionPolicy::kHonor;
  api::NodeInclusionPolicy node_taints_policy = api::NodeInclusionPolicy::kIgnore;

  bool Matches(const api::Labels& labels) const { return selector && selector->Matches(labels); }
};

// The selector of the pod's Services (their spec.selector merged) and its controlling
// ReplicationController, ReplicaSet or StatefulSet; empty when nothing selects the pod.
// Listers may be null (nothing of that kind).
struct OwnerListers {
  std::optional<informer::Lister<api::Service>> services;
  std::optional<informer::Lister<api::ReplicationController>> replication_controllers;
  std::optional<informer::Lister<api::ReplicaSet>> replica_sets;
  std::optional<informer::Lister<api::StatefulSet>> stateful_sets;
};
api::LabelSelector DefaultSelector(const api::Pod& pod, const OwnerListers& listers);

// Per-cycle state: Filter and Score only read it and are safe to call concurrently. PreFilter and
// PreScore share the node index under a lock; they run on the scheduling thread.
class PodTopologySpread final : public framework::PreFilterPlugin,
                                public framework::PreFilterExtensions,
                                public framework::FilterPlugin,
                                public framework::PreScorePlugin,
                                public framework::ScorePlugin,
                                public framework::ScoreExtensions,
                                public framework::EnqueueExtensions,
                                public framework::HintPlugin {
 public:
  PodTopologySpread(Args args, framework::Handle& handle);

  std::string_view Name() const override { return kName; }

  // Skips the pod when it has no DoNotSchedule constraint (own or default).
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::PreFilterExtensions* Extensions() override { return this; }
  framework::Status AddPod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                           const framework::PodInfo& pod_to_add,
                           const framework::NodeInfo& node) override;
  framework::Status RemovePod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                              const framework::PodInfo& pod_to_remove,
                              const framework::NodeInfo& node) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  void FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                   std::span<const framework::NodeInfo* const> nodes,
                   std::span<framework::Status> statuses) override;

  // Skips the pod when it has no ScheduleAnyway constraint (own or default).
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  // The weighted count of matching pods in the node's domains: lower is better.
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                               std::span<const framework::NodeInfo* const> nodes,
                               std::span<framework::NodeScore> scores) override;
  framework::ScoreExtensions* GetScoreExtensions() override { return this; }
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   framework::NodeScoreList& scores) override;

  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  // Queueing hints (upstream's): an assigned pod in the namespace added, deleted or relabelled
  // so that a DoNotSchedule selector's verdict on it changed.
  framework::QueueingHint IsSchedulableAfterAssignedPodChange(
      const api::Pod& pod, const framework::EventObjects& event) const;
  // The rejected pod's own labels changed a selector's verdict on it, or it got new tolerations
  // while a constraint honours taints.
  framework::QueueingHint IsSchedulableAfterTargetPodChange(
      const api::Pod& pod, const framework::EventObjects& event) const;
  // A node with every topology key came or went, or one that has them changed a key's value or
  // its taints, or gained or lost a key.
  framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                       const framework::EventObjects& event) const;

  // For each of the pod's own DoNotSchedule constraints, relaxing it to ScheduleAnyway, with the
  // domains of the nodes it rejected. Nothing for the defaults: they are not the pod's.
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;

  // The pod's constraints with the given action: its own, or the defaults when it has none.
  std::vector<Constraint> GetConstraints(const api::Pod& pod, api::WhenUnsatisfiable action) const;

 private:
  std::vector<Constraint> DefaultConstraints(const api::Pod& pod,
                                             api::WhenUnsatisfiable action) const;

  const std::vector<api::TopologySpreadConstraint> default_constraints_;
  const bool system_defaulted_;
  framework::Handle& handle_;
  OwnerListers listers_;

  std::mutex index_mu_;
  NodeIndex index_;  // Guarded by index_mu_.
};

// Builds the plugin from PodTopologySpreadArgs (see ParseArgs).
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::podtopologyspread

#endif  // BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_PODTOPOLOGYSPREAD_H_
