#include <any>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pkg/api/podgroup.h"
#include "pkg/api/resources.h"
#include "pkg/api/workload_podgroup.h"
#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/queue/events.h"
#include "pkg/scheduler/cluster_events.h"
#include "pkg/scheduler/scheduler.h"

// The one place that turns informer events into the queue's cluster events and the cache's
// updates: pods that name one of our profiles and have no node go to the queue; nodes and
// assigned pods go to the cache; every other resource a plugin registered events for moves the
// pods that plugin rejected.

namespace berth::scheduler {
namespace {

using Clock = std::chrono::steady_clock;

// Which node properties changed, as upstream's nodeSchedulingPropertiesChange.
uint32_t NodeChangeActions(const api::Node& old_node, const api::Node& new_node) {
  uint32_t actions = 0;
  if (old_node.spec.unschedulable != new_node.spec.unschedulable) {
    actions |= framework::kUpdateNodeSpecUnschedulable;
  }
  if (!(old_node.status.allocatable == new_node.status.allocatable)) {
    actions |= framework::kUpdateNodeAllocatable;
  }
  if (!(old_node.meta.labels == new_node.meta.labels)) actions |= framework::kUpdateNodeLabel;
  auto same_taints = [](const std::vector<api::Taint>& a, const std::vector<api::Taint>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++) {
      if (a[i].key != b[i].key || a[i].value != b[i].value || a[i].effect != b[i].effect) {
        return false;
      }
    }
    return true;
  };
  if (!same_taints(old_node.spec.taints, new_node.spec.taints)) {
    actions |= framework::kUpdateNodeTaint;
  }
  auto conditions = [](const api::Node& n) {
    std::map<std::string, std::string> out;
    for (const auto& c : n.status.conditions) out[c.type] = c.status;
    return out;
  };
  if (conditions(old_node) != conditions(new_node)) actions |= framework::kUpdateNodeCondition;
  if (!(old_node.meta.annotations == new_node.meta.annotations)) {
    actions |= framework::kUpdateNodeAnnotation;
  }
  if (old_node.status.declared_features != new_node.status.declared_features) {
    actions |= framework::kUpdateNodeDeclaredFeature;
  }
  return actions;
}

}  // namespace

void Scheduler::AddAllEventHandlers() {
  auto& pods = informers_->Pods();
  informer::EventHandler<api::Pod> pod_handler;
  pod_handler.on_add = [this](const api::PodPtr& pod) { OnPodAdd(pod); };
  pod_handler.on_update = [this](const api::PodPtr& o, const api::PodPtr& n) { OnPodUpdate(o, n); };
  pod_handler.on_delete = [this](const api::PodPtr& pod) { OnPodDelete(pod); };
  pods.AddEventHandler(std::move(pod_handler));
  pods.SetDecodeErrorHandler([this](const nlohmann::json& object, const std::string& error) {
    OnMalformedPod(object, error);
  });

  auto& nodes = informers_->Nodes();
  informer::EventHandler<api::Node> node_handler;
  node_handler.on_add = [this](const api::NodePtr& node) { OnNodeAdd(node); };
  node_handler.on_update = [this](const api::NodePtr& o, const api::NodePtr& n) {
    OnNodeUpdate(o, n);
  };
  node_handler.on_delete = [this](const api::NodePtr& node) { OnNodeDelete(node); };
  nodes.AddEventHandler(std::move(node_handler));

  for (const auto& resource : RegisteredResources()) {
    if (!IsPodOrNode(resource)) Watch(resource);
  }
}

void Scheduler::OnPodAdd(const api::PodPtr& pod) {
  const auto start = Clock::now();
  if (Assigned(*pod)) {
    cache_.AddPod(pod);
    queue_->MoveAllToActiveOrBackoffQueue(kAssignedPodAdd, PodObjects(nullptr, pod));
    ObserveEvent(metrics::HandledEvent::kAssignedPodAdd, start);
    return;
  }
  if (Responsible(*pod) && !pod->IsTerminating()) {
    queue_->Add(pod);
    ObserveEvent(metrics::HandledEvent::kUnscheduledPodAdd, start);
  }
}

