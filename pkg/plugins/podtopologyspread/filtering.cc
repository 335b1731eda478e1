// PreFilter, its AddPod/RemovePod extensions and Filter: the DoNotSchedule constraints.

#include <climits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/podtopologyspread/common.h"
#include "pkg/plugins/podtopologyspread/podtopologyspread.h"

namespace berth::plugins::podtopologyspread {
namespace {

const framework::StateKey& PreFilterKey() {
  static const framework::StateKey key(kPreFilterStateKey);
  return key;
}

const framework::FixedReasons& ConstraintsNotMatch() {
  static const framework::FixedReasons reasons(kErrReasonConstraintsNotMatch);
  return reasons;
}

const framework::FixedReasons& NodeLabelNotMatch() {
  static const framework::FixedReasons reasons(kErrReasonNodeLabelNotMatch);
  return reasons;
}

// The two domains with the fewest matching pods, as upstream keeps them: [0] always holds the
// minimum after a full build; AddPod/RemovePod update them incrementally, which is exact for
// what preemption does (pods removed from one node at a time on a fresh copy).
struct CriticalPaths {
  struct Path {
    int32_t domain = -1;  // -1: none yet.
    int64_t match_num = INT32_MAX;
  };
  Path paths[2];

  void Update(int32_t domain, int64_t num) {
    int i = -1;
    if (domain == paths[0].domain) {
      i = 0;
    } else if (domain == paths[1].domain) {
      i = 1;
    }
    if (i >= 0) {
      paths[i].match_num = num;
      if (paths[0].match_num > paths[1].match_num) std::swap(paths[0], paths[1]);
    } else if (num < paths[0].match_num) {
      paths[1] = paths[0];
      paths[0] = {domain, num};
    } else if (num < paths[1].match_num) {
      paths[1] = {domain, num};
    }
  }
};

// One DoNotSchedule constraint's counts. Domains are the key column's value ids, then (for
// values of nodes outside the indexed snapshot, which only AddPod/RemovePod can bring) ids past
// the column's size at PreFilter, named in `extra_values`.
struct ConstraintCounts {
  KeyColumnPtr key;
  std::vector<int64_t> match_num;
  // Whether the id is a domain: some counted node has the value.
  std::vector<char> is_domain;
  int64_t domains = 0;
  std::vector<std::string> extra_values;
  CriticalPaths paths;
  // Whether the pod being scheduled matches the selector (it would add itself to the domain).
  int64_t self_match = 0;

  // The domain of `value`, -1 when no node of the snapshot has it and AddPod never saw it.
  int32_t Find(std::string_view value) const {
    const int32_t id = key->Find(value);
    const auto base = static_cast<int32_t>(match_num.size() - extra_values.size());
    if (id >= 0 && id < base) return id;
    for (size_t j = 0; j < extra_values.size(); j++) {
      if (extra_values[j] == value) return base + static_cast<int32_t>(j);
    }
    return -1;
  }
  int32_t FindOrAdd(std::string_view value) {
    int32_t id = Find(value);
    if (id >= 0) return id;
    extra_values.emplace_back(value);
    match_num.push_back(0);
    is_domain.push_back(0);
    return static_cast<int32_t>(match_num.size() - 1);
  }
  // The global minimum the skew is measured against: 0 while fewer domains than minDomains.
  int64_t MinMatchNum(int32_t min_domains) const {
    return domains < min_domains ? 0 : paths.paths[0].match_num;
  }
};

// Written by PreFilter, read by Filter; AddPod/RemovePod change a clone's counts.
struct PreFilterState final : framework::StateData {
  std::shared_ptr<const std::vector<Constraint>> constraints;
  std::vector<ConstraintCounts> counts;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreFilterState>(*this);
  }
};

framework::Status MissingState() {
  return framework::Status::Error("reading \"" + PreFilterKey().str() +
                                  "\" from cycleState: not found");
}

framework::Status FilterNode(const PreFilterState& s, const framework::NodeInfo& info) {
  const api::Node* node = info.node();
  if (node == nullptr) return framework::Status::Error("node not found");
  const std::vector<Constraint>& constraints = *s.constraints;
  for (size_t c = 0; c < constraints.size(); c++) {
    const Constraint& constraint = constraints[c];
    const std::string* value = node->meta.labels.Find(constraint.topology_key);
    if (value == nullptr) return framework::Status::Unresolvable(NodeLabelNotMatch());
    const ConstraintCounts& counts = s.counts[c];
    const int32_t domain = counts.Find(*value);
    const int64_t match_num = domain >= 0 ? counts.match_num[static_cast<size_t>(domain)] : 0;
    const int64_t skew = match_num + counts.self_match - counts.MinMatchNum(constraint.min_domains);
    if (skew > constraint.max_skew) return framework::Status::Unschedulable(ConstraintsNotMatch());
  }
  return framework::Status::Success();
}

framework::Status UpdateWithPod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                                const api::Pod& changed, const framework::NodeInfo& info,
                                int64_t delta) {
  auto* s = state.Read<PreFilterState>(PreFilterKey());
  if (s == nullptr) return MissingState();
  const api::Node* node = info.node();
  if (changed.meta.namespace_ != pod_to_schedule.meta.namespace_ || node == nullptr) {
    return framework::Status::Success();
  }
  const std::vector<Constraint>& constraints = *s->constraints;
  if (!NodeHasAllKeys(node->meta.labels, constraints)) return framework::Status::Success();
  for (size_t c = 0; c < constraints.size(); c++) {
    const Constraint& constraint = constraints[c];
    if (!constraint.Matches(changed.meta.labels)) continue;
    if (!IncludesNode(constraint, pod_to_schedule, *node)) continue;
    ConstraintCounts& counts = s->counts[c];
    const int32_t domain = counts.FindOrAdd(*node->meta.labels.Find(constraint.topology_key));
    const auto d = static_cast<size_t>(domain);
    counts.match_num[d] += delta;
    // As upstream's map entry, the domain exists from now on, whatever the count.
    if (!counts.is_domain[d]) {
      counts.is_domain[d] = 1;
      counts.domains++;
    }
    counts.paths.Update(domain, counts.match_num[d]);
  }
  return framework::Status::Success();
}

}  // namespace

