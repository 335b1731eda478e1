#include "pkg/cache/cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace berth::cache {
namespace {

class SteadyClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
};

// "namespace/name (uid)" for log lines.
std::string Describe(const api::Pod& pod) { return pod.Key() + " (" + pod.meta.uid + ")"; }

// The distinct image names a node reports.
std::unordered_set<std::string> ImageNames(const api::Node* node) {
  std::unordered_set<std::string> names;
  if (node == nullptr) {
    return names;
  }
  for (const auto& image : node->status.images) {
    names.insert(image.names.begin(), image.names.end());
  }
  return names;
}

}  // namespace

std::shared_ptr<Clock> RealClock() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SteadyClock>();
  return clock;
}

Cache::Cache(std::chrono::milliseconds assumed_pod_ttl, std::shared_ptr<Clock> clock)
    : ttl_(assumed_pod_ttl), clock_(std::move(clock)) {}

Cache::~Cache() { Stop(); }

Cache::NodeList::iterator Cache::NodeItemFor(const std::string& name) {
  auto it = nodes_.find(name);
  if (it != nodes_.end()) {
    return it->second;
  }
  node_list_.push_front(NodeItem{name, framework::NodeInfo()});
  nodes_.emplace(name, node_list_.begin());
  return node_list_.begin();
}

void Cache::MoveToFront(NodeList::iterator item) {
  node_list_.splice(node_list_.begin(), node_list_, item);
}

void Cache::UpdateImageCounts(const api::Node* old_node, const api::Node* new_node) {
  // Most node updates are status heartbeats with the same image list.
  if (old_node != nullptr && new_node != nullptr &&
      std::equal(old_node->status.images.begin(), old_node->status.images.end(),
                 new_node->status.images.begin(), new_node->status.images.end(),
                 [](const api::ContainerImage& a, const api::ContainerImage& b) {
                   return a.names == b.names;
                 })) {
    return;
  }
  const auto old_names = ImageNames(old_node);
  const auto new_names = ImageNames(new_node);
  bool changed = false;
  for (const auto& name : old_names) {
    if (new_names.count(name)) {
      continue;
    }
    auto it = image_node_counts_.find(name);
    if (it == image_node_counts_.end()) {
      continue;
    }
    // Erased at zero so the map holds only images some node has.
    if (--it->second <= 0) {
      image_node_counts_.erase(it);
    }
    changed = true;
  }
  for (const auto& name : new_names) {
    if (old_names.count(name)) {
      continue;
    }
    ++image_node_counts_[name];
    changed = true;
  }
  if (changed) {
    ++image_epoch_;
  }
}

void Cache::SetNodeLocked(api::NodePtr node) {
  auto item = NodeItemFor(node->Name());
  framework::NodeInfo& info = item->info;
  // The stored node, not the informer's "old" one, is what the tree and image counts hold.
  node_tree_.UpdateNode(info.node(), *node);
  UpdateImageCounts(info.node(), node.get());
  info.SetNode(std::move(node));
  MoveToFront(item);
}

void Cache::AddNode(api::NodePtr node) {
  std::lock_guard lock(mu_);
  SetNodeLocked(std::move(node));
}

void Cache::UpdateNode(const api::NodePtr& /*old_node*/, api::NodePtr new_node) {
  std::lock_guard lock(mu_);
  SetNodeLocked(std::move(new_node));
}

void Cache::RemoveNode(const api::Node& node) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node.Name());
  if (it == nodes_.end() || it->second->info.node() == nullptr) {
    spdlog::error("cache: removing node {} that is not cached", node.Name());
    return;
  }
  auto item = it->second;
  framework::NodeInfo& info = item->info;
  node_tree_.RemoveNode(*info.node());
  UpdateImageCounts(info.node(), nullptr);
  if (info.pods().empty()) {
    node_list_.erase(item);
    nodes_.erase(it);
    return;
  }
  // The pods' deletions come on another watch and may still be on their way. NodeInfo::RemoveNode
  // leaves the generation alone, so the item stays where it is in the generation order; the
  // snapshot drops the node because the tree no longer has it.
  info.RemoveNode();
}

