#ifndef BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_NODE_INDEX_H_
#define BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_NODE_INDEX_H_

// What spreading reads of every node in every cycle, kept from one cycle to the next: each node's
// value of the topology keys pods spread over, and how many of its pods a (namespace, selector)
// pair matches. Upstream walks every pod of every node per cycle; here only the nodes whose
// NodeInfo the snapshot replaced since the previous cycle are read again.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/plugins/helper/key_column.h"

namespace berth::plugins::podtopologyspread {

// The pods of `pods` in `namespace_`, not terminating, whose labels `selector` matches; 0 for an
// empty selector (upstream counts nothing with one, though it matches every pod).
int32_t CountMatchingPods(const std::vector<framework::PodInfoPtr>& pods,
                          const std::string& namespace_, const api::LabelSelector& selector);

using helper::KeyColumn;
using helper::KeyColumnPtr;

// The snapshot's nodes in list order with, per node, whether it has taints and the columns asked
// for so far: topology values, matching-pod counts and required node affinity matches. Columns not
// used for a while are dropped, so the index holds only what recent pods spread by.
//
// Not thread-safe: the plugin uses it from PreFilter and PreScore under its own lock. A column
// handed out stays valid until the next Sync (columns are dropped only there, and only those not
// used since the Sync before).
class NodeIndex {
 public:
  // Brings every column up to date with `nodes` (the snapshot's list): a node whose NodeInfo
  // pointer is the one seen last time is unchanged, since the snapshot replaces the NodeInfo of a
  // node that changed, and the index holds the old one so its address is never reused.
  void Sync(const std::vector<framework::NodeInfoPtr>& nodes);

  size_t size() const { return infos_.size(); }
  const framework::NodeInfo& info(size_t i) const { return *infos_[i]; }
  bool tainted(size_t i) const { return tainted_[i] != 0; }

  // The column of `key`, built over the indexed nodes when new.
  KeyColumnPtr Key(const std::string& key);
  // Per indexed node, the count of CountMatchingPods(pods, namespace_, selector); built when new.
  const std::vector<int32_t>& Counts(const std::string& namespace_,
                                     const api::LabelSelector& selector);
  // Per indexed node, whether the pod's nodeSelector and required node affinity match it; shared
  // by every pod that requires the same (the replicas of one workload), built when new.
  const std::vector<char>& RequiredAffinity(const api::Pod& pod);

 private:
  // At most this many columns of each kind are kept across a Sync.
  static constexpr size_t kMaxColumns = 16;

  struct CountColumn {
    std::string namespace_;
    api::LabelSelector selector;
    std::vector<int32_t> counts;
    uint64_t last_used = 0;
  };
  struct KeyEntry {
    KeyColumnPtr column;
    uint64_t last_used = 0;
  };
  struct AffinityColumn {
    // A pod with only the node selection the column evaluates: its nodeSelector and required
    // node affinity.
    api::Pod selection;
    std::vector<char> matches;
    uint64_t last_used = 0;
  };

  void Refresh(size_t i);
  static char Matches(const api::Pod& selection, const api::Node* node);
  // Drops the columns of each kind beyond kMaxColumns not used since the previous Sync.
  void Evict();
  // A column whose dictionary holds many values no node has any more (nodes come and go) is
  // rebuilt, so that the dictionary stays about the size of the cluster.
  void CompactKeys();

  std::vector<framework::NodeInfoPtr> infos_;
  std::vector<char> tainted_;
  std::vector<KeyEntry> keys_;
  // Pointers, so that dropping one column leaves the others where they are.
  std::vector<std::unique_ptr<CountColumn>> counts_;
  std::vector<std::unique_ptr<AffinityColumn>> affinities_;
  uint64_t clock_ = 0;
};

}  // namespace berth::plugins::podtopologyspread

#endif  // BERTH_PKG_PLUGINS_PODTOPOLOGYSPREAD_NODE_INDEX_H_
