#ifndef BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_VICTIM_GANGS_H_
#define BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_VICTIM_GANGS_H_

// Victims that belong to a group (Handle::VictimGroupOf): evicting some of a gang's placed pods
// must not leave it below its minimum, nor break at all a group that may only be disrupted as a
// whole (a gang, or a basic group whose pods are otherwise placed one by one), so the rest of its
// placed pods go with them (on whatever nodes they are), or, when one of those may not be
// preempted, the candidate is not taken at all.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/defaultpreemption/victims.h"

namespace berth::plugins::defaultpreemption {

// The budgets left once `victims` are evicted: each one that selects a victim (as
// SplitByPdbViolation counts) has one disruption fewer per victim.
std::vector<api::PodDisruptionBudgetPtr> Spend(const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                                               const std::vector<framework::PodInfoPtr>& victims);

// Not thread-safe; one per preemption (it remembers the gangs it asked the handle about).
class VictimGangs {
 public:
  // A pod of the cluster by uid, and the index of its node (for the caller's books); null when
  // it is not there.
  using FindPod = std::function<std::pair<framework::PodInfoPtr, size_t>(const std::string& uid)>;

  explicit VictimGangs(const framework::Handle& handle) : handle_(handle) {}

  // Adds to `c`'s victims the placed members of their gangs that must go with them, given the
  // pods `gone` already (whose eviction is decided), counting the budgets they break against
  // `pdbs` and keeping the victims most important first. False when one of them has at least
  // `priority`: the candidate cannot be taken.
  bool Extend(Candidate& c, int32_t priority, const std::unordered_set<std::string>& gone,
              const std::vector<api::PodDisruptionBudgetPtr>& pdbs, const FindPod& find);

 private:
  const std::optional<framework::PodGroupHint>& GroupOf(const api::Pod& pod);

  const framework::Handle& handle_;
  std::unordered_map<std::string, std::optional<framework::PodGroupHint>> groups_;
};

}  // namespace berth::plugins::defaultpreemption

#endif  // BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_VICTIM_GANGS_H_
