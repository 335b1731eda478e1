#ifndef BERTH_PKG_QUEUE_EVENTS_H_
#define BERTH_PKG_QUEUE_EVENTS_H_

// Cluster events the queue itself raises, and the classification of a pod update into the
// UpdatePodXYZ actions that plugins register for (upstream framework/events.go).

#include <string>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::queue {

// Raised by the unschedulable-pool flush for pods that waited longer than
// QueueOptions::max_in_unschedulable. A wildcard: it moves every non-gated pod it is applied to.
inline const framework::ClusterEvent kEventUnschedulableTimeout{
    framework::EventResource::kWildcard, framework::kAll, "UnschedulableTimeout"};

// True for the wildcard event (any resource, every action): such an event moves pods whatever
// rejected them.
bool IsWildcardEvent(const framework::ClusterEvent& event);

// The label of an event for logs: its own label, or one built from resource and actions.
std::string EventLabel(const framework::ClusterEvent& event);

// The events an update of a pod stands for: one per UpdatePodXYZ action that applies (label,
// scale-down of requests, scheduling gates eliminated, tolerations), or a single generic kUpdate
// event when none does. The resource is kUnscheduledPod while new_pod has no node, kPod after.
std::vector<framework::ClusterEvent> PodSchedulingPropertiesChange(const api::Pod& new_pod,
                                                                   const api::Pod& old_pod);

// False when the two versions differ only in what cannot change a scheduling decision:
// resourceVersion, generation and status (upstream isPodUpdated).
bool IsPodUpdated(const api::Pod& old_pod, const api::Pod& new_pod);

}  // namespace berth::queue

#endif  // BERTH_PKG_QUEUE_EVENTS_H_
