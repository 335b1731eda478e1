#ifndef BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_DEFAULTPREEMPTION_H_
#define BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_DEFAULTPREEMPTION_H_

// DefaultPreemption (PostFilter): when a pod fits no node, evicts the fewest pods of lower
// priority on one node so that it fits there, and nominates the pod to that node, with
// kube-scheduler's semantics and messages (asynchronous preemption, its default).
//
// Args (DefaultPreemptionArgs):
//   minCandidateNodesPercentage: 10   # 0-100: share of the nodes to dry-run preemption on ...
//   minCandidateNodesAbsolute: 100    # ... but at least this many (not both 0)
//
// In one PostFilter call: a pod with preemptionPolicy Never, or whose nominated node still holds
// a lower-priority pod terminating by preemption, does not preempt. Otherwise only the nodes
// Filter rejected as Unschedulable (not UnschedulableAndUnresolvable) are tried, from a random
// one on, in parallel, each on copies of the node and of the cycle state (victims.h), until enough
// candidates were found; the best (victims.h) is preempted off the scheduling thread (executor.h)
// and the pod is nominated to it. PreEnqueue holds the pod back while its preemption runs.
//
// Gangs. A pod of a group that binds whole or not at all (Handle::GroupOf: Coscheduling's gangs
// of either PodGroup API) whose group has fewer than its minimum placed or bound is not preempted
// for alone: evictions that cannot complete the gang are pure damage. Instead one dry run over a
// working copy of the whole snapshot places, in turn, each pending member until the gang has its
// minimum: a member that fits somewhere without evicting anything takes the first such node;
// otherwise the dry run above runs for it (its cycle state is its own PreFilter with the gang's
// plugin left out, updated by the PreFilter extensions for every pod the dry run has removed and
// every member it has placed, so it sees the nodes as the members before it left them), the
// budgets already spent by earlier members' victims count, and the best candidate by
// PickOneNodeForPreemption is taken: its victims leave the copy and the member joins it. A victim
// that belongs to a gang takes that gang's other placed members along whenever the gang would
// otherwise be left below its minimum, and a victim of any group that may only be disrupted as a
// whole (Handle::VictimGroupOf, basic groups included) takes all of them (all of them go, or the
// candidate is dropped when one of them may not be preempted). Only when every needed member found
// a place are all the victims evicted (executor.h, PreemptGroup) and every placed member nominated
// (the pod by the result's node, the others by group_nominations, which the scheduler hands to its
// nominator so that lower-priority newcomers leave the room alone; the executor writes their
// nominatedNodeName); otherwise nothing is evicted and the pod is Unschedulable: "gang needs 5
// places, at most 4 can be freed".
//
// Why here and not in Coscheduling: the rules (priorities, budgets, victim choice, the executor,
// the profile's choice to preempt at all) are DefaultPreemption's, and a profile without
// DefaultPreemption must not preempt for gangs either; Coscheduling only says who belongs together,
// through the Handle, as it does for explain's gang dry run. Ordering: Coscheduling's PostFilter
// runs first in the default profile and gives back the room of the gang's pods waiting at Permit;
// the dry run therefore treats the gang's pending members that the cycle's snapshot still holds as
// placed as gone, and places them again (in a profile that orders DefaultPreemption first, those
// members are still placed, count towards the minimum and keep waiting). Kube-scheduler's
// PodGroupPostFilter instead runs its whole pod group scheduling algorithm once with every
// lower-priority pod removed and then reprieves victims group by group.
//
// Extenders and gangs. The gang's preemption is planned first without changing anything
// (PlanForGroup), then every extender that supports preemption and is interested in the pod is
// shown the plan's victims by node (every node the plan evicts from), and only then is anything
// evicted. Upstream v1.37 does not ask extenders for a pod group; here an extender's preempt verb
// is a veto the user configured, honoured conservatively: the gang's dry run placed every member
// with exactly these victims gone, so an answer that drops one of the nodes or names other victims
// on one (by uid) refuses the whole plan, and nothing is evicted. A failed call is skipped when the
// extender is ignorable, and is the result otherwise, as for a single pod.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/framework/group_preemption.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"
#include "pkg/plugins/defaultpreemption/executor.h"
#include "pkg/plugins/defaultpreemption/victims.h"

