#include "pkg/cache/snapshot.h"

#include <algorithm>
#include <memory>
#include <unordered_set>
#include <utility>

namespace berth::cache {

std::unordered_map<std::string, framework::ImageStateSummary> Snapshot::ImageStatesOf(
    const api::Node& node, const ImageNodeCounts& counts) {
  std::unordered_map<std::string, framework::ImageStateSummary> states;
  for (const auto& image : node.status.images) {
    for (const auto& name : image.names) {
      auto count = counts.find(name);
      states.try_emplace(name, framework::ImageStateSummary{
                                   image.size_bytes, count == counts.end() ? 0 : count->second});
    }
  }
  return states;
}

Snapshot::Snapshot(const std::vector<api::PodPtr>& pods, const std::vector<api::NodePtr>& nodes) {
  ImageNodeCounts counts;
  for (const auto& node : nodes) {
    std::unordered_set<std::string> names;
    for (const auto& image : node->status.images) {
      names.insert(image.names.begin(), image.names.end());
    }
    for (const auto& name : names) {
      ++counts[name];
    }
  }
  std::vector<std::string> order;
  order.reserve(nodes.size());
  for (const auto& node : nodes) {
    auto info = std::make_shared<framework::NodeInfo>(node);
    info->SetImageStates(ImageStatesOf(*node, counts));
    if (node_info_map_.try_emplace(node->Name(), Entry{std::move(info)}).second) {
      order.push_back(node->Name());
    }
  }
  for (const auto& pod : pods) {
    auto it = node_info_map_.find(pod->spec.node_name);
    if (it == node_info_map_.end()) {
      continue;
    }
    it->second.info->AddPod(std::make_shared<framework::PodInfo>(pod));
  }
  RebuildLists(order);
}

framework::NodeInfoPtr Snapshot::Get(const std::string& node_name) const {
  auto it = node_info_map_.find(node_name);
  if (it == node_info_map_.end() || it->second.info->node() == nullptr) {
    return nullptr;
  }
  return it->second.info;
}

bool Snapshot::IsPVCUsedByPods(const std::string& key) const { return used_pvcs_.count(key) > 0; }

void Snapshot::CountClaims(const framework::NodeInfo& info, int sign) {
  for (const auto& [key, count] : info.pvc_ref_counts()) {
    auto [it, inserted] = used_pvcs_.try_emplace(key, 0);
    it->second += sign * count;
    if (it->second <= 0) used_pvcs_.erase(it);
  }
}

void Snapshot::RebuildAffinityLists() {
  have_pods_with_affinity_.clear();
  have_pods_with_required_anti_affinity_.clear();
  have_pods_with_affinity_index_.clear();
  have_pods_with_required_anti_affinity_index_.clear();
  for (size_t i = 0; i < node_info_list_.size(); i++) {
    const auto& info = node_info_list_[i];
    if (!info->pods_with_affinity().empty()) {
      have_pods_with_affinity_.push_back(info);
      have_pods_with_affinity_index_.push_back(i);
    }
    if (!info->pods_with_required_anti_affinity().empty()) {
      have_pods_with_required_anti_affinity_.push_back(info);
      have_pods_with_required_anti_affinity_index_.push_back(i);
    }
  }
}

namespace {

void Patch(std::vector<framework::NodeInfoPtr>& list, std::vector<size_t>& positions, size_t index,
           bool had, bool has, const framework::NodeInfoPtr& now) {
  if (!had && !has) return;
  auto it = std::lower_bound(positions.begin(), positions.end(), index);
  const auto at = it - positions.begin();
  const bool listed = it != positions.end() && *it == index;
  if (has && listed) {
    list[at] = now;
  } else if (has) {
    positions.insert(it, index);
    list.insert(list.begin() + at, now);
  } else if (listed) {
    positions.erase(it);
    list.erase(list.begin() + at);
  }
}

}  // namespace

void Snapshot::PatchAffinityLists(size_t index, const framework::NodeInfo& before,
                                  const framework::NodeInfoPtr& now) {
  Patch(have_pods_with_affinity_, have_pods_with_affinity_index_, index,
        !before.pods_with_affinity().empty(), !now->pods_with_affinity().empty(), now);
  Patch(have_pods_with_required_anti_affinity_, have_pods_with_required_anti_affinity_index_, index,
        !before.pods_with_required_anti_affinity().empty(),
        !now->pods_with_required_anti_affinity().empty(), now);
}

void Snapshot::RebuildLists(const std::vector<std::string>& order) {
  node_info_list_.clear();
  node_info_list_.reserve(order.size());
  for (auto& [name, entry] : node_info_map_) {
    entry.index = kNotListed;
  }
  for (const auto& name : order) {
    auto it = node_info_map_.find(name);
    if (it == node_info_map_.end()) {
      continue;
    }
    it->second.index = node_info_list_.size();
    it->second.info->set_list_index(static_cast<uint32_t>(node_info_list_.size()));
    node_info_list_.push_back(it->second.info);
  }
  RebuildAffinityLists();
  used_pvcs_.clear();
  for (const auto& info : node_info_list_) CountClaims(*info, 1);
}

void Snapshot::Replace(Entry& entry, framework::NodeInfoPtr info) {
  if (entry.index != kNotListed) {
    info->set_list_index(static_cast<uint32_t>(entry.index));
    node_info_list_[entry.index] = info;
    if (entry.info) {
      PatchAffinityLists(entry.index, *entry.info, info);
      CountClaims(*entry.info, -1);
    }
    CountClaims(*info, 1);
  }
  entry.info = std::move(info);
}

}  // namespace berth::cache
