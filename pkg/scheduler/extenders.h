#ifndef BERTH_PKG_SCHEDULER_EXTENDERS_H_
#define BERTH_PKG_SCHEDULER_EXTENDERS_H_

// Where scheduling cycles, dry runs (explain, simulate) and binding cycles ask kube-scheduler's
// extenders, as kube-scheduler v1.37 does: after the Filter plugins, beside the Score plugins,
// and before the Bind plugins.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::scheduler {

using Extenders = std::vector<std::shared_ptr<framework::Extender>>;

// Whether an interested extender filters the pod's nodes.
bool ExtendersFilter(const Extenders& extenders, const api::Pod& pod);

// Upstream's findNodesThatPassExtenders: each interested filtering extender in turn keeps a subset
// of *feasible. `rejected(node, status)` is called for each node one drops with a reason (its
// FailedAndUnresolvableNodes before its FailedNodes, the status naming the extender); a node
// dropped without one gets no status, as upstream. *rejected_some says whether any node was
// dropped. An error from an extender that is not ignorable is returned (an ignorable one's is
// logged and the extender skipped).
framework::Status RunExtenderFilters(
    const Extenders& extenders, const api::Pod& pod,
    std::vector<const framework::NodeInfo*>* feasible,
    const std::function<void(const framework::NodeInfo& node, framework::Status status)>& rejected,
    bool* rejected_some);

using PendingExtenderScores = std::vector<
    std::pair<const framework::Extender*, std::unique_ptr<framework::Extender::PendingScores>>>;
// The interested prioritizing extenders' calls, started at once so that they run while the Score
// plugins do.
PendingExtenderScores StartExtenderScores(const Extenders& extenders, const api::Pod& pod,
                                          const std::vector<const framework::NodeInfo*>& feasible);
// Waits for them and adds each answer to `scores` (score x weight x kMaxNodeScore/10, saturating,
// under the extender's name); a failed call adds nothing, as upstream.
void AddExtenderScores(const api::Pod& pod, PendingExtenderScores& pending,
                       std::vector<framework::NodePluginScores>* scores);

// Upstream's extendersBinding: the first interested binder binds the pod (an ignorable one that
// fails gives way to the next, then to the Bind plugins). Nullopt when none did.
std::optional<framework::Status> BindByExtender(const Extenders& extenders, const api::Pod& pod,
                                                const std::string& node);

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_EXTENDERS_H_