void Scheduler::OnPodUpdate(const api::PodPtr& old_pod, const api::PodPtr& new_pod) {
  const auto start = Clock::now();
  const bool was_assigned = Assigned(*old_pod);
  const bool is_assigned = Assigned(*new_pod);
  if (is_assigned) {
    if (!was_assigned) {
      // Bound (by us or anyone else): it leaves the queue and its resources count on the node.
      queue_->Delete(*old_pod);
      attempts_.Forget(old_pod->meta.uid);
      cache_.AddPod(new_pod);
      queue_->MoveAllToActiveOrBackoffQueue(kAssignedPodAdd, PodObjects(nullptr, new_pod));
      ObserveEvent(metrics::HandledEvent::kAssignedPodAdd, start);
      return;
    }
    cache_.UpdatePod(old_pod, new_pod);
    // As upstream: the same classification as for a pending pod's update, with the generic
    // Update when nothing specific changed (it reaches only plugins registered for it).
    for (const auto& event : queue::PodSchedulingPropertiesChange(*new_pod, *old_pod)) {
      queue_->MoveAllToActiveOrBackoffQueue(event, PodObjects(old_pod, new_pod));
    }
    ObserveEvent(metrics::HandledEvent::kAssignedPodUpdate, start);
    return;
  }
  if (!Responsible(*new_pod)) {
    if (Responsible(*old_pod)) queue_->Delete(*old_pod);
    attempts_.Forget(old_pod->meta.uid);
    return;
  }
  if (new_pod->IsTerminating()) {
    queue_->Delete(*new_pod);
    attempts_.Forget(new_pod->meta.uid);
    // As for a delete: a finalizer (a Job's, for one) makes a pod's deletion arrive first as this
    // update, and the apiserver refuses to bind a pod that is being deleted.
    if (auto waiting = waiting_pods_->Get(new_pod->meta.uid)) {
      waiting->Reject("", "pod is being deleted");
    }
    ObserveEvent(metrics::HandledEvent::kUnscheduledPodDelete, start);
    return;
  }
  queue_->Update(old_pod, new_pod);
  ObserveEvent(metrics::HandledEvent::kUnscheduledPodUpdate, start);
}

void Scheduler::OnPodDelete(const api::PodPtr& pod) {
  const auto start = Clock::now();
  if (Assigned(*pod)) {
    cache_.RemovePod(*pod);
    queue_->MoveAllToActiveOrBackoffQueue(kAssignedPodDelete, PodObjects(pod, nullptr));
    ObserveEvent(metrics::HandledEvent::kAssignedPodDelete, start);
    return;
  }
  if (!Responsible(*pod)) return;
  queue_->Delete(*pod);
  attempts_.Forget(pod->meta.uid);
  // A pod parked in Permit has been assumed; rejecting it makes its binding cycle undo that.
  if (auto waiting = waiting_pods_->Get(pod->meta.uid)) waiting->Reject("", "pod was deleted");
  ObserveEvent(metrics::HandledEvent::kUnscheduledPodDelete, start);
}

void Scheduler::OnNodeAdd(const api::NodePtr& node) {
  const auto start = Clock::now();
  cache_.AddNode(node);
  queue_->MoveAllToActiveOrBackoffQueue(
      {framework::EventResource::kNode, framework::kAdd, "NodeAdd"}, NodeObjects(nullptr, node));
  ObserveEvent(metrics::HandledEvent::kNodeAdd, start);
}

void Scheduler::OnNodeUpdate(const api::NodePtr& old_node, const api::NodePtr& new_node) {
  const auto start = Clock::now();
  cache_.UpdateNode(old_node, new_node);
  uint32_t actions = NodeChangeActions(*old_node, *new_node);
  if (actions) {
    queue_->MoveAllToActiveOrBackoffQueue({framework::EventResource::kNode, actions, "NodeUpdate"},
                                          NodeObjects(old_node, new_node));
  }
  ObserveEvent(metrics::HandledEvent::kNodeUpdate, start);
}

void Scheduler::OnNodeDelete(const api::NodePtr& node) {
  const auto start = Clock::now();
  cache_.RemoveNode(*node);
  ObserveEvent(metrics::HandledEvent::kNodeDelete, start);
}

void Scheduler::OnMalformedPod(const nlohmann::json& object, const std::string& error) {
  auto meta = object.find("metadata");
  auto spec = object.find("spec");
  if (meta == object.end() || !meta->is_object() || spec == object.end() || !spec->is_object()) {
    return;
  }
  auto scheduler_name = spec->find("schedulerName");
  auto node_name = spec->find("nodeName");
  if (scheduler_name == spec->end() || !scheduler_name->is_string() ||
      !profiles_.count(scheduler_name->get<std::string>())) {
    return;
  }
  if (node_name != spec->end() && node_name->is_string() &&
      !node_name->get<std::string>().empty()) {
    return;
  }
  auto pod = std::make_shared<api::Pod>();
  pod->meta.name = meta->value("name", "");
  pod->meta.namespace_ = meta->value("namespace", "");
  pod->meta.uid = meta->value("uid", "");
  pod->meta.resource_version = meta->value("resourceVersion", "");
  if (pod->meta.name.empty()) return;
  stats_.malformed_pods++;
  log::Error("pod cannot be scheduled: its object is malformed",
             {{"pod", pod->meta.namespace_ + "/" + pod->meta.name}, {"err", error}});
  ReportUnschedulable(pod, "SchedulerError", "pod object could not be decoded: " + error,
                      std::nullopt);
}

std::set<framework::EventResource> Scheduler::RegisteredResources() const {
  std::set<framework::EventResource> out;
  for (const auto& [name, fwk] : profiles_) {
    for (const auto& [plugin, registration] : fwk->EnqueueExtensionEvents()) {
      out.insert(registration.event.resource);
    }
  }
  return out;
}

