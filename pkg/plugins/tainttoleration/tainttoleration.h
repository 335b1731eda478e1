#ifndef BERTH_PKG_PLUGINS_TAINTTOLERATION_TAINTTOLERATION_H_
#define BERTH_PKG_PLUGINS_TAINTTOLERATION_TAINTTOLERATION_H_

// TaintToleration: Filter rejects nodes with a NoSchedule or NoExecute taint the pod does not
// tolerate; Score prefers nodes with fewer untolerated PreferNoSchedule taints.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::plugins::tainttoleration {

inline constexpr std::string_view kName = "TaintToleration";
// Filter's reason for a node with a NoSchedule or NoExecute taint the pod does not tolerate.
inline constexpr std::string_view kErrReasonUntoleratedTaint = "node(s) had untolerated taint(s)";
// The score weight of the default profile; the framework runtime applies it, not the plugin.
inline constexpr int32_t kDefaultWeight = 3;
// CycleState key of what PreScore computes for Score.
inline constexpr std::string_view kPreScoreStateKey = "PreScoreTaintToleration";

// Stateless apart from the per-cycle data it keeps in CycleState; Filter and Score only read
// that state and are safe to call concurrently.
class TaintToleration final : public framework::FilterPlugin,
                              public framework::PreScorePlugin,
                              public framework::ScorePlugin,
                              public framework::ScoreExtensions,
                              public framework::EnqueueExtensions,
                              public framework::HintPlugin {
 public:
  std::string_view Name() const override { return kName; }

  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  void FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                   std::span<const framework::NodeInfo* const> nodes,
                   std::span<framework::Status> statuses) override;

  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  // The number of PreferNoSchedule taints on the node the pod does not tolerate.
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                               std::span<const framework::NodeInfo* const> nodes,
                               std::span<framework::NodeScore> scores) override;
  framework::ScoreExtensions* GetScoreExtensions() override { return this; }
  // Reversed: the node with the most untolerated taints gets 0, nodes with none get 100.
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   framework::NodeScoreList& scores) override;

  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  // Tolerations that admit the pod to the nodes it rejected: for each set of untolerated taints
  // the rejected nodes share (most often a single taint), tolerating all of them; the sets that
  // cover the most nodes first.
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;
};

// The toleration that tolerates exactly `taint`: Equal on its key and value, or Exists when it has
// no value; with the taint's effect.
api::Toleration TolerationFor(const api::Taint& taint);
// As a person writes it in a pod spec: "key=value:NoSchedule", "key:NoExecute" (Exists).
std::string DescribeToleration(const api::Toleration& toleration);

// The first NoSchedule or NoExecute taint, in node order, that no toleration tolerates.
std::optional<api::Taint> FindUntoleratedTaint(const std::vector<api::Taint>& taints,
                                               const std::vector<api::Toleration>& tolerations);

// Queues when the pod had an untolerated NoSchedule/NoExecute taint on the node before the event
// (a new node counts as having had one) and has none after it.
framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event);
// Queues on a toleration update of the pod itself.
framework::QueueingHint IsSchedulableAfterPodTolerationChange(const api::Pod& pod,
                                                              const framework::EventObjects& event);

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::tainttoleration

#endif  // BERTH_PKG_PLUGINS_TAINTTOLERATION_TAINTTOLERATION_H_
