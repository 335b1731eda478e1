#ifndef BERTH_PKG_PLUGINS_NODEAFFINITY_NODEAFFINITY_H_
#define BERTH_PKG_PLUGINS_NODEAFFINITY_NODEAFFINITY_H_

// NodeAffinity: Filter enforces the pod's spec.nodeSelector and required node affinity (plus the
// scheduler-enforced addedAffinity from the plugin args); Score sums the weights of the
// preferred terms a node matches.
//
// Args (NodeAffinityArgs), with the field names of v1.NodeAffinity:
//   addedAffinity:
//     requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [...]}
//     preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {...}}]
// addedAffinity applies to every pod of the profile on top of the pod's own affinity.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::plugins::nodeaffinity {

inline constexpr std::string_view kName = "NodeAffinity";
// The node does not satisfy the pod's nodeSelector or required node affinity.
inline constexpr std::string_view kErrReasonPod =
    "node(s) didn't match Pod's node affinity/selector";
// The node does not satisfy the required part of the plugin's addedAffinity.
inline constexpr std::string_view kErrReasonEnforced =
    "node(s) didn't match scheduler-enforced node affinity";
// Every required term pins the pod to metadata.name values, and no name survives all of them.
inline constexpr std::string_view kErrReasonConflict = "pod affinity terms conflict";
// The score weight of the default profile; the framework runtime applies it, not the plugin.
inline constexpr int32_t kDefaultWeight = 2;

// The parsed addedAffinity args. Terms with weight 0 are dropped: they never add to a score.
struct AddedAffinity {
  std::optional<api::NodeSelector> required;
  std::vector<api::PreferredSchedulingTerm> preferred;
};

// Parses NodeAffinityArgs (null or {} for none). Throws std::invalid_argument naming the field,
// e.g. "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]...".
AddedAffinity ParseArgs(const nlohmann::json& args);

// Immutable after construction (the added affinity is fixed per profile) and keeps no per-cycle
// state, so every method is safe to call concurrently.
class NodeAffinity final : public framework::PreFilterPlugin,
                           public framework::FilterPlugin,
                           public framework::PreScorePlugin,
                           public framework::ScorePlugin,
                           public framework::ScoreExtensions,
                           public framework::EnqueueExtensions {
 public:
  explicit NodeAffinity(AddedAffinity added) : added_(std::move(added)) {}

  std::string_view Name() const override { return kName; }

  // Skips the pod when nothing constrains it. When every required term pins metadata.name with
  // an In requirement, narrows the candidates to the union of those names.
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  // Filter on each node, after asking for every node's labels at once.
  void FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                   std::span<const framework::NodeInfo* const> nodes,
                   std::span<framework::Status> statuses) override;

  // Skips scoring when neither the pod nor addedAffinity has preferred terms.
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::ScoreExtensions* GetScoreExtensions() override { return this; }
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   framework::NodeScoreList& scores) override;

  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  // Queues when the added or updated node now satisfies addedAffinity and the pod's required
  // affinity/selector, and (for an update) did not before.
  framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                       const framework::EventObjects& event) const;

 private:
  const AddedAffinity added_;
};

// Whether `node` satisfies the pod's spec.nodeSelector and required node affinity (true when
// the pod has neither).
bool RequiredNodeAffinityMatches(const api::Pod& pod, const api::Node& node);

// Queues on an update of the pod itself that changed its nodeSelector or required node
// affinity (the apiserver admits such changes only while the pod is gated).
framework::QueueingHint IsSchedulableAfterPodChange(const api::Pod& pod,
                                                    const framework::EventObjects& event);

// Builds the plugin from NodeAffinityArgs (see ParseArgs).
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::nodeaffinity

#endif  // BERTH_PKG_PLUGINS_NODEAFFINITY_NODEAFFINITY_H_
