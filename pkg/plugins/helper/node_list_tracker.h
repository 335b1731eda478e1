#ifndef BERTH_PKG_PLUGINS_HELPER_NODE_LIST_TRACKER_H_
#define BERTH_PKG_PLUGINS_HELPER_NODE_LIST_TRACKER_H_

// Follows the snapshot's node list from cycle to cycle, so that a plugin that keeps data per node
// across cycles recomputes it only for the nodes that changed, and reads it in Filter or Score by
// a node's list position.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pkg/framework/types.h"
#include "pkg/plugins/helper/key_column.h"

namespace berth::plugins::helper {

// Which positions of the snapshot's node list changed, epoch by epoch, so that every structure
// brought up to date in a cycle does not compare the whole list again. The snapshot replaces a
// NodeInfo on every change and never modifies one it handed out, and the tracker keeps the
// NodeInfos it last saw alive (no address is reused while kept), so the same pointer means the
// same content. Not thread-safe: the scheduling thread's.
class NodeListTracker {
 public:
  // Compares `nodes` with the list seen last and starts a new epoch, bringing the columns up to
  // date.
  void Sync(const std::vector<framework::NodeInfoPtr>& nodes);
  // The column of the label `key` over the list, made when new; columns not asked for in the
  // last few epochs are dropped, and the column of a key is replaced when its dictionary grew
  // stale, so callers compare the pointer they hold with this one.
  const std::shared_ptr<const KeyColumn>& Column(const std::string& key);
  // Whether `info` is the NodeInfo at its list_index() in the list synced last.
  bool Listed(const framework::NodeInfo& info) const {
    const uint32_t i = info.list_index();
    return i < seen_.size() && seen_[i].get() == &info;
  }
  uint64_t epoch() const { return epoch_; }
  // The list synced last.
  const std::vector<framework::NodeInfoPtr>& nodes() const { return seen_; }
  // Per position: the epoch it last changed in.
  const std::vector<uint64_t>& changed_at() const { return changed_at_; }
  // The positions that changed in the current epoch.
  const std::vector<size_t>& changed_now() const { return changed_now_; }

 private:
  uint64_t epoch_ = 0;
  std::vector<framework::NodeInfoPtr> seen_;
  std::vector<uint64_t> changed_at_;
  std::vector<size_t> changed_now_;
  struct ColumnEntry {
    std::shared_ptr<KeyColumn> column;
    // As the const view Column() hands out.
    std::shared_ptr<const KeyColumn> view;
    uint64_t last_used = 0;
  };
  std::vector<ColumnEntry> columns_;
};

}  // namespace berth::plugins::helper

#endif  // BERTH_PKG_PLUGINS_HELPER_NODE_LIST_TRACKER_H_
