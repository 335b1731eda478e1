#include <string>
#include <vector>

#include "pkg/plugins/helper/describe.h"
#include "pkg/plugins/interpodaffinity/interpodaffinity.h"

// InterPodAffinity's hints (framework::HintPlugin), in a file of their own so that the Filter they
// explain compiles as it did without them.

namespace berth::plugins::interpodaffinity {

std::vector<framework::PodChange> InterPodAffinity::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected,
    std::span<const framework::Status* const> statuses, const framework::Status*) const {
  if (!pod.spec.affinity) return {};
  // The nodes each of the pod's own rules rejected; the reason says which kind.
  std::vector<const framework::NodeInfo*> by_affinity;
  std::vector<const framework::NodeInfo*> by_anti_affinity;
  for (size_t i = 0; i < rejected.size() && i < statuses.size(); i++) {
    for (const auto& reason : statuses[i]->reasons()) {
      if (reason == kErrReasonAffinityRulesNotMatch) by_affinity.push_back(rejected[i]);
      if (reason == kErrReasonAntiAffinityRulesNotMatch) by_anti_affinity.push_back(rejected[i]);
    }
  }
  constexpr size_t kDomains = 4;
  std::vector<framework::PodChange> out;
  auto suggest = [&](const std::optional<api::PodAffinity>& rules, bool anti,
                     const std::vector<const framework::NodeInfo*>& nodes) {
    if (!rules || nodes.empty()) return;
    for (size_t i = 0; i < rules->required.size(); i++) {
      const api::PodAffinityTerm& term = rules->required[i];
      framework::PodChange change;
      change.description = std::string("remove the required pod ") +
                           (anti ? "anti-affinity" : "affinity") + " term (topologyKey " +
                           term.topology_key + ", pods matching " +
                           (term.label_selector ? helper::DescribeSelector(*term.label_selector)
                                                : std::string("nothing")) +
                           ")";
      change.apply = [anti, i](api::Pod& p) {
        auto& required = anti ? p.spec.affinity->pod_anti_affinity->required
                              : p.spec.affinity->pod_affinity->required;
        required.erase(required.begin() + static_cast<std::ptrdiff_t>(i));
      };
      change.details = helper::Domains(nodes, term.topology_key, kDomains);
      out.push_back(std::move(change));
    }
  };
  suggest(pod.spec.affinity->pod_anti_affinity, true, by_anti_affinity);
  suggest(pod.spec.affinity->pod_affinity, false, by_affinity);
  return out;
}

}  // namespace berth::plugins::interpodaffinity
