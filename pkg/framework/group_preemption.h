#ifndef BERTH_PKG_FRAMEWORK_GROUP_PREEMPTION_H_
#define BERTH_PKG_FRAMEWORK_GROUP_PREEMPTION_H_

// What preempting for a gang would take, asked of a PostFilter plugin without acting on it: for
// explain, which says what would let a gang that does not fit in. Kept out of interface.h, which
// every plugin includes, since only the preemption plugin and the dry runner need it.

#include <cstdint>
#include <string>

#include "pkg/framework/interface.h"

namespace berth::framework {

// A gang's preemption as a cycle's PostFilter would plan it.
struct GroupPreemptionPreview {
  // Success: the gang would fit once `victims` pods on `nodes` nodes are evicted. Otherwise why
  // preemption cannot help (Unschedulable) or why it could not be planned (Error), in the words a
  // cycle's PostFilter would use, without its "preemption: " prefix.
  Status status;
  int64_t victims = 0;
  int64_t nodes = 0;
  // The topology domain the gang would go to, "key=value"; empty when it is not confined to one.
  std::string domain;
};

// Implemented by a PostFilter plugin that preempts for gangs; the dry runner finds it among the
// profile's PostFilter plugins.
class GroupPreemptionPreviewer {
 public:
  virtual ~GroupPreemptionPreviewer() = default;
  // Plans the preemption a PostFilter call would make for `pod`, a pending member of `group`
  // (`state` and `filtered`: the pod's dry run's cycle state and Filter verdicts), and asks the
  // extenders what that call would ask them. Changes nothing: no pod is evicted or nominated, no
  // metric is counted. Call between scheduling cycles, on the snapshot a cycle would use.
  virtual GroupPreemptionPreview PreviewGroupPreemption(const CycleState& state,
                                                        const api::Pod& pod,
                                                        const PodGroupHint& group,
                                                        const NodeToStatus& filtered) = 0;
};

}  // namespace berth::framework

#endif  // BERTH_PKG_FRAMEWORK_GROUP_PREEMPTION_H_
