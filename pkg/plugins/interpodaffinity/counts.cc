#include "pkg/plugins/interpodaffinity/counts.h"

#include <algorithm>
#include <utility>

namespace berth::plugins::interpodaffinity {
namespace {

constexpr size_t kSeenOnceCapacity = 16;
// An entry holds on to the NodeInfos it last saw, which the snapshot has long replaced when the
// entry goes unused; one not asked for in this many lookups is dropped.
constexpr uint64_t kIdleLookups = 1024;

}  // namespace

uint32_t TopologyCounts::KeyIndex(std::string_view key) {
  for (size_t i = 0; i < keys_.size(); i++) {
    if (keys_[i].key == key) return static_cast<uint32_t>(i);
  }
  keys_.emplace_back().key = key;
  return static_cast<uint32_t>(keys_.size() - 1);
}

int ValueTable::Add(std::string_view value, int64_t amount, int64_t contributions) {
  const uint64_t hash = Hash(value);
  if (size_ != 0) {
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used) break;
      if (slot.hash != hash || slot.value != value) continue;
      slot.cell.amount += amount;
      slot.cell.contributions += contributions;
      if (slot.cell.amount != 0 || slot.cell.contributions != 0) return 0;
      Erase(i);
      return -1;
    }
  }
  if (amount == 0 && contributions == 0) return 0;
  // At most half full, so that a miss ends within a slot or two.
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  size_t i = hash & mask_;
  while (slots_[i].used) i = (i + 1) & mask_;
  slots_[i] = Slot{hash, true, Cell{amount, contributions}, std::string(value)};
  size_++;
  return 1;
}

void ValueTable::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
  mask_ = slots_.size() - 1;
  for (Slot& slot : old) {
    if (!slot.used) continue;
    size_t i = slot.hash & mask_;
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = std::move(slot);
  }
}

