#ifndef BERTH_PKG_SCHEDULER_DRY_RUN_INTERNAL_H_
#define BERTH_PKG_SCHEDULER_DRY_RUN_INTERNAL_H_

// DryRunner's parts shared by its source files (dry_runner.cc: one pod; dry_run_group.cc: a
// group). Not for use outside them.

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/scheduler/dry_runner.h"
#include "pkg/util/clock.h"

namespace berth::scheduler {
namespace dry_run {

// Of the best-scored nodes, the first by name: the node a cycle would choose, but for its random
// tie-break. Index into `scores`.
size_t BestScored(const std::vector<framework::runtime::NodePluginScores>& scores);

}  // namespace dry_run

// The time one answer (an explain or a simulate) may spend in dry runs. Asked before every dry
// run but the pod's own first one, which is one scheduling cycle's work and gives the answer its
// attempt: a dry run is bounded by the cluster's nodes, but how many of them an answer makes (one
// per change, one per pod of a gang, a gang's pods again per change) is what hostile input
// drives. Not thread-safe: one answer, one thread.
struct DryRunner::DryRunBudget {
  const util::Clock& clock;
  util::Clock::TimePoint deadline;
  bool cut_short = false;

  // Whether another dry run may start. Once it may not, none may: an answer is cut at one point.
  bool Allows() {
    if (!cut_short && clock.Now() >= deadline) cut_short = true;
    return !cut_short;
  }
};

// The pods a group's dry run places, in order: the group's pending pods, then copies of one pod
// standing in for members no one has created yet, each made only when it is tried.
struct DryRunner::GroupPods {
  std::vector<api::PodPtr> pending;
  // What each copy is made from; copies are named and identified after it and their number.
  api::PodPtr stand_in;
  // Copies to try, at most; at most explain::kMaxStandIns.
  int stand_ins = 0;
  // Written into each pod's cycle state first (the changes being checked).
  std::vector<Prepare> prepare;
};

struct DryRunner::DryRun {
  std::unique_ptr<framework::CycleState> state;
  // Every node of the snapshot, in its order; statuses[i] is nodes[i]'s verdict (success: it
  // passed Filter). Valid until the snapshot is next updated, that is, for the turn.
  std::vector<const framework::NodeInfo*> nodes;
  std::vector<framework::Status> statuses;
  // Nodes PreFilter's result left out; their status says which plugins did.
  std::vector<char> excluded;
  int num_excluded = 0;
  // PreFilter's rejection or error, which stopped the run before Filter; success otherwise.
  framework::Status pre_filter;
  std::string pre_filter_note;
  std::vector<std::string> narrowed_by;
  std::vector<const framework::NodeInfo*> feasible;
  // Over `feasible`, when scored.
  std::vector<framework::runtime::NodePluginScores> scores;
  // A PreScore or Score error.
  framework::Status error;
  // Copies of the nodes the run's placed pods are on, with them added; `nodes` points at these
  // in place of the snapshot's.
  std::vector<std::shared_ptr<framework::NodeInfo>> copies;
};

struct DryRunner::GroupRun {
  // Pods placed, in the order given, and which of the pending ones were (parallel to them).
  int placed = 0;
  std::vector<char> fitted;
  // Copies of the stand-in tried, the last of them perhaps fitting no node.
  int stand_ins = 0;
  std::vector<DryPlacement> placements;
  // The first pod that fitted no node, why, and what the plugins proposed for it (with
  // `suggest`).
  api::PodPtr failed;
  std::string failed_message;
  std::vector<std::pair<std::string, framework::PodChange>> changes;

  int Nodes() const {
    std::set<std::string_view> nodes;
    for (const auto& p : placements) nodes.insert(p.node);
    return static_cast<int>(nodes.size());
  }
};

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_DRY_RUN_INTERNAL_H_
