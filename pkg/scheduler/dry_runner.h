#ifndef BERTH_PKG_SCHEDULER_DRY_RUNNER_H_
#define BERTH_PKG_SCHEDULER_DRY_RUNNER_H_

// The dry runs behind explain and simulate: PreFilter, Filter over every node, PreScore and Score
// of a pod on the scheduler's own snapshot and profiles, between scheduling cycles (CycleGate),
// with the CycleState marked dry_run so that no plugin changes anything. Nothing is assumed,
// reserved or bound; no event, condition or metric is written. The Scheduler owns one and lends
// it the parts of its state the dry runs read.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/cache/cache.h"
#include "pkg/cache/snapshot.h"
#include "pkg/explain/record.h"
#include "pkg/explain/store.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/runtime/framework.h"
#include "pkg/framework/runtime/parallelizer.h"
#include "pkg/scheduler/cycle_gate.h"
#include "pkg/util/clock.h"

namespace berth::informer {
class SharedInformerFactory;
}  // namespace berth::informer

namespace berth::scheduler {

using Profiles = std::map<std::string, std::unique_ptr<framework::runtime::Framework>>;

// Writes the scores of scores[chosen], then of scores[i] for each i of `others`, into `attempt`:
// what a cycle's record and a dry run's record show of the scoring.
void RecordScores(const framework::runtime::Framework& fwk,
                  const std::vector<framework::runtime::NodePluginScores>& scores, size_t chosen,
                  std::span<const size_t> others, explain::Attempt* attempt);

// What the dry runs borrow from the Scheduler that owns them; every reference outlives the
// DryRunner. The snapshot is the scheduling cycle's own: dry runs update and read it only while
// holding a CycleGate::SideTurn, so no cycle runs meanwhile.
struct DryRunnerDeps {
  cache::Cache& cache;
  cache::Snapshot& snapshot;
  CycleGate& gate;
  explain::Store& attempts;
  framework::runtime::WorkerPool& parallelizer;
  const Profiles& profiles;
  // Null without informers: the recorded pod object is then the one explained.
  informer::SharedInformerFactory* informers = nullptr;
};

// Thread-safe: each answer takes turns with the scheduling cycle at the gate.
class DryRunner {
 public:
  // `budget`: how long one explain or simulate may spend in dry runs after the pod's own first
  // one; past it, no further dry run starts and the answer says it was cut short. `clock`: the
  // clock the budget is measured on; the steady clock when null.
  DryRunner(DryRunnerDeps deps, std::chrono::milliseconds budget,
            std::shared_ptr<const util::Clock> clock);
  ~DryRunner();
  DryRunner(const DryRunner&) = delete;
  DryRunner& operator=(const DryRunner&) = delete;

  // The pod's last attempt ("namespace/name"); for a pod still pending, with the changes that
  // would make it fit, each checked by a dry run on the current snapshot. Nullopt when no attempt
  // of the pod is recorded.
  std::optional<explain::Explanation> Explain(const std::string& pod_key);
  // A dry run of `pod` on the current snapshot under its profile (spec.schedulerName): PreFilter,
  // Filter over every node, PreScore and Score, nothing assumed, reserved or bound, and the
  // changes that would make it fit. Throws std::invalid_argument when it names no profile.
  explain::Explanation Simulate(const api::Pod& pod);
  // The records of pending pods, newest first, leaving out (and forgetting) those whose pod the
  // informer no longer has unbound.
  std::vector<explain::AttemptPtr> PendingAttempts();

 private:
  struct DryRun;
  // A pod a dry run counts as placed on `node`, as if assumed there.
  struct DryPlacement {
    api::PodPtr pod;
    std::string node;
  };
  struct DryRunBudget;
  struct GroupPods;
  struct GroupRun;