// Linear probing without tombstones: the slots after the erased one that would no longer be
// reachable from their home slot move back into the gap.
void ValueTable::Erase(size_t index) {
  size_t gap = index;
  for (size_t j = (gap + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
    const size_t home = slots_[j].hash & mask_;
    // Whether `home` lies cyclically in (gap, j]: then the slot is still reachable.
    const bool reachable = gap <= j ? (gap < home && home <= j) : (gap < home || home <= j);
    if (reachable) continue;
    slots_[gap] = std::move(slots_[j]);
    gap = j;
  }
  slots_[gap] = Slot{};
  size_--;
}

void TopologyCounts::Add(uint32_t key_index, std::string_view value, int64_t amount,
                         int64_t contributions) {
  Key& key = keys_[key_index];
  const int change = key.values.Add(value, amount, contributions);
  if (change > 0) size_++;
  if (change < 0) size_--;
  if (key.column == nullptr || amount == 0) return;
  const int32_t id = key.column->Find(value);
  if (id < 0) {
    key.column.reset();
    key.amount_by_id.clear();
    return;
  }
  const auto i = static_cast<size_t>(id);
  if (i >= key.amount_by_id.size()) key.amount_by_id.resize(key.column->size(), 0);
  key.amount_by_id[i] += amount;
}

bool TopologyCounts::Bind(uint32_t key_index, std::shared_ptr<const helper::KeyColumn> column) {
  Key& key = keys_[key_index];
  key.column.reset();
  key.amount_by_id.assign(column->size(), 0);
  bool complete = true;
  key.values.ForEach([&](std::string_view value, const Cell& cell) {
    const int32_t id = column->Find(value);
    if (id < 0) {
      complete = false;
    } else {
      key.amount_by_id[static_cast<size_t>(id)] = cell.amount;
    }
  });
  if (!complete) {
    key.amount_by_id.clear();
    return false;
  }
  key.column = std::move(column);
  return true;
}

int64_t TopologyCounts::Amount(std::string_view key, std::string_view value) const {
  return AmountAt(FindKey(key), value, ValueTable::Hash(value));
}

int32_t TopologyCounts::FindKey(std::string_view key) const {
  for (size_t i = 0; i < keys_.size(); i++) {
    if (keys_[i].key == key) return static_cast<int32_t>(i);
  }
  return -1;
}

void CountsEntry::Refresh(NodeListTracker& tracker,
                          const std::vector<framework::NodeInfoPtr>& nodes, const Compute& compute,
                          bool bind_columns) {
  if (synced_epoch == tracker.epoch()) return;
  auto take_back = [&](size_t slot) {
    for (const Contribution& c : contributions[slot]) {
      maps[c.map].Add(c.key, c.value, -c.amount, -1);
    }
    contributions[slot].clear();
  };
  bool changed = false;
  for (size_t slot = nodes.size(); slot < seen.size(); slot++) {
    take_back(slot);
    changed = true;
  }
  seen.resize(nodes.size());
  contributions.resize(nodes.size());

  size_t slot = 0;
  const Emit emit = [&](uint32_t map, std::string_view key, std::string_view value,
                        int64_t amount) {
    const uint32_t key_index = maps[map].KeyIndex(key);
    contributions[slot].push_back(Contribution{map, key_index, value, amount});
    maps[map].Add(key_index, value, amount, 1);
  };
  auto update = [&](size_t at) {
    if (seen[at] == nodes[at]) return;
    slot = at;
    take_back(at);
    seen[at] = nodes[at];
    compute(*nodes[at], emit);
    changed = true;
  };
  if (synced_epoch != 0 && synced_epoch + 1 == tracker.epoch()) {
    // In step with the tracker: only what changed in its latest epoch.
    for (size_t at : tracker.changed_now()) update(at);
  } else {
    const std::vector<uint64_t>& changed_at = tracker.changed_at();
    for (size_t at = 0; at < nodes.size(); at++) {
      if (synced_epoch == 0 || changed_at[at] > synced_epoch) update(at);
    }
  }
  synced_epoch = tracker.epoch();
  if (bind_columns) {
    for (TopologyCounts& map : maps) {
      for (size_t k = 0; k < map.keys().size(); k++) {
        const auto& column = tracker.Column(map.keys()[k].key);
        if (map.keys()[k].column != column && map.Bind(static_cast<uint32_t>(k), column)) {
          changed = true;
        }
      }
    }
  }
  if (changed) version++;
}

void CountsEntry::CountOnce(const std::vector<framework::NodeInfoPtr>& nodes,
                            const Compute& compute) {
  const Emit emit = [&](uint32_t map, std::string_view key, std::string_view value,
                        int64_t amount) { maps[map].Add(key, value, amount, 1); };
  for (const auto& node : nodes) compute(*node, emit);
}

std::shared_ptr<const CountsEntry> CountsCache::Get(
    std::string signature, NodeListTracker& tracker,
    const std::vector<framework::NodeInfoPtr>& nodes,
    const std::vector<framework::NodeInfoPtr>& contributing, const CountsEntry::Compute& compute) {
  std::lock_guard lock(mu_);
  clock_++;
  std::erase_if(entries_, [&](const auto& e) { return clock_ - e->last_used > kIdleLookups; });
  for (const auto& entry : entries_) {
    if (entry->signature != signature) continue;
    entry->last_used = clock_;
    entry->Refresh(tracker, nodes, compute, bind_columns_);
    return entry;
  }

  auto entry = std::make_shared<CountsEntry>();
  entry->last_used = clock_;
  auto once = std::find(seen_once_.begin(), seen_once_.end(), signature);
  if (once == seen_once_.end()) {
    if (seen_once_.size() == kSeenOnceCapacity) seen_once_.erase(seen_once_.begin());
    seen_once_.push_back(std::move(signature));
    entry->CountOnce(contributing, compute);
    return entry;
  }
  seen_once_.erase(once);
  entry->Refresh(tracker, nodes, compute, bind_columns_);
  entry->signature = std::move(signature);
  if (entries_.size() == capacity_) {
    auto oldest =
        std::min_element(entries_.begin(), entries_.end(),
                         [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
    entries_.erase(oldest);
  }
  entries_.push_back(entry);
  return entry;
}

}  // namespace berth::plugins::interpodaffinity
