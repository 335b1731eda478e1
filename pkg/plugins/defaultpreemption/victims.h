#ifndef BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_VICTIMS_H_
#define BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_VICTIMS_H_

// The decisions of preemption, as kube-scheduler's (pkg/scheduler/framework/preemption): the
// fewest victims that make room for the preemptor on one node, which of them a
// PodDisruptionBudget protects, and which candidate node to preempt on.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::plugins::defaultpreemption {

inline constexpr std::string_view kNoVictimsReason = "No preemption victims found for incoming pod";

// A node where evicting `victims` lets the preemptor fit.
struct Candidate {
  std::string node;
  // Most important first (MoreImportantPod), unless both PDB-violating and other victims are
  // present, when the violating ones come first.
  std::vector<framework::PodInfoPtr> victims;
  int64_t num_pdb_violations = 0;
};

// Whether `a` is kept rather than `b` when only one can be: the higher priority, then the pod that
// started earlier. A pod without status.startTime counts as starting now.
bool MoreImportantPod(const api::Pod& a, const api::Pod& b);

// Whether the pod is being deleted because a scheduler preempted it (its DisruptionTarget
// condition says so).
bool TerminatingByPreemption(const api::Pod& pod);

struct PdbSplit {
  std::vector<framework::PodInfoPtr> violating;
  std::vector<framework::PodInfoPtr> non_violating;
};

// Splits `pods`, in their order, into the pods whose eviction would take some budget below zero
// and the others. Evicting a pod spends one disruption of every budget in its namespace that
// selects it (a budget without selector, or with an empty one, selects nothing), unless the
// budget already counts the pod among its disrupted pods; a pod without labels matches none.
PdbSplit SplitByPdbViolation(const std::vector<framework::PodInfoPtr>& pods,
                             const std::vector<api::PodDisruptionBudgetPtr>& pdbs);

// The fewest pods of lower priority than `preemptor` whose eviction lets it pass the profile's
// Filter plugins on `node` (nominated pods honoured), found as upstream does: remove them all,
// then give them back one by one, PDB-violating ones first, each in order of importance, keeping
// every pod that still lets the preemptor fit. `node` and `state` are the caller's copies: both
// are changed (the victims stay removed). Success fills `out` (victims and PDB violations);
// otherwise the status says why the node cannot help: UnschedulableAndUnresolvable when it holds
// no pod of lower priority, or the Filter rejection left once they are all gone.
framework::Status SelectVictimsOnNode(framework::PluginsRunner& runner,
                                      framework::CycleState& state, const api::Pod& preemptor,
                                      framework::NodeInfo& node,
                                      const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                                      Candidate* out);

// The candidate to preempt on (an index into `candidates`, which must not be empty), by
// upstream's criteria, each breaking the ties of the one before: the fewest PDB violations, the
// lowest highest-priority victim, the lowest sum of victim priorities, the fewest victims, the
// latest earliest start among the highest-priority victims, then the first.
size_t PickOneNodeForPreemption(const std::vector<Candidate>& candidates);

}  // namespace berth::plugins::defaultpreemption

#endif  // BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_VICTIMS_H_
