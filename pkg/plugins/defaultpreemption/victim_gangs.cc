#include "pkg/plugins/defaultpreemption/victim_gangs.h"

#include <algorithm>
#include <memory>

namespace berth::plugins::defaultpreemption {

std::vector<api::PodDisruptionBudgetPtr> Spend(const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                                               const std::vector<framework::PodInfoPtr>& victims) {
  std::vector<api::PodDisruptionBudgetPtr> left = pdbs;
  for (auto& pdb : left) {
    int32_t spent = 0;
    for (const auto& victim : victims) {
      const api::Pod& pod = *victim->pod;
      if (pod.meta.labels.empty() || pdb->meta.namespace_ != pod.meta.namespace_) continue;
      const auto& selector = pdb->spec.selector;
      if (!selector || selector->Empty() || !selector->Matches(pod.meta.labels)) continue;
      if (pdb->status.IsDisrupted(pod.meta.name)) continue;
      spent++;
    }
    if (spent == 0) continue;
    auto copy = std::make_shared<api::PodDisruptionBudget>(*pdb);
    copy->status.disruptions_allowed -= spent;
    pdb = std::move(copy);
  }
  return left;
}

const std::optional<framework::PodGroupHint>& VictimGangs::GroupOf(const api::Pod& pod) {
  auto it = groups_.find(pod.meta.uid);
  if (it != groups_.end()) return it->second;
  std::optional<framework::PodGroupHint> g = handle_.VictimGroupOf(pod);
  if (g) {
    for (const std::string& uid : g->placed_uids) groups_[uid] = g;
  }
  return groups_[pod.meta.uid] = std::move(g);
}

bool VictimGangs::Extend(Candidate& c, int32_t priority,
                         const std::unordered_set<std::string>& already_gone,
                         const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                         const FindPod& find) {
  std::unordered_set<std::string> gone = already_gone;
  for (const auto& v : c.victims) gone.insert(v->pod->meta.uid);
  std::vector<framework::PodInfoPtr> extra;
  // Grows as members are dragged: a dragged member's own gang is the same gang, already done.
  for (size_t k = 0; k < c.victims.size(); k++) {
    const std::optional<framework::PodGroupHint>& g = GroupOf(*c.victims[k]->pod);
    if (!g) continue;
    int32_t left = g->placed;
    for (const std::string& uid : g->placed_uids) left -= gone.contains(uid) ? 1 : 0;
    if (left >= g->min_member && !g->disrupted_whole) continue;
    for (const std::string& uid : g->placed_uids) {
      if (gone.contains(uid)) continue;
      framework::PodInfoPtr pod = find(uid).first;
      if (pod == nullptr) continue;
      if (pod->pod->spec.priority >= priority) return false;
      gone.insert(uid);
      extra.push_back(pod);
    }
  }
  if (extra.empty()) return true;
  c.num_pdb_violations +=
      static_cast<int64_t>(SplitByPdbViolation(extra, Spend(pdbs, c.victims)).violating.size());
  c.victims.insert(c.victims.end(), extra.begin(), extra.end());
  std::stable_sort(c.victims.begin(), c.victims.end(),
                   [](const framework::PodInfoPtr& a, const framework::PodInfoPtr& b) {
                     return MoreImportantPod(*a->pod, *b->pod);
                   });
  return true;
}

}  // namespace berth::plugins::defaultpreemption
