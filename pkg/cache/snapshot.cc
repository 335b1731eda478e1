#include "pkg/cache/snapshot.h"

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

void Snapshot::RebuildAffinityLists() {
  have_pods_with_affinity_.clear();
  have_pods_with_required_anti_affinity_.clear();
  for (const auto& info : node_info_list_) {
    if (!info->pods_with_affinity().empty()) {
      have_pods_with_affinity_.push_back(info);
    }
    if (!info->pods_with_required_anti_affinity().empty()) {
      have_pods_with_required_anti_affinity_.push_back(info);
    }
  }
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
    node_info_list_.push_back(it->second.info);
  }
  RebuildAffinityLists();
}

void Snapshot::Replace(Entry& entry, framework::NodeInfoPtr info) {
  if (entry.index != kNotListed) {
    node_info_list_[entry.index] = info;
  }
  entry.info = std::move(info);
}

}  // namespace berth::cache
