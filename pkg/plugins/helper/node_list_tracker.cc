#include "pkg/plugins/helper/node_list_tracker.h"

#include <algorithm>

namespace berth::plugins::helper {
namespace {

// Columns not asked for in this many epochs are dropped (a key no pod uses any more).
constexpr uint64_t kColumnIdleEpochs = 64;

}  // namespace

void NodeListTracker::Sync(const std::vector<framework::NodeInfoPtr>& nodes) {
  epoch_++;
  changed_now_.clear();
  seen_.resize(nodes.size());
  changed_at_.resize(nodes.size(), epoch_);
  for (size_t i = 0; i < nodes.size(); i++) {
    if (seen_[i] == nodes[i]) continue;
    seen_[i] = nodes[i];
    changed_at_[i] = epoch_;
    changed_now_.push_back(i);
  }
  std::erase_if(columns_, [&](const ColumnEntry& e) {
    return e.last_used + kColumnIdleEpochs < epoch_ || e.column->Stale();
  });
  for (ColumnEntry& entry : columns_) {
    KeyColumn& column = *entry.column;
    if (column.node_values.size() != seen_.size()) column.node_values.resize(seen_.size(), -1);
    for (size_t i : changed_now_) column.node_values[i] = column.InternNode(*seen_[i]);
  }
}

const std::shared_ptr<const KeyColumn>& NodeListTracker::Column(const std::string& key) {
  for (ColumnEntry& entry : columns_) {
    if (entry.column->key() != key) continue;
    entry.last_used = epoch_;
    return entry.view;
  }
  auto column = std::make_shared<KeyColumn>(key);
  column->Fill(seen_);
  columns_.push_back(ColumnEntry{column, column, epoch_});
  return columns_.back().view;
}

}  // namespace berth::plugins::helper