void Cache::AddPodLocked(framework::PodInfoPtr pod, bool assumed) {
  const std::string uid = pod->pod->meta.uid;
  auto item = NodeItemFor(pod->pod->spec.node_name);
  item->info.AddPod(pod);
  MoveToFront(item);
  pod_states_[uid] = PodState{std::move(pod), false, std::nullopt};
  if (assumed) {
    assumed_pods_.insert(uid);
  }
}

void Cache::RemovePodLocked(const std::string& uid) {
  auto state = pod_states_.find(uid);
  if (state == pod_states_.end()) {
    return;
  }
  const api::Pod& pod = *state->second.info->pod;
  auto it = nodes_.find(pod.spec.node_name);
  if (it == nodes_.end() || !it->second->info.RemovePod(pod)) {
    spdlog::error("cache: pod {} is not on its node {} in the cache", Describe(pod),
                  pod.spec.node_name);
  } else {
    auto item = it->second;
    if (item->info.pods().empty() && item->info.node() == nullptr) {
      node_list_.erase(item);
      nodes_.erase(it);
    } else {
      MoveToFront(item);
    }
  }
  assumed_pods_.erase(uid);
  pod_states_.erase(state);
}

void Cache::AddPod(api::PodPtr pod) {
  const std::string& uid = pod->meta.uid;
  if (uid.empty() || pod->spec.node_name.empty()) {
    spdlog::error("cache: ignoring pod {} without uid or node name", Describe(*pod));
    return;
  }
  std::lock_guard lock(mu_);
  auto state = pod_states_.find(uid);
  if (state != pod_states_.end()) {
    const std::string& cached_node = state->second.info->pod->spec.node_name;
    if (assumed_pods_.count(uid)) {
      if (cached_node != pod->spec.node_name) {
        spdlog::info("cache: pod {} was assumed on {} but added on {}", Describe(*pod), cached_node,
                     pod->spec.node_name);
      }
    } else {
      // Only a relist can repeat an add; the newer object is the better one to keep.
      spdlog::warn("cache: pod {} was already added; updating it", Describe(*pod));
    }
    RemovePodLocked(uid);
  }
  AddPodLocked(std::make_shared<framework::PodInfo>(std::move(pod)), /*assumed=*/false);
}

void Cache::UpdatePod(const api::PodPtr& old_pod, api::PodPtr new_pod) {
  const std::string& uid = old_pod->meta.uid;
  if (uid.empty() || uid != new_pod->meta.uid) {
    spdlog::error("cache: ignoring update of pod {} to {}: uids missing or different",
                  Describe(*old_pod), Describe(*new_pod));
    return;
  }
  std::lock_guard lock(mu_);
  auto state = pod_states_.find(uid);
  if (state == pod_states_.end()) {
    spdlog::error("cache: update of pod {} that is not cached; adding it", Describe(*new_pod));
  } else {
    if (assumed_pods_.count(uid)) {
      // The informer saw the binding as an update of the pending pod: that confirms it.
      spdlog::info("cache: update confirms assumed pod {}", Describe(*new_pod));
    }
    RemovePodLocked(uid);
  }
  if (new_pod->spec.node_name.empty()) {
    spdlog::error("cache: pod {} lost its node name; dropped from the cache", Describe(*new_pod));
    return;
  }
  AddPodLocked(std::make_shared<framework::PodInfo>(std::move(new_pod)), /*assumed=*/false);
}

void Cache::RemovePod(const api::Pod& pod) {
  std::lock_guard lock(mu_);
  auto state = pod_states_.find(pod.meta.uid);
  if (state == pod_states_.end()) {
    spdlog::error("cache: removing pod {} that is not cached", Describe(pod));
    return;
  }
  const std::string& cached_node = state->second.info->pod->spec.node_name;
  // An empty node name means the informer only had the pod's last pending state (a missed
  // delete); any other mismatch means the cache lost an update.
  if (cached_node != pod.spec.node_name && !pod.spec.node_name.empty()) {
    spdlog::error("cache: pod {} removed from {} but cached on {}", Describe(pod),
                  pod.spec.node_name, cached_node);
  }
  RemovePodLocked(pod.meta.uid);
}

