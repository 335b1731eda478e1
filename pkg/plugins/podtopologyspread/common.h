#ifndef BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_COMMON_H_
#define BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_COMMON_H_

// What filtering and scoring share: which nodes a constraint counts.

#include <cstddef>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/podtopologyspread/node_index.h"
#include "pkg/plugins/podtopologyspread/podtopologyspread.h"

namespace berth::plugins::podtopologyspread {

// Whether the node has a label for every constraint's topology key.
bool NodeHasAllKeys(const api::Labels& labels, const std::vector<Constraint>& constraints);

// Whether the pod has a nodeSelector or required node affinity (otherwise every node satisfies
// it, and nodeAffinityPolicy: Honor excludes none).
bool HasRequiredNodeAffinity(const api::Pod& pod);

// Whether a NoSchedule or NoExecute taint of the node is not tolerated by the pod.
bool HasUntoleratedTaint(const api::Pod& pod, const api::Node& node);

// Whether the constraint's node inclusion policies count `node` for `pod`.
bool IncludesNode(const Constraint& constraint, const api::Pod& pod, const api::Node& node);

// Which indexed nodes each constraint counts. The pod's required node affinity is read from the
// index's column for it, evaluated again only for nodes that changed, and only when some
// constraint honours it. Valid until the index's next Sync.
class NodeInclusion {
 public:
  NodeInclusion(const api::Pod& pod, const std::vector<Constraint>& constraints, NodeIndex& index);

  bool Includes(const Constraint& constraint, size_t node) const {
    if (constraint.node_affinity_policy == api::NodeInclusionPolicy::kHonor &&
        affinity_ != nullptr && (*affinity_)[node] == 0) {
      return false;
    }
    if (constraint.node_taints_policy == api::NodeInclusionPolicy::kHonor && index_.tainted(node) &&
        HasUntoleratedTaint(pod_, *index_.info(node).node())) {
      return false;
    }
    return true;
  }

 private:
  const api::Pod& pod_;
  const NodeIndex& index_;
  // Per indexed node whether the required node affinity matches; null: every node does.
  const std::vector<char>* affinity_ = nullptr;
};

}  // namespace berth::plugins::podtopologyspread

#endif  // BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_COMMON_H_
