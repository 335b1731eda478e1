#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/helper/describe.h"
#include "pkg/plugins/interpodaffinity/interpodaffinity.h"

// InterPodAffinity's hints (framework::HintPlugin), in a file of their own so that the Filter they
// explain compiles as it did without them.

namespace berth::plugins::interpodaffinity {
namespace {

constexpr size_t kDomains = 4;

// The label of `pod` whose removal makes `selector` stop matching it: a key the selector
// requires to be present (In, Exists). Null when every requirement the pod meets would still
// hold without any one label (NotIn, DoesNotExist, an empty selector).
const api::StringMap::Entry* LabelToRemove(const api::LabelSelector& selector,
                                           const api::Pod& pod) {
  for (const api::Requirement& r : selector.requirements) {
    if (r.op != api::SelectorOperator::kIn && r.op != api::SelectorOperator::kExists) continue;
    for (const auto& entry : pod.meta.labels) {
      if (entry.first == r.key) return &entry;
    }
  }
  return nullptr;
}

// "default/web-1", or "default/web-1 and 2 other pods".
std::string PodsText(const std::vector<std::string>& pods) {
  if (pods.empty()) return "";
  if (pods.size() == 1) return pods.front();
  const size_t others = pods.size() - 1;
  return pods.front() + " and " + std::to_string(others) +
         (others == 1 ? " other pod" : " other pods");
}

}  // namespace

std::vector<framework::PodChange> InterPodAffinity::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected,
    std::span<const framework::Status* const> statuses, const framework::Status*) const {
  // The nodes each kind of rule rejected; the reason says which.
  std::vector<const framework::NodeInfo*> by_affinity;
  std::vector<const framework::NodeInfo*> by_anti_affinity;
  std::vector<const framework::NodeInfo*> by_existing;
  for (size_t i = 0; i < rejected.size() && i < statuses.size(); i++) {
    for (const auto& reason : statuses[i]->reasons()) {
      if (reason == kErrReasonAffinityRulesNotMatch) by_affinity.push_back(rejected[i]);
      if (reason == kErrReasonAntiAffinityRulesNotMatch) by_anti_affinity.push_back(rejected[i]);
      if (reason == kErrReasonExistingAntiAffinityRulesNotMatch) by_existing.push_back(rejected[i]);
    }
  }
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
  if (pod.spec.affinity) {
    suggest(pod.spec.affinity->pod_anti_affinity, true, by_anti_affinity);
    suggest(pod.spec.affinity->pod_affinity, false, by_affinity);
  }
  if (by_existing.empty()) return out;

  // Assigned pods whose required anti-affinity selects this pod, by the term (its selector and
  // topology key) and the domains where they keep it out. Only domains of rejected nodes count.
  std::set<std::pair<std::string, std::string>> rejected_domains;
  struct Blocking {
    const api::PodAffinityTerm* term = nullptr;
    std::vector<std::string> pods;
    std::vector<std::pair<std::string, std::string>> details;
  };
  std::map<std::string, Blocking> blocking;  // By selector and topology key.
  const auto pod_namespace = namespaces_.Get(pod.meta.namespace_);
  const api::Labels* namespace_labels = pod_namespace ? &pod_namespace->meta.labels : nullptr;
  for (const framework::NodeInfoPtr& node_info : lister_.HavePodsWithRequiredAntiAffinityList()) {
    const api::Node* node = node_info->node();
    if (node == nullptr) continue;
    for (const framework::PodInfoPtr& existing : node_info->pods_with_required_anti_affinity()) {
      for (const api::PodAffinityTerm& term : RequiredAntiAffinity(*existing->pod)) {
        const std::string* value = node->meta.labels.Find(term.topology_key);
        if (value == nullptr ||
            !TermMatches(term, existing->pod->meta.namespace_, pod, namespace_labels)) {
          continue;
        }
        if (rejected_domains.empty()) {
          for (const framework::NodeInfo* n : by_existing) {
            if (n->node() == nullptr) continue;
            for (const auto& [key, label] : n->node()->meta.labels) {
              rejected_domains.emplace(key, label);
            }
          }
        }
        if (!rejected_domains.contains({term.topology_key, *value})) continue;
        const std::string selector =
            term.label_selector ? helper::DescribeSelector(*term.label_selector) : "nothing";
        Blocking& b = blocking[selector + "\n" + term.topology_key];
        b.term = &term;
        b.pods.push_back(existing->pod->Key());
        if (b.details.size() < kDomains) {
          b.details.emplace_back(term.topology_key + "=" + *value, "pod " + existing->pod->Key());
        }
      }
    }
  }
  for (auto& [key, b] : blocking) {
    const std::string whose =
        "the required pod anti-affinity of " + PodsText(b.pods) + " (topologyKey " +
        b.term->topology_key + ", pods matching " +
        (b.term->label_selector ? helper::DescribeSelector(*b.term->label_selector)
                                : std::string("nothing")) +
        ")";
    framework::PodChange change;
    change.details = std::move(b.details);
    const api::StringMap::Entry* label =
        b.term->label_selector ? LabelToRemove(*b.term->label_selector, pod) : nullptr;
    if (label == nullptr) {
      change.description = whose +
                           " selects this pod whatever its labels: no change to the pod gets "
                           "past it; those pods would have to move or drop the term";
      change.note_only = true;
    } else {
      change.description =
          "remove label " + label->first + "=" + label->second + ", which " + whose + " selects";
      change.apply = [key = label->first](api::Pod& p) {
        std::vector<api::StringMap::Entry> kept;
        for (const auto& entry : p.meta.labels) {
          if (entry.first != key) kept.push_back(entry);
        }
        p.meta.labels = api::Labels(std::move(kept));
      };
    }
    out.push_back(std::move(change));
  }
  return out;
}

}  // namespace berth::plugins::interpodaffinity
