#include <algorithm>
#include <string>
#include <vector>

#include "pkg/plugins/tainttoleration/tainttoleration.h"

// TaintToleration's hints (framework::HintPlugin), in a file of their own so that the Filter they
// explain compiles as it did without them.

namespace berth::plugins::tainttoleration {

api::Toleration TolerationFor(const api::Taint& taint) {
  api::Toleration t;
  t.key = taint.key;
  t.value = taint.value;
  t.op = taint.value.empty() ? api::TolerationOperator::kExists : api::TolerationOperator::kEqual;
  t.effect = taint.effect;
  return t;
}

std::string DescribeToleration(const api::Toleration& t) {
  std::string out = t.key;
  if (t.op == api::TolerationOperator::kEqual) out += "=" + t.value;
  if (t.effect != api::TaintEffect::kAll) out += ":" + std::string(api::TaintEffectName(t.effect));
  return out;
}

std::vector<framework::PodChange> TaintToleration::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected, std::span<const framework::Status* const>,
    const framework::Status*) const {
  // Each distinct set of untolerated taints, with the nodes that have exactly that set.
  struct Set {
    std::vector<api::Taint> taints;
    std::vector<std::string> nodes;
  };
  std::vector<Set> sets;
  for (const framework::NodeInfo* node : rejected) {
    if (node->node() == nullptr) continue;
    std::vector<api::Taint> untolerated;
    for (const api::Taint& taint : node->node()->spec.taints) {
      if ((taint.effect == api::TaintEffect::kNoSchedule ||
           taint.effect == api::TaintEffect::kNoExecute) &&
          !api::TolerationsTolerate(pod.spec.tolerations, taint)) {
        untolerated.push_back(taint);
      }
    }
    if (untolerated.empty()) continue;
    auto it = std::find_if(sets.begin(), sets.end(),
                           [&](const Set& set) { return set.taints == untolerated; });
    if (it == sets.end()) {
      sets.push_back({std::move(untolerated), {}});
      it = std::prev(sets.end());
    }
    it->nodes.push_back(node->name());
  }
  std::stable_sort(sets.begin(), sets.end(),
                   [](const Set& a, const Set& b) { return a.nodes.size() > b.nodes.size(); });
  constexpr size_t kSuggested = 3;
  constexpr size_t kExamples = 3;
  std::vector<framework::PodChange> out;
  for (size_t i = 0; i < sets.size() && i < kSuggested; i++) {
    framework::PodChange change;
    std::vector<api::Toleration> add;
    std::string taints;
    for (const api::Taint& taint : sets[i].taints) {
      add.push_back(TolerationFor(taint));
      if (!taints.empty()) taints += ", ";
      taints += taint.ToString();
      change.description += (change.description.empty() ? "add toleration " : " and ") +
                            DescribeToleration(add.back());
    }
    change.apply = [add](api::Pod& p) {
      p.spec.tolerations.insert(p.spec.tolerations.end(), add.begin(), add.end());
    };
    for (size_t n = 0; n < sets[i].nodes.size() && n < kExamples; n++) {
      change.details.emplace_back(sets[i].nodes[n], "taint " + taints);
    }
    out.push_back(std::move(change));
  }
  return out;
}

}  // namespace berth::plugins::tainttoleration
