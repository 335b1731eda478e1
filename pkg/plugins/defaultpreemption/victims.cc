#include "pkg/plugins/defaultpreemption/victims.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

namespace berth::plugins::defaultpreemption {
namespace {

// status.startTime is served as RFC 3339 in UTC with whole seconds, so the text orders as the
// time does. An empty one (not started) is "now", later than any start.
bool StartsBefore(const std::string& a, const std::string& b) {
  if (a.empty()) return false;
  return b.empty() || a < b;
}

// Ordered by time, "now" (not started) last.
std::pair<bool, std::string> StartKey(const std::string& start) { return {start.empty(), start}; }

const framework::FixedReasons& NoVictims() {
  static const framework::FixedReasons reasons(kNoVictimsReason);
  return reasons;
}

// Keeps, of the candidates in `left`, those with the highest key(i).
template <typename Key>
void KeepHighest(std::vector<size_t>& left, Key key) {
  auto best = key(left.front());
  std::vector<size_t> kept;
  for (size_t i : left) {
    auto k = key(i);
    if (k > best) {
      best = std::move(k);
      kept.clear();
      kept.push_back(i);
    } else if (k == best) {
      kept.push_back(i);
    }
  }
  left = std::move(kept);
}

}  // namespace

bool MoreImportantPod(const api::Pod& a, const api::Pod& b) {
  if (a.spec.priority != b.spec.priority) return a.spec.priority > b.spec.priority;
  return StartsBefore(a.status.start_time, b.status.start_time);
}

bool TerminatingByPreemption(const api::Pod& pod) {
  if (!pod.IsTerminating()) return false;
  for (const api::Condition& c : pod.status.conditions) {
    if (c.type == "DisruptionTarget") {
      return c.status == "True" && c.reason == "PreemptionByScheduler";
    }
  }
  return false;
}

PdbSplit SplitByPdbViolation(const std::vector<framework::PodInfoPtr>& pods,
                             const std::vector<api::PodDisruptionBudgetPtr>& pdbs) {
  std::vector<int64_t> allowed;
  allowed.reserve(pdbs.size());
  for (const auto& pdb : pdbs) allowed.push_back(pdb->status.disruptions_allowed);
  auto violates = [&](const api::Pod& pod) {
    if (pod.meta.labels.empty()) return false;
    for (size_t i = 0; i < pdbs.size(); i++) {
      const api::PodDisruptionBudget& pdb = *pdbs[i];
      if (pdb.meta.namespace_ != pod.meta.namespace_) continue;
      const auto& selector = pdb.spec.selector;
      if (!selector || selector->Empty() || !selector->Matches(pod.meta.labels)) continue;
      // An eviction the budget already counts is not charged again.
      if (pdb.status.IsDisrupted(pod.meta.name)) continue;
      if (--allowed[i] < 0) return true;
    }
    return false;
  };
  PdbSplit split;
  for (const auto& pod : pods) {
    (violates(*pod->pod) ? split.violating : split.non_violating).push_back(pod);
  }
  return split;
}

framework::Status SelectVictimsOnNode(framework::PluginsRunner& runner,
                                      framework::CycleState& state, const api::Pod& preemptor,
                                      framework::NodeInfo& node,
                                      const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                                      Candidate* out) {
  std::vector<framework::PodInfoPtr> potential;
  for (const auto& pod : node.pods()) {
    if (pod->pod->spec.priority < preemptor.spec.priority) potential.push_back(pod);
  }
  if (potential.empty()) return framework::Status::Unresolvable(NoVictims());

  auto remove = [&](const framework::PodInfoPtr& pod) {
    node.RemovePod(*pod->pod);
    return runner.RunPreFilterExtensionRemovePod(state, preemptor, *pod, node);
  };
  for (const auto& pod : potential) {
    if (framework::Status s = remove(pod); !s.IsSuccess()) return s;
  }
  // Not even an empty node of lower-priority pods would do (pod affinity to a victim is not
  // considered, as upstream does not).
  if (framework::Status s = runner.RunFilterPluginsWithNominatedPods(state, preemptor, node);
      !s.IsSuccess()) {
    return s;
  }

  // Stable: pods of equal importance keep the node's order, as upstream's do in practice.
  std::stable_sort(potential.begin(), potential.end(),
                   [](const framework::PodInfoPtr& a, const framework::PodInfoPtr& b) {
                     return MoreImportantPod(*a->pod, *b->pod);
                   });
  PdbSplit split = SplitByPdbViolation(potential, pdbs);
  Candidate candidate;
  candidate.node = node.name();
  // Gives `pod` back to the node; it stays a victim if the preemptor no longer fits.
  auto reprieve = [&](const framework::PodInfoPtr& pod, bool* evicted) {
    node.AddPod(pod);
    if (framework::Status s = runner.RunPreFilterExtensionAddPod(state, preemptor, *pod, node);
        !s.IsSuccess()) {
      return s;
    }
    *evicted = !runner.RunFilterPluginsWithNominatedPods(state, preemptor, node).IsSuccess();
    if (!*evicted) return framework::Status();
    candidate.victims.push_back(pod);
    return remove(pod);
  };
  for (const auto& pod : split.violating) {
    bool evicted = false;
    if (framework::Status s = reprieve(pod, &evicted); !s.IsSuccess()) return s;
    if (evicted) candidate.num_pdb_violations++;
  }
  for (const auto& pod : split.non_violating) {
    bool evicted = false;
    if (framework::Status s = reprieve(pod, &evicted); !s.IsSuccess()) return s;
  }
  if (!split.violating.empty() && !split.non_violating.empty()) {
    std::stable_sort(candidate.victims.begin(), candidate.victims.end(),
                     [](const framework::PodInfoPtr& a, const framework::PodInfoPtr& b) {
                       return MoreImportantPod(*a->pod, *b->pod);
                     });
  }
  *out = std::move(candidate);
  return framework::Status();
}

size_t PickOneNodeForPreemption(const std::vector<Candidate>& candidates) {
  std::vector<size_t> left(candidates.size());
  std::iota(left.begin(), left.end(), size_t{0});
  auto victims = [&](size_t i) -> const std::vector<framework::PodInfoPtr>& {
    return candidates[i].victims;
  };
  // Each criterion breaks the ties of the one before; a candidate always has a victim.
  const std::vector<std::function<void()>> criteria = {
      [&] { KeepHighest(left, [&](size_t i) { return -candidates[i].num_pdb_violations; }); },
      [&] {
        KeepHighest(left,
                    [&](size_t i) { return -int64_t{victims(i).front()->pod->spec.priority}; });
      },
      [&] {
        KeepHighest(left, [&](size_t i) {
          // Shifted to be positive, so that many victims of negative priority do not beat fewer
          // of the same priority.
          int64_t sum = 0;
          for (const auto& v : victims(i)) {
            sum +=
                int64_t{v->pod->spec.priority} + int64_t{std::numeric_limits<int32_t>::max()} + 1;
          }
          return -sum;
        });
      },
      [&] {
        KeepHighest(left, [&](size_t i) { return -static_cast<int64_t>(victims(i).size()); });
      },
      [&] {
        KeepHighest(left, [&](size_t i) {
          // The earliest start among the victims of the highest priority.
          const api::Pod* earliest = victims(i).front()->pod.get();
          for (const auto& v : victims(i)) {
            const api::Pod& pod = *v->pod;
            if (pod.spec.priority > earliest->spec.priority ||
                (pod.spec.priority == earliest->spec.priority &&
                 StartsBefore(pod.status.start_time, earliest->status.start_time))) {
              earliest = &pod;
            }
          }
          return StartKey(earliest->status.start_time);
        });
      },
  };
  for (const auto& criterion : criteria) {
    criterion();
    if (left.size() == 1) break;
  }
  return left.front();
}

}  // namespace berth::plugins::defaultpreemption
