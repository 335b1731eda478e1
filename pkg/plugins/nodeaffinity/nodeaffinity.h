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
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"
#include "pkg/plugins/helper/node_list_tracker.h"

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

// What Filter decides for one required node selection on one node.
enum class Outcome : uint8_t { kFits, kEnforcedMismatch, kPodMismatch };

// For the required node selections (a pod's nodeSelector and required node affinity) that pods
// keep asking for (the replicas of a workload), Filter's outcome on every node of the snapshot's
// list, kept across cycles and recomputed only for the nodes that changed, so that Filter reads
// one byte by the node's list position instead of the node's labels. A selection is kept from
// its second request on: one-off selections cost what Filter costs without it.
//
// Not thread-safe: Get is called from PreFilter (the scheduling thread) only; the Filter of the
// same cycle reads the columns and the tracker, and no PreFilter runs while it does.
class SelectionColumns {
 public:
  struct Column {
    // A pod with only the selection: its nodeSelector and required node affinity.
    api::Pod selection;
    std::vector<Outcome> outcomes;
    uint64_t last_used = 0;
  };

  explicit SelectionColumns(const AddedAffinity& added) : added_(added) {}
  // Syncs with `nodes` (the snapshot's list) and returns the column of the pod's selection; null
  // for a selection not asked for before.
  std::shared_ptr<const Column> Get(const api::Pod& pod,
                                    const std::vector<framework::NodeInfoPtr>& nodes);
  const helper::NodeListTracker& tracker() const { return tracker_; }

 private:
  static constexpr size_t kMaxColumns = 16;
  Outcome Evaluate(const api::Pod& selection, const framework::NodeInfo& info) const;

  const AddedAffinity& added_;
  helper::NodeListTracker tracker_;
  std::vector<std::shared_ptr<Column>> columns_;
  // Selections asked for once and not kept, newest last.
  std::vector<api::Pod> seen_once_;
};

// The added affinity is fixed per profile. PreFilter keeps the selection columns (see
// SelectionColumns); every other method is safe to call concurrently.
class NodeAffinity final : public framework::PreFilterPlugin,
                           public framework::FilterPlugin,
                           public framework::PreScorePlugin,
                           public framework::ScorePlugin,
                           public framework::ScoreExtensions,
                           public framework::EnqueueExtensions,
                           public framework::HintPlugin {
 public:
  explicit NodeAffinity(AddedAffinity added) : added_(std::move(added)), columns_(added_) {}

  std::string_view Name() const override { return kName; }

  // Skips the pod when nothing constrains it. When every required term pins metadata.name with
  // an In requirement, narrows the candidates to the union of those names.
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  // Reads the selection's column for the nodes listed in it; Filter on each other node, after
  // asking for every such node's labels at once.
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

  // Of the pod's nodeSelector entries and required node affinity requirements, those that
  // exclude the most of the nodes it rejected, each as a change that removes it. Nothing for
  // nodes addedAffinity rejects: that is not the pod's to change.
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;

  // Queues when the added or updated node now satisfies addedAffinity and the pod's required
  // affinity/selector, and (for an update) did not before.
  framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                       const framework::EventObjects& event) const;

 private:
  const AddedAffinity added_;
  SelectionColumns columns_;
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