namespace berth::plugins::defaultpreemption {

inline constexpr std::string_view kName = "DefaultPreemption";
inline constexpr std::string_view kErrReasonNever = "not eligible due to preemptionPolicy=Never.";
inline constexpr std::string_view kErrReasonTerminating =
    "not eligible due to a terminating pod on the nominated node.";
inline constexpr std::string_view kErrReasonNotHelpful = "Preemption is not helpful for scheduling";
inline constexpr std::string_view kErrReasonWaiting =
    "waiting for the preemption for this pod to be finished";

struct Args {
  int32_t min_candidate_nodes_percentage = 10;
  int32_t min_candidate_nodes_absolute = 100;
};

// Parses DefaultPreemptionArgs (null or {} for the defaults). Throws std::invalid_argument naming
// the field, as "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]".
Args ParseArgs(const nlohmann::json& args);

// A gang's preemption as planned (PlanForGroup), before anything is evicted.
struct GroupPlan {
  // Success: the gang fits once `victims` are gone, its members on their `placed` nodes. Otherwise
  // why preemption cannot help (Unschedulable, with `clear_nomination` when it cannot help at all)
  // or why the plan could not be made (Error); without the "preemption: " prefix.
  framework::Status status;
  bool clear_nomination = false;
  std::vector<std::pair<api::PodPtr, std::string>> placed;
  // In eviction order; and the same pods by the node they are on, each node with the budgets its
  // candidate breaks, as extenders are shown them.
  std::vector<api::PodPtr> victims;
  std::map<std::string, framework::ExtenderVictims> victims_by_node;
  // The topology domain the gang goes to, "key=value"; empty when not confined to one.
  std::string domain;
};

// PostFilter runs on the scheduling thread, one call at a time; PreEnqueue may run on any thread.
// PreviewGroupPreemption runs between scheduling cycles (explain's turn at the cycle gate), never
// during one.
class DefaultPreemption final : public framework::PostFilterPlugin,
                                public framework::PreEnqueuePlugin,
                                public framework::EnqueueExtensions,
                                public framework::GroupPreemptionPreviewer {
 public:
  // Where among `n` candidate nodes the dry run starts, in [0, n).
  using OffsetFn = std::function<int32_t(int32_t n)>;

  // Null `offset`: a random one, as upstream.
  DefaultPreemption(Args args, framework::Handle& handle, informer::Lister<api::Pod> pods,
                    informer::Lister<api::PodDisruptionBudget> pdbs, OffsetFn offset = nullptr);

  std::string_view Name() const override { return kName; }
  const Args& args() const { return args_; }

  // Success with result->nominated_node_name when victims are being evicted for the pod;
  // Unschedulable with a "preemption: ..." message when preemption cannot help now (with
  // result->clear_nomination when it cannot help at all); Error on a failure.
  framework::Status PostFilter(framework::CycleState& state, const api::Pod& pod,
                               const framework::NodeToStatus& filtered,
                               framework::PostFilterResult* result) override;
  // Holds the pod back while its preemption runs.
  framework::Status PreEnqueue(const api::Pod& pod) override;
  // An assigned pod's deletion re-runs PreEnqueue for the pods it holds back; whether they are
  // retried is left to the plugins that rejected them.
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

  // The gang's plan and the extenders' verdict on it (group.cc), nothing evicted or nominated.
  framework::GroupPreemptionPreview PreviewGroupPreemption(
      const framework::CycleState& state, const api::Pod& pod, const framework::PodGroupHint& group,
      const framework::NodeToStatus& filtered) override;

  // How many candidate nodes the dry run looks for among `num_nodes`: the percentage of them, at
  // least the absolute number, at most all of them.
  int32_t NumCandidates(int32_t num_nodes) const;

  Executor& executor() { return executor_; }

 private:
  // Upstream's Evaluator.Preempt, without the "preemption: " prefix.
  framework::Status Preempt(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeToStatus& filtered,
                            framework::PostFilterResult* result);
  // A gang's preemption (group.cc), for a pod of `group` while the group lacks members: one dry
  // run that places every member it needs, as the header comment says.
  // A candidate's victims that belong to a gang take the rest of their gang's placed pods along
  // when the gang would be left below its minimum; a candidate whose victims' gangs hold a pod of
  // at least the preemptor's priority is dropped.
  void KeepVictimGangsWhole(const api::Pod& preemptor,
                            const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                            std::vector<Candidate>* candidates) const;
  // PlanForGroup, then CheckGroupPlan, then the evictions and nominations.
  framework::Status PreemptForGroup(const framework::CycleState& state,
                                    const api::PodPtr& preemptor,
                                    const framework::PodGroupHint& group,
                                    const framework::NodeToStatus& filtered,
                                    framework::PostFilterResult* result);
  // Where each member the gang needs goes and what is evicted for it; changes nothing outside
  // its own copies (the random start of each dry run aside).
  GroupPlan PlanForGroup(const framework::CycleState& state, const api::PodPtr& preemptor,
                         const framework::PodGroupHint& group,
                         const framework::NodeToStatus& filtered);
  // Each interested extender that supports preemption, shown `plan`'s victims by node: success
  // when every one returned each node with the same victims (or failed and is ignorable); else
  // Unschedulable naming the extender and the first node it did not accept, or the error of one
  // that is not ignorable.
  framework::Status CheckGroupPlan(const api::Pod& preemptor, const GroupPlan& plan) const;
  // Empty when the pod may preempt, else why not.
  std::string_view NotEligibleReason(const api::Pod& pod,
                                     const framework::NodeToStatus& filtered) const;
  // Upstream's callExtenders: each interested extender that supports preemption may drop
  // candidates or change their victims; an error from one that is not ignorable is the result.
  framework::Status CallExtenders(const api::Pod& pod, const framework::NodeInfoLister& lister,
                                  std::vector<Candidate>* candidates) const;
  // Upstream DryRunPreemption: candidates from `nodes`, tried from `offset` on (wrapping), the
  // ones without PDB violations first; the status of each node tried that cannot help goes to
  // `statuses`. An error status when a node's evaluation failed.
  framework::Status DryRun(const framework::CycleState& state, const api::Pod& pod,
                           const std::vector<const framework::NodeInfo*>& nodes,
                           const std::vector<api::PodDisruptionBudgetPtr>& pdbs, int32_t offset,
                           int32_t wanted, std::vector<Candidate>* candidates,
                           framework::NodeToStatus* statuses);

  const Args args_;
  framework::Handle& handle_;
  const informer::Lister<api::Pod> pods_;
  const informer::Lister<api::PodDisruptionBudget> pdbs_;
  OffsetFn offset_;
  std::mt19937_64 rng_{std::random_device{}()};  // Scheduling thread only.
  // Last: its tasks use the members above.
  Executor executor_;
};

// Builds the plugin from DefaultPreemptionArgs (see ParseArgs); starts the pod disruption budget
// informer.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::defaultpreemption

#endif  // BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_DEFAULTPREEMPTION_H_