framework::Status Cache::AssumePod(framework::PodInfoPtr pod) {
  const api::Pod& p = *pod->pod;
  if (p.meta.uid.empty()) {
    return framework::Status::Error("pod " + p.Key() + " has no uid");
  }
  if (p.spec.node_name.empty()) {
    return framework::Status::Error("pod " + Describe(p) + " is assumed without a node name");
  }
  std::lock_guard lock(mu_);
  if (pod_states_.count(p.meta.uid)) {
    return framework::Status::Error("pod " + Describe(p) + " is in the cache, so can't be assumed");
  }
  AddPodLocked(std::move(pod), /*assumed=*/true);
  return {};
}

void Cache::FinishBinding(const api::Pod& pod) {
  const auto now = clock_->Now();
  std::lock_guard lock(mu_);
  auto state = pod_states_.find(pod.meta.uid);
  if (state == pod_states_.end() || !assumed_pods_.count(pod.meta.uid)) {
    return;
  }
  state->second.binding_finished = true;
  if (ttl_.count() > 0) {
    state->second.deadline = now + ttl_;
  } else {
    state->second.deadline.reset();
  }
}

void Cache::ForgetPod(const api::Pod& pod) {
  std::lock_guard lock(mu_);
  auto state = pod_states_.find(pod.meta.uid);
  // Already gone: the informer removed it, or it expired.
  if (state == pod_states_.end()) {
    return;
  }
  const std::string& cached_node = state->second.info->pod->spec.node_name;
  if (cached_node != pod.spec.node_name) {
    spdlog::error("cache: cannot forget pod {}: it was assumed on {} but is cached on {}",
                  Describe(pod), pod.spec.node_name, cached_node);
    return;
  }
  if (!assumed_pods_.count(pod.meta.uid)) {
    spdlog::error("cache: cannot forget pod {}: it is not assumed", Describe(pod));
    return;
  }
  RemovePodLocked(pod.meta.uid);
}

bool Cache::IsAssumedPod(const api::Pod& pod) const {
  std::lock_guard lock(mu_);
  return assumed_pods_.count(pod.meta.uid) > 0;
}

void Cache::CleanupExpiredAssumedPods() {
  if (ttl_.count() <= 0) {
    return;
  }
  const auto now = clock_->Now();
  std::lock_guard lock(mu_);
  std::vector<std::string> expired;
  for (const auto& uid : assumed_pods_) {
    const PodState& state = pod_states_.at(uid);
    // A pod whose binding is still running must keep its resources: it may yet be bound.
    if (state.binding_finished && state.deadline && now > *state.deadline) {
      expired.push_back(uid);
    }
  }
  for (const auto& uid : expired) {
    spdlog::warn("cache: assumed pod {} expired without being confirmed",
                 Describe(*pod_states_.at(uid).info->pod));
    RemovePodLocked(uid);
  }
}

void Cache::Run(std::chrono::milliseconds period) {
  if (loop_.joinable()) {
    return;
  }
  loop_ = std::jthread([this, period](const std::stop_token& stop) {
    std::unique_lock lock(loop_mu_);
    while (!loop_cv_.wait_for(lock, stop, period, [] { return false; }) && !stop.stop_requested()) {
      lock.unlock();
      CleanupExpiredAssumedPods();
      lock.lock();
    }
  });
}

void Cache::Stop() {
  if (!loop_.joinable()) {
    return;
  }
  loop_.request_stop();
  loop_.join();
}

