#include "pkg/queue/nominator.h"

#include <algorithm>
#include <utility>

namespace berth::queue {

void Nominator::SetPodLookup(PodLookupFn lookup) {
  std::lock_guard lock(mu_);
  lookup_ = std::move(lookup);
}

void Nominator::AddNominatedPod(framework::PodInfoPtr pod_info, std::optional<std::string> node) {
  std::lock_guard lock(mu_);
  AddLocked(std::move(pod_info), std::move(node));
}

void Nominator::UpdateNominatedPod(const api::Pod& old_pod, framework::PodInfoPtr new_pod_info) {
  std::lock_guard lock(mu_);
  std::optional<std::string> node;
  // Only when neither version names a node is the in-memory nomination the better answer:
  // when one does, the object reflects a nomination being added, changed or removed.
  if (old_pod.status.nominated_node_name.empty() &&
      new_pod_info->pod->status.nominated_node_name.empty()) {
    auto it = node_of_.find(old_pod.meta.uid);
    if (it != node_of_.end()) node = it->second;
  }
  DeleteLocked(old_pod.meta.uid);
  AddLocked(std::move(new_pod_info), std::move(node));
}

void Nominator::DeleteNominatedPodIfExists(const api::Pod& pod) {
  std::lock_guard lock(mu_);
  DeleteLocked(pod.meta.uid);
}

std::vector<framework::PodInfoPtr> Nominator::NominatedPodsForNode(const std::string& node) const {
  if (nominated_.load(std::memory_order_acquire) == 0) return {};
  std::lock_guard lock(mu_);
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return {};
  return it->second;
}

std::string Nominator::NominatedNodeFor(const std::string& pod_uid) const {
  std::lock_guard lock(mu_);
  auto it = node_of_.find(pod_uid);
  return it == node_of_.end() ? std::string() : it->second;
}

void Nominator::AddLocked(framework::PodInfoPtr pod_info, std::optional<std::string> node) {
  const api::Pod& pod = *pod_info->pod;
  // Never keep two entries for one pod.
  DeleteLocked(pod.meta.uid);

  std::string node_name = node ? std::move(*node) : pod.status.nominated_node_name;
  if (node_name.empty()) return;
  // A bound pod occupies its node for real; nominating it would count it twice.
  if (!pod.spec.node_name.empty()) return;
  if (lookup_) {
    api::PodPtr current = lookup_(pod.meta.namespace_, pod.meta.name);
    if (!current || current->meta.uid != pod.meta.uid || !current->spec.node_name.empty()) return;
  }
  node_of_[pod.meta.uid] = node_name;
  by_node_[node_name].push_back(std::move(pod_info));
  nominated_.store(node_of_.size(), std::memory_order_release);
}

void Nominator::DeleteLocked(const std::string& uid) {
  auto it = node_of_.find(uid);
  if (it == node_of_.end()) return;
  auto list_it = by_node_.find(it->second);
  if (list_it != by_node_.end()) {
    auto& pods = list_it->second;
    pods.erase(
        std::remove_if(pods.begin(), pods.end(),
                       [&](const framework::PodInfoPtr& p) { return p->pod->meta.uid == uid; }),
        pods.end());
    if (pods.empty()) by_node_.erase(list_it);
  }
  node_of_.erase(it);
  nominated_.store(node_of_.size(), std::memory_order_release);
}

}  // namespace berth::queue