framework::Status PodTopologySpread::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                               const std::vector<framework::NodeInfoPtr>& nodes,
                                               framework::PreFilterResult*) {
  std::vector<Constraint> constraints = GetConstraints(pod, api::WhenUnsatisfiable::kDoNotSchedule);
  if (constraints.empty()) return framework::Status::Skip();
  auto s = std::make_shared<PreFilterState>();
  s->constraints = std::make_shared<const std::vector<Constraint>>(std::move(constraints));
  const std::vector<Constraint>& cs = *s->constraints;
  s->counts.resize(cs.size());
  {
    std::lock_guard lock(index_mu_);
    index_.Sync(nodes);
    std::vector<const std::vector<int32_t>*> pods(cs.size(), nullptr);
    for (size_t c = 0; c < cs.size(); c++) {
      ConstraintCounts& counts = s->counts[c];
      counts.key = index_.Key(cs[c].topology_key);
      counts.match_num.assign(counts.key->size(), 0);
      counts.is_domain.assign(counts.key->size(), 0);
      counts.self_match = cs[c].Matches(pod.meta.labels) ? 1 : 0;
      // A selector without requirements counts no pod (see CountMatchingPods).
      if (cs[c].selector && !cs[c].selector->Empty()) {
        pods[c] = &index_.Counts(pod.meta.namespace_, *cs[c].selector);
      }
    }
    const NodeInclusion inclusion(pod, cs, index_);
    for (size_t i = 0; i < index_.size(); i++) {
      bool has_all_keys = true;
      for (const ConstraintCounts& counts : s->counts) {
        if (counts.key->node_values[i] < 0) has_all_keys = false;
      }
      if (!has_all_keys) continue;
      for (size_t c = 0; c < cs.size(); c++) {
        if (!inclusion.Includes(cs[c], i)) continue;
        ConstraintCounts& counts = s->counts[c];
        const auto domain = static_cast<size_t>(counts.key->node_values[i]);
        if (pods[c] != nullptr) counts.match_num[domain] += (*pods[c])[i];
        if (!counts.is_domain[domain]) {
          counts.is_domain[domain] = 1;
          counts.domains++;
        }
      }
    }
  }
  for (ConstraintCounts& counts : s->counts) {
    for (size_t d = 0; d < counts.match_num.size(); d++) {
      if (counts.is_domain[d]) counts.paths.Update(static_cast<int32_t>(d), counts.match_num[d]);
    }
  }
  state.Write(PreFilterKey(), std::move(s));
  return framework::Status::Success();
}

framework::Status PodTopologySpread::AddPod(framework::CycleState& state,
                                            const api::Pod& pod_to_schedule,
                                            const framework::PodInfo& pod_to_add,
                                            const framework::NodeInfo& node) {
  return UpdateWithPod(state, pod_to_schedule, *pod_to_add.pod, node, 1);
}

framework::Status PodTopologySpread::RemovePod(framework::CycleState& state,
                                               const api::Pod& pod_to_schedule,
                                               const framework::PodInfo& pod_to_remove,
                                               const framework::NodeInfo& node) {
  return UpdateWithPod(state, pod_to_schedule, *pod_to_remove.pod, node, -1);
}

framework::Status PodTopologySpread::Filter(const framework::CycleState& state, const api::Pod&,
                                            const framework::NodeInfo& node) {
  const auto* s = state.Read<PreFilterState>(PreFilterKey());
  if (s == nullptr) return MissingState();
  return FilterNode(*s, node);
}

void PodTopologySpread::FilterNodes(const framework::CycleState& state, const api::Pod&,
                                    std::span<const framework::NodeInfo* const> nodes,
                                    std::span<framework::Status> statuses) {
  const auto* s = state.Read<PreFilterState>(PreFilterKey());
  for (size_t i = 0; i < nodes.size(); i++) {
    framework::Status status = s != nullptr ? FilterNode(*s, *nodes[i]) : MissingState();
    if (!status.IsSuccess()) statuses[i] = std::move(status);
  }
}

}  // namespace berth::plugins::podtopologyspread
