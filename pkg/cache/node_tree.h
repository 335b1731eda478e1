#ifndef BERTH_PKG_CACHE_NODE_TREE_H_
#define BERTH_PKG_CACHE_NODE_TREE_H_

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/api/types.h"

namespace berth::cache {

// The zone a node belongs to, as upstream utilnode.GetZoneKey computes it: region + ":\0:" +
// zone from the topology labels (the deprecated failure-domain.beta labels win when present);
// "" when the node has neither a region nor a zone.
std::string GetZoneKey(const api::Node& node);

// Node names grouped by zone, so that the scheduler's node list spreads consecutive nodes across
// zones (a cycle that stops after finding enough feasible nodes then still sees every zone).
//
// Invariants: every name appears at most once in the whole tree; a zone is present only while it
// has nodes; zones keep the order in which they were first seen and nodes keep their insertion
// order within a zone; NumNodes() equals the total number of names.
//
// Not thread-safe: the Cache owns it and calls it under its lock.
class NodeTree {
 public:
  // Adding a node that is already in its zone is a no-op.
  void AddNode(const api::Node& node);
  // False when the node was not in the zone its labels name.
  bool RemoveNode(const api::Node& node);
  // Moves the node when its zone changed; `old_node` null means the node was not in the tree.
  void UpdateNode(const api::Node* old_node, const api::Node& new_node);

  // All names, zones interleaved round-robin: the first node of each zone, then the second of
  // each zone, and so on; exhausted zones are skipped.
  std::vector<std::string> List() const;
  size_t NumNodes() const { return num_nodes_; }
  size_t NumZones() const { return zones_.size(); }

 private:
  // `name` must be in `zone`; drops the zone when it empties.
  void RemoveFromZone(const std::string& zone, const std::string& name);

  std::unordered_map<std::string, std::vector<std::string>> tree_;  // zone -> node names
  // node name -> its zone: finding whether a node is present by scanning its zone made loading a
  // zoneless 5,000-node cluster quadratic.
  std::unordered_map<std::string, std::string> zone_of_;
  std::vector<std::string> zones_;
  size_t num_nodes_ = 0;
};

}  // namespace berth::cache

#endif  // BERTH_PKG_CACHE_NODE_TREE_H_
