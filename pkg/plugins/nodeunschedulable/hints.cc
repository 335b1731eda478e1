#include <string>
#include <vector>

#include "pkg/plugins/nodeunschedulable/nodeunschedulable.h"

// NodeUnschedulable's hints (framework::HintPlugin), in a file of their own so that the Filter they
// explain compiles as it did without them.

namespace berth::plugins::nodeunschedulable {

std::vector<framework::PodChange> NodeUnschedulable::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected, std::span<const framework::Status* const>,
    const framework::Status*) const {
  if (rejected.empty() || ToleratesUnschedulable(pod)) return {};
  framework::PodChange change;
  change.description = "add toleration " + std::string(kTaintNodeUnschedulable) + ":NoSchedule";
  change.apply = [](api::Pod& p) {
    api::Toleration t;
    t.key = std::string(kTaintNodeUnschedulable);
    t.op = api::TolerationOperator::kExists;
    t.effect = api::TaintEffect::kNoSchedule;
    p.spec.tolerations.push_back(std::move(t));
  };
  constexpr size_t kExamples = 3;
  for (size_t i = 0; i < rejected.size() && i < kExamples; i++) {
    change.details.emplace_back(rejected[i]->name(), "cordoned (spec.unschedulable)");
  }
  return {std::move(change)};
}

}  // namespace berth::plugins::nodeunschedulable
