#ifndef BERTH_PKG_SCHEDULER_CLUSTER_EVENTS_H_
#define BERTH_PKG_SCHEDULER_CLUSTER_EVENTS_H_

// Small helpers shared by the scheduler's event handlers, binding cycle and failure handling.

#include <string>
#include <utility>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::scheduler {

inline bool Assigned(const api::Pod& pod) { return !pod.spec.node_name.empty(); }

inline framework::EventObjects PodObjects(api::PodPtr old_pod, api::PodPtr new_pod) {
  framework::EventObjects objects;
  objects.old_pod = std::move(old_pod);
  objects.new_pod = std::move(new_pod);
  return objects;
}

inline framework::EventObjects NodeObjects(api::NodePtr old_node, api::NodePtr new_node) {
  framework::EventObjects objects;
  objects.old_node = std::move(old_node);
  objects.new_node = std::move(new_node);
  return objects;
}

// An assigned pod appeared (bound, by us or anyone) or went away (deleted, or an assumed pod
// forgotten): room on its node changed.
inline const framework::ClusterEvent kAssignedPodAdd{framework::EventResource::kPod,
                                                     framework::kAdd, "AssignedPodAdd"};
inline const framework::ClusterEvent kAssignedPodDelete{framework::EventResource::kPod,
                                                        framework::kDelete, "AssignedPodDelete"};

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_CLUSTER_EVENTS_H_