  framework::runtime::Framework* FrameworkFor(const std::string& scheduler_name) const;
  // What a change writes into a check's cycle state (framework::PodChange::prepare).
  using Prepare = std::function<void(framework::CycleState&)>;
  // PreFilter and Filter (and with `score`, PreScore and Score) of `pod` over every node of a
  // fresh snapshot, with `ignored` plugins left out, the `placed` pods on their nodes and the
  // state `prepare`d first. Call holding a CycleGate::SideTurn.
  std::unique_ptr<DryRun> RunDry(framework::runtime::Framework& fwk, const api::Pod& pod,
                                 const framework::PluginSet& ignored, bool score,
                                 const std::vector<DryPlacement>& placed = {},
                                 const std::vector<Prepare>& prepare = {});
  // Dry runs of `pods` one after the other, each placed on the node a cycle would choose with
  // the ones before it placed, `ignored` plugins left out, until `enough` are placed, a pod fits
  // no node (without `suggest`; with it, a copy), or `budget` is spent; a turn at the gate each.
  // With `suggest`, also the changes the plugins propose for the first pod that fits no node.
  GroupRun PlaceGroup(framework::runtime::Framework& fwk, const GroupPods& pods,
                      const framework::PluginSet& ignored, int64_t enough, bool suggest,
                      DryRunBudget& budget);
  // Explains `pod` as one of `group` (held back by `plugin`): how many of the group's pods fit
  // together, and the changes that, made to each of them, fit enough of them. `own_pre_filter`
  // is the pod's own dry run's PreFilter verdict; `free_pod_slots`, how many more pods that dry
  // run's nodes admit. True when enough of the group's pods fit together now. In
  // dry_run_group.cc, as are PlaceGroup and ExplainGroupPreemption.
  bool ExplainGroup(framework::runtime::Framework& fwk, const api::Pod& pod,
                    const framework::PodGroupHint& group, const std::string& plugin,
                    const framework::Status& own_pre_filter, int64_t free_pod_slots,
                    DryRunBudget& budget, explain::Explanation* e);
  // For a group that does not fit: a note of what preempting for it would evict, or why that
  // cannot help, from the plan of the profile's PostFilter plugin that preempts for gangs
  // (framework::GroupPreemptionPreviewer), made on the current snapshot and never carried out.
  // Nothing when the pod may not preempt, the profile has no such plugin, or `budget` is spent.
  void ExplainGroupPreemption(framework::runtime::Framework& fwk, const api::Pod& pod,
                              const framework::PodGroupHint& group, const std::string& plugin,
                              DryRunBudget& budget, explain::Explanation* e);
  // Checks each of `changes` (proposed for `pod`, which fits no node) by a dry run of its own,
  // within `budget`, and adds those that open nodes to `e` as hints, best first.
  void ExplainChanges(framework::runtime::Framework& fwk, const api::Pod& pod,
                      std::vector<std::pair<std::string, framework::PodChange>> changes,
                      DryRunBudget& budget, explain::Explanation* e);
  // The attempt record of a dry run. Call holding the turn `run` was made in.
  std::shared_ptr<explain::Attempt> AttemptOf(const framework::runtime::Framework& fwk,
                                              const api::Pod& pod, const DryRun& run);
  // The changes the HintPlugins among the plugins that rejected nodes in `run` propose, with
  // the plugin of each, most rejecting plugin first. Call holding the turn `run` was made in.
  std::vector<std::pair<std::string, framework::PodChange>> SuggestChanges(
      framework::runtime::Framework& fwk, const api::Pod& pod, const DryRun& run);
  // A dry run of `pod`, then one per suggested change (each its own turn at the gate), those
  // after the first within budget_. Shows `recorded` as the attempt, or the dry run's own when
  // null.
  explain::Explanation ExplainPod(framework::runtime::Framework& fwk, const api::Pod& pod,
                                  explain::AttemptPtr recorded);

  DryRunnerDeps deps_;
  std::chrono::milliseconds budget_;
  std::shared_ptr<const util::Clock> clock_;  // Never null.
};

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_DRY_RUNNER_H_
