#include <string>
#include <vector>

#include "pkg/plugins/helper/describe.h"
#include "pkg/plugins/podtopologyspread/podtopologyspread.h"

// PodTopologySpread's hints (framework::HintPlugin), in a file of their own so that the Filter they
// explain compiles as it did without them.

namespace berth::plugins::podtopologyspread {

std::vector<framework::PodChange> PodTopologySpread::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected, std::span<const framework::Status* const>,
    const framework::Status*) const {
  constexpr size_t kDomains = 4;
  std::vector<framework::PodChange> out;
  const auto& constraints = pod.spec.topology_spread_constraints;
  for (size_t i = 0; i < constraints.size(); i++) {
    const api::TopologySpreadConstraint& c = constraints[i];
    if (c.when_unsatisfiable != api::WhenUnsatisfiable::kDoNotSchedule) continue;
    framework::PodChange change;
    change.description =
        "set whenUnsatisfiable: ScheduleAnyway on the topology spread constraint "
        "(topologyKey " +
        c.topology_key + ", maxSkew " + std::to_string(c.max_skew) +
        (c.label_selector ? ", " + helper::DescribeSelector(*c.label_selector) : "") + ")";
    change.apply = [i](api::Pod& p) {
      p.spec.topology_spread_constraints[i].when_unsatisfiable =
          api::WhenUnsatisfiable::kScheduleAnyway;
    };
    change.details = helper::Domains(rejected, c.topology_key, kDomains);
    out.push_back(std::move(change));
  }
  return out;
}

}  // namespace berth::plugins::podtopologyspread