void Cache::RefreshImageStates(Snapshot& snapshot) {
  for (auto& [name, entry] : snapshot.node_info_map_) {
    const framework::NodeInfo& current = *entry.info;
    bool stale = false;
    for (const auto& [image, summary] : current.image_states()) {
      auto count = image_node_counts_.find(image);
      if (summary.num_nodes != (count == image_node_counts_.end() ? 0 : count->second)) {
        stale = true;
        break;
      }
    }
    if (!stale) {
      continue;
    }
    auto copy = current.Clone();
    copy->SetImageStates(Snapshot::ImageStatesOf(*copy->node(), image_node_counts_));
    snapshot.Replace(entry, std::move(copy));
  }
}

framework::Status Cache::UpdateSnapshot(Snapshot& snapshot) {
  std::lock_guard lock(mu_);
  const int64_t snapshot_generation = snapshot.generation_;
  // The node list must be rebuilt when nodes came or went. (Replacing a listed NodeInfo keeps
  // the affinity lists up to date itself.)
  bool update_all_lists = false;

  for (const NodeItem& item : node_list_) {
    if (item.info.generation() <= snapshot_generation) {
      break;
    }
    if (item.info.node() == nullptr) {
      continue;
    }
    auto clone = item.info.Clone();
    clone->SetImageStates(Snapshot::ImageStatesOf(*clone->node(), image_node_counts_));
    auto [it, inserted] = snapshot.node_info_map_.try_emplace(item.name);
    if (inserted) update_all_lists = true;
    snapshot.Replace(it->second, std::move(clone));
  }
  if (!node_list_.empty()) {
    snapshot.generation_ = std::max(snapshot.generation_, node_list_.front().info.generation());
  }

  // Deleted nodes are gone from the tree; their NodeInfos may linger in the cache with pods.
  if (snapshot.node_info_map_.size() > node_tree_.NumNodes()) {
    for (auto it = snapshot.node_info_map_.begin(); it != snapshot.node_info_map_.end();) {
      auto cached = nodes_.find(it->first);
      if (cached == nodes_.end() || cached->second->info.node() == nullptr) {
        it = snapshot.node_info_map_.erase(it);
      } else {
        ++it;
      }
    }
    update_all_lists = true;
  }

  if (snapshot.image_epoch_ != image_epoch_) {
    RefreshImageStates(snapshot);
    snapshot.image_epoch_ = image_epoch_;
  }

  if (update_all_lists) {
    snapshot.RebuildLists(node_tree_.List());
  }

  if (snapshot.node_info_list_.size() != node_tree_.NumNodes() ||
      snapshot.node_info_map_.size() != node_tree_.NumNodes()) {
    const std::string message =
        "snapshot is inconsistent: " + std::to_string(snapshot.node_info_list_.size()) +
        " listed and " + std::to_string(snapshot.node_info_map_.size()) +
        " mapped NodeInfos, but " + std::to_string(node_tree_.NumNodes()) +
        " nodes in the tree and " + std::to_string(nodes_.size()) +
        " NodeInfos in the cache; rebuilding it";
    spdlog::error("cache: {}", message);
    // Recopy everything so the next cycle works on a sound snapshot.
    snapshot.node_info_map_.clear();
    for (const NodeItem& item : node_list_) {
      if (item.info.node() == nullptr) {
        continue;
      }
      auto clone = item.info.Clone();
      clone->SetImageStates(Snapshot::ImageStatesOf(*clone->node(), image_node_counts_));
      snapshot.node_info_map_.emplace(item.name, Snapshot::Entry{std::move(clone)});
    }
    snapshot.RebuildLists(node_tree_.List());
    return framework::Status::Error(message);
  }
  return {};
}

Cache::Sizes Cache::Size() const {
  std::lock_guard lock(mu_);
  return Sizes{nodes_.size(), pod_states_.size(), assumed_pods_.size()};
}

api::PodPtr Cache::GetPod(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto state = pod_states_.find(uid);
  return state == pod_states_.end() ? nullptr : state->second.info->pod;
}

std::vector<std::string> Cache::NodeNames() const {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    names.reserve(nodes_.size());
    for (const auto& [name, item] : nodes_) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

framework::NodeInfoPtr Cache::GetNodeInfo(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second->info.Clone();
}

}  // namespace berth::cache
