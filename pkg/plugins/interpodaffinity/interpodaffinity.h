#ifndef BERTH_PKG_PLUGINS_INTERPODAFFINITY_INTERPODAFFINITY_H_
#define BERTH_PKG_PLUGINS_INTERPODAFFINITY_INTERPODAFFINITY_H_

// InterPodAffinity: Filter enforces the pod's required pod affinity and anti-affinity and the
// required anti-affinity of the pods already assigned; Score prefers nodes by the pod's preferred
// terms, the preferred terms of assigned pods, and assigned pods' required affinity terms the pod
// matches (weighted by hardPodAffinityWeight). Semantics, reasons and codes are kube-scheduler's
// with the InterPodAffinityHostnameFastPath gate off (its default).
//
// Args (InterPodAffinityArgs):
//   hardPodAffinityWeight: 1               # 0-100; 0 ignores assigned pods' required affinity
//   ignorePreferredTermsOfExistingPods: false  # skip scoring pods without preferred terms
//
// PreFilter and PreScore count, per topology pair, the assigned pods that match each side's
// terms. The counts are kept across cycles for recurring pods (same namespace, labels and
// terms) and brought up to date from the nodes whose NodeInfo changed since, so that a cycle does
// not walk every pod of the cluster; Filter and Score then look a node's labels up in them.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"
#include "pkg/plugins/interpodaffinity/counts.h"
#include "pkg/plugins/interpodaffinity/terms.h"

namespace berth::plugins::interpodaffinity {

inline constexpr std::string_view kName = "InterPodAffinity";
inline constexpr std::string_view kErrReasonExistingAntiAffinityRulesNotMatch =
    "node(s) didn't satisfy existing pods anti-affinity rules";
inline constexpr std::string_view kErrReasonAffinityRulesNotMatch =
    "node(s) didn't match pod affinity rules";
inline constexpr std::string_view kErrReasonAntiAffinityRulesNotMatch =
    "node(s) didn't match pod anti-affinity rules";
// The score weight of the default profile; the framework runtime applies it, not the plugin.
inline constexpr int32_t kDefaultWeight = 2;

struct Args {
  int32_t hard_pod_affinity_weight = 1;
  bool ignore_preferred_terms_of_existing_pods = false;
};

// Parses InterPodAffinityArgs (null or {} for the defaults). Throws std::invalid_argument naming
// the field, e.g. "hardPodAffinityWeight: must be in the range 0-100".
Args ParseArgs(const nlohmann::json& args);

// PreFilter, PreScore and the PreFilter extensions run on the scheduling thread, one cycle at a
// time; Filter and Score may run concurrently for different nodes of that cycle and only read the
// cycle's state.
class InterPodAffinity final : public framework::PreFilterPlugin,
                               public framework::PreFilterExtensions,
                               public framework::FilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin,
                               public framework::ScoreExtensions,
                               public framework::EnqueueExtensions,
                               public framework::HintPlugin {
 public:
  InterPodAffinity(Args args, const framework::NodeInfoLister& lister,
                   informer::Lister<api::Namespace> namespaces);

  std::string_view Name() const override { return kName; }
  const Args& args() const { return args_; }

  // Skips when the pod has no required terms and no assigned pod's required anti-affinity
  // matches it.
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

  // Skips when no node would get a score.
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                               std::span<const framework::NodeInfo* const> nodes,
                               std::span<framework::NodeScore> scores) override;
  framework::ScoreExtensions* GetScoreExtensions() override { return this; }
  // Scales scores linearly so that the lowest becomes 0 and the highest 100 (all 0 when equal).
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   framework::NodeScoreList& scores) override;

  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  // For each of the pod's required affinity or anti-affinity terms that rejected nodes, removing
  // it, with the domains of the nodes rejected. For assigned pods' required anti-affinity that
  // keeps it out, removing the label the term selects it by, naming those pods and their domains;
  // when no label of the pod is what the term selects (NotIn, DoesNotExist, an empty selector), a
  // note that only those pods can change it.
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;

 private:
  // Upstream's updateWithPod: counts `changed` (multiplier 1) or takes it back (-1) as if it
  // were, or were no longer, on `node`.
  framework::Status UpdateWithPod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                                  const api::Pod& changed, const framework::NodeInfo& node,
                                  int64_t multiplier);

  const Args args_;
  const framework::NodeInfoLister& lister_;
  informer::Lister<api::Namespace> namespaces_;
  // Syncs tracker_ with the snapshot's `nodes` unless done already in this cycle.
  void SyncNodes(framework::CycleState& state, const std::vector<framework::NodeInfoPtr>& nodes);

  // Written by PreFilter and PreScore only (the scheduling thread); Filter reads it, and no
  // PreFilter or PreScore runs while a cycle's filters do.
  NodeListTracker tracker_;
  // The label keys the selectors of assigned pods' required anti-affinity terms read.
  CountsCache selector_keys_cache_;
  // The two Filter reads, by node position (see PreFilterState::by_node).
  CountsCache existing_anti_affinity_cache_{4, true};
  CountsCache incoming_terms_cache_{4, true};
  // The label keys the selectors of assigned pods' scoring terms read.
  CountsCache score_selector_keys_cache_;
  CountsCache score_cache_;
};

// Queueing hints, as upstream's: an assigned pod added, relabelled or deleted; a node added or
// relabelled.
framework::QueueingHint IsSchedulableAfterAssignedPodChange(const api::Pod& pod,
                                                            const framework::EventObjects& event);
framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event);

// Builds the plugin from InterPodAffinityArgs (see ParseArgs).
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::interpodaffinity

#endif  // BERTH_PKG_PLUGINS_INTERPODAFFINITY_INTERPODAFFINITY_H_
