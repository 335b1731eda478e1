#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_TOPOLOGY_PLACEMENT_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_TOPOLOGY_PLACEMENT_H_

// Topology-aware placement of a gang: all its pods in one domain (one value of a node-label key).
// Before the first pod of a gang's attempt is placed, every candidate domain is tried by placing
// the gang's pending pods there one after the other on a copy of its nodes, each where the
// profile's Filter and Score plugins would put it. Of the domains that take enough pods, the one
// that takes the most pods and then leaves its nodes fullest wins (upstream's PodGroupPodsCount
// and NodeResourcesFit's MostAllocated placement scores), and each pod of the attempt is then
// placed on the node planned for it. Domains too small for the gang by their free cpu, memory or
// pod slots are not simulated at all, a simulation stops as soon as too few pods can still fit,
// and the domains are tried tightest first until a share of them (percentageOfPlacementsToScore)
// proved feasible.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pkg/api/podgroup.h"
#include "pkg/framework/interface.h"

namespace berth::plugins::coscheduling {

// The domain chosen for a gang's attempt and the node planned for each of its pending pods.
struct TopologyPlan {
  // The label key and value of the domain; both empty for a preferred constraint that no domain
  // could satisfy (the gang then goes anywhere).
  std::string key;
  std::string domain;
  // The domain's nodes.
  std::unordered_set<std::string> nodes;
  // Pod uid to the node the simulation placed it on.
  std::unordered_map<std::string, std::string> node_of;
  // Whether each pod keeps to its planned node. Not when some of the gang's pods are nominated
  // (a gang preemption made room for them): each then tries its nominated node first and must
  // fit beside the others' nominations, as the preemption's dry run placed them, which the
  // simulation does not replay; they keep to the domain.
  bool pinned = true;
};

struct PlacementRequest {
  const api::PodGroupTopology* topology = nullptr;
  // The gang's pods to place, in the order they are tried.
  std::vector<api::PodPtr> pending;
  // How many of `pending` must fit for a domain to be feasible.
  int32_t needed = 1;
  // Members already placed or bound, and their nodes: the gang's domain must hold them.
  int32_t placed = 0;
  std::vector<std::string> placed_nodes;
  // The plugin left out of the pending pods' PreFilter (the gang's own: its attempt is what is
  // being planned).
  std::string ignored_plugin;
  // How messages name the gang: `pod group "ns/name"`.
  std::string gang_text;
};

struct PlacementWeights {
  int64_t pods_count = 1;
  int64_t resources = 1;
  // Of the candidate domains, the share (percent) that must prove feasible before the best of
  // them is taken; at least one.
  int32_t percentage_to_score = 10;
};

struct PlacementOutcome {
  // Set when a domain (or, for a preferred constraint, anywhere) can take the gang.
  std::optional<TopologyPlan> plan;
  // Otherwise why not, naming the closest domain of each key.
  std::string failure;
  // Domains simulated, and domains skipped for too little free room.
  int64_t simulated = 0;
  int64_t pruned = 0;
};

// Runs on the scheduling thread, on the cycle's snapshot; changes nothing but its own copies.
class TopologyPlacer {
 public:
  TopologyPlacer(framework::Handle& handle, PlacementWeights weights)
      : handle_(handle), weights_(weights) {}

  PlacementOutcome Place(const PlacementRequest& request,
                         const std::vector<framework::NodeInfoPtr>& nodes) const;

 private:
  // The nodes' domains of one label key, as of the node objects it was built from: value of each
  // domain, and for each node (in the snapshot's order) the index of its domain or -1. Rebuilt
  // only when a node object changed, so that gangs after the first do not look a label up on
  // every node of the cluster.
  struct DomainIndex {
    std::vector<api::NodePtr> nodes;
    std::vector<std::string> values;
    std::vector<int32_t> domain_of;
    // Per domain, its nodes' indexes.
    std::vector<std::vector<int32_t>> members;
  };
  const DomainIndex& IndexFor(const std::string& key,
                              const std::vector<framework::NodeInfoPtr>& nodes) const;

  framework::Handle& handle_;
  const PlacementWeights weights_;
  // Held through Place (guards `indexes_`, which Place reads throughout); Place is called from the
  // scheduling thread, and may be from a dry run.
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, DomainIndex> indexes_;
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_TOPOLOGY_PLACEMENT_H_
