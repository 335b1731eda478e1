#include "pkg/cache/node_tree.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>

namespace berth::cache {
namespace {

constexpr std::string_view kLabelTopologyZone = "topology.kubernetes.io/zone";
constexpr std::string_view kLabelTopologyRegion = "topology.kubernetes.io/region";
constexpr std::string_view kLabelFailureDomainBetaZone = "failure-domain.beta.kubernetes.io/zone";
constexpr std::string_view kLabelFailureDomainBetaRegion =
    "failure-domain.beta.kubernetes.io/region";

// The value of the first of the two labels present, "" when neither is.
std::string FirstLabel(const api::Labels& labels, std::string_view preferred,
                       std::string_view fallback) {
  if (const std::string* v = labels.Find(preferred)) {
    return *v;
  }
  if (const std::string* v = labels.Find(fallback)) {
    return *v;
  }
  return {};
}

}  // namespace

std::string GetZoneKey(const api::Node& node) {
  const std::string zone =
      FirstLabel(node.meta.labels, kLabelFailureDomainBetaZone, kLabelTopologyZone);
  const std::string region =
      FirstLabel(node.meta.labels, kLabelFailureDomainBetaRegion, kLabelTopologyRegion);
  if (region.empty() && zone.empty()) {
    return {};
  }
  // The NUL keeps "a:b" + "c" and "a" + "b:c" apart; names never contain one.
  std::string key = region;
  key.append(":\0:", 3);
  key += zone;
  return key;
}

void NodeTree::AddNode(const api::Node& node) {
  std::string zone = GetZoneKey(node);
  auto [where, added] = zone_of_.try_emplace(node.Name(), zone);
  if (!added) {
    if (where->second == zone) {
      spdlog::debug("node tree: node {} already present", node.Name());
      return;
    }
    // Each name is in the tree once: a node re-added under another zone moves there.
    RemoveFromZone(where->second, node.Name());
    where->second = zone;
  }
  auto [it, new_zone] = tree_.try_emplace(zone);
  if (new_zone) {
    zones_.push_back(std::move(zone));
  }
  it->second.push_back(node.Name());
  ++num_nodes_;
}

bool NodeTree::RemoveNode(const api::Node& node) {
  const std::string zone = GetZoneKey(node);
  auto where = zone_of_.find(node.Name());
  if (where == zone_of_.end() || where->second != zone) {
    spdlog::error("node tree: node {} not found in its zone {:?}", node.Name(), zone);
    return false;
  }
  zone_of_.erase(where);
  RemoveFromZone(zone, node.Name());
  return true;
}

void NodeTree::RemoveFromZone(const std::string& zone, const std::string& name) {
  auto it = tree_.find(zone);
  std::vector<std::string>& names = it->second;
  // erase, not swap-remove: the order within a zone is the order of the snapshot list.
  names.erase(std::find(names.begin(), names.end(), name));
  if (names.empty()) {
    tree_.erase(it);
    zones_.erase(std::find(zones_.begin(), zones_.end(), zone));
  }
  --num_nodes_;
}

void NodeTree::UpdateNode(const api::Node* old_node, const api::Node& new_node) {
  if (old_node == nullptr) {
    AddNode(new_node);
    return;
  }
  if (GetZoneKey(*old_node) == GetZoneKey(new_node)) {
    return;
  }
  RemoveNode(*old_node);
  AddNode(new_node);
}

std::vector<std::string> NodeTree::List() const {
  std::vector<std::string> list;
  list.reserve(num_nodes_);
  std::vector<const std::vector<std::string>*> zones;
  zones.reserve(zones_.size());
  for (const auto& zone : zones_) {
    zones.push_back(&tree_.at(zone));
  }
  for (size_t index = 0; list.size() < num_nodes_; ++index) {
    bool any = false;
    for (const auto* names : zones) {
      if (index < names->size()) {
        list.push_back((*names)[index]);
        any = true;
      }
    }
    // Unreachable while num_nodes_ matches the tree; guards against looping forever if not.
    if (!any) {
      break;
    }
  }
  return list;
}

}  // namespace berth::cache