template <typename T>
void Scheduler::AddResourceHandlers(framework::EventResource resource,
                                    informer::Informer<T>& from) {
  using Ptr = std::shared_ptr<const T>;
  auto move = [this, resource](uint32_t action, std::any old_object, std::any new_object) {
    framework::EventObjects objects;
    objects.old_object = std::move(old_object);
    objects.new_object = std::move(new_object);
    framework::ClusterEvent event{resource, action, ""};
    event.label = queue::EventLabel(event);
    queue_->MoveAllToActiveOrBackoffQueue(event, objects);
  };
  informer::EventHandler<T> handler;
  handler.on_add = [move](const Ptr& object) { move(framework::kAdd, {}, object); };
  // As upstream, updates of these resources are not narrowed further than Update.
  handler.on_update = [move](const Ptr& old_object, const Ptr& new_object) {
    move(framework::kUpdate, old_object, new_object);
  };
  handler.on_delete = [move](const Ptr& object) { move(framework::kDelete, object, {}); };
  from.AddEventHandler(std::move(handler));
}

namespace {

using framework::EventResource;

// Every typed resource a plugin may register events for, with the object its informer holds.
template <typename T>
struct Typed {
  using Type = T;
};
template <typename Fn>
bool ForTypedResource(EventResource resource, Fn&& fn) {
  if (resource == EventResource::kNamespace) return fn(Typed<api::Namespace>()), true;
  if (resource == EventResource::kPodDisruptionBudget) {
    return fn(Typed<api::PodDisruptionBudget>()), true;
  }
  if (resource == EventResource::kPersistentVolumeClaim) {
    return fn(Typed<api::PersistentVolumeClaim>()), true;
  }
  if (resource == EventResource::kPersistentVolume) return fn(Typed<api::PersistentVolume>()), true;
  if (resource == EventResource::kStorageClass) return fn(Typed<api::StorageClass>()), true;
  if (resource == EventResource::kCSINode) return fn(Typed<api::CSINode>()), true;
  if (resource == EventResource::kCSIDriver) return fn(Typed<api::CSIDriver>()), true;
  if (resource == EventResource::kCSIStorageCapacity) {
    return fn(Typed<api::CSIStorageCapacity>()), true;
  }
  if (resource == EventResource::kVolumeAttachment) return fn(Typed<api::VolumeAttachment>()), true;
  if (resource == EventResource::kService) return fn(Typed<api::Service>()), true;
  if (resource == EventResource::kReplicaSet) return fn(Typed<api::ReplicaSet>()), true;
  if (resource == EventResource::kStatefulSet) return fn(Typed<api::StatefulSet>()), true;
  if (resource == EventResource::kReplicationController) {
    return fn(Typed<api::ReplicationController>()), true;
  }
  if (resource == EventResource::kPodGroup) return fn(Typed<api::PodGroup>()), true;
  if (resource == EventResource::kWorkloadPodGroup) {
    return fn(Typed<api::WorkloadPodGroup>()), true;
  }
  if (resource == EventResource::kResourceClaim) return fn(Typed<api::ResourceClaim>()), true;
  if (resource == EventResource::kResourceSlice) return fn(Typed<api::ResourceSlice>()), true;
  if (resource == EventResource::kDeviceClass) return fn(Typed<api::DeviceClass>()), true;
  if (resource == EventResource::kDeviceTaintRule) return fn(Typed<api::DeviceTaintRule>()), true;
  return false;
}

// "podgroups.v1alpha1.scheduling.x-k8s.io": plural, version, group (upstream's naming of a
// custom resource in cluster events). Nullopt for any other form.
std::optional<client::Resource> CustomResourceOf(EventResource resource) {
  const std::string_view name = resource.name();
  const size_t first = name.find('.');
  if (first == std::string_view::npos || first == 0) return std::nullopt;
  const size_t second = name.find('.', first + 1);
  if (second == std::string_view::npos || second == first + 1 || second + 1 >= name.size()) {
    return std::nullopt;
  }
  client::Resource out;
  out.plural = std::string(name.substr(0, first));
  out.version = std::string(name.substr(first + 1, second - first - 1));
  out.group = std::string(name.substr(second + 1));
  return out;
}

}  // namespace

bool Scheduler::IsPodOrNode(framework::EventResource resource) {
  return resource.IsWildcard() || resource == EventResource::kPod ||
         resource == EventResource::kUnscheduledPod || resource == EventResource::kNode;
}

bool Scheduler::CanWatch(framework::EventResource resource) {
  return ForTypedResource(resource, [](auto) {}) || CustomResourceOf(resource).has_value();
}

void Scheduler::Watch(framework::EventResource resource) {
  const bool typed = ForTypedResource(resource, [&](auto typed) {
    using T = typename decltype(typed)::Type;
    AddResourceHandlers<T>(resource, informers_->For<T>());
  });
  if (typed) return;
  // The constructor refused any other resource.
  if (auto custom = CustomResourceOf(resource)) {
    AddResourceHandlers<api::Unstructured>(resource, informers_->ForCustom(*custom));
  }
}

}  // namespace berth::scheduler
