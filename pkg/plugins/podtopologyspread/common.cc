#include "pkg/plugins/podtopologyspread/common.h"

#include <algorithm>

#include "pkg/plugins/nodeaffinity/nodeaffinity.h"
#include "pkg/plugins/tainttoleration/tainttoleration.h"

namespace berth::plugins::podtopologyspread {

bool NodeHasAllKeys(const api::Labels& labels, const std::vector<Constraint>& constraints) {
  return std::all_of(constraints.begin(), constraints.end(),
                     [&](const Constraint& c) { return labels.Contains(c.topology_key); });
}

bool HasRequiredNodeAffinity(const api::Pod& pod) {
  if (!pod.spec.node_selector.empty()) return true;
  const auto& affinity = pod.spec.affinity;
  return affinity && affinity->node_affinity && affinity->node_affinity->required.has_value();
}

bool HasUntoleratedTaint(const api::Pod& pod, const api::Node& node) {
  return tainttoleration::FindUntoleratedTaint(node.spec.taints, pod.spec.tolerations).has_value();
}

bool IncludesNode(const Constraint& constraint, const api::Pod& pod, const api::Node& node) {
  if (constraint.node_affinity_policy == api::NodeInclusionPolicy::kHonor &&
      !nodeaffinity::RequiredNodeAffinityMatches(pod, node)) {
    return false;
  }
  return constraint.node_taints_policy != api::NodeInclusionPolicy::kHonor ||
         !HasUntoleratedTaint(pod, node);
}

NodeInclusion::NodeInclusion(const api::Pod& pod, const std::vector<Constraint>& constraints,
                             NodeIndex& index)
    : pod_(pod), index_(index) {
  const bool honoured = std::any_of(constraints.begin(), constraints.end(), [](const auto& c) {
    return c.node_affinity_policy == api::NodeInclusionPolicy::kHonor;
  });
  if (honoured && HasRequiredNodeAffinity(pod)) affinity_ = &index.RequiredAffinity(pod);
}

}  // namespace berth::plugins::podtopologyspread
