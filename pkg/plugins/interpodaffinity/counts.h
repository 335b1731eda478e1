#ifndef BERTH_PKG_PLUGINS_INTERPODAFFINITY_COUNTS_H_
#define BERTH_PKG_PLUGINS_INTERPODAFFINITY_COUNTS_H_

// Counts per topology pair (a node label key and one of its values), and a cache that keeps such
// counts up to date across scheduling cycles by recomputing only the nodes whose NodeInfo changed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pkg/framework/types.h"
#include "pkg/plugins/helper/key_column.h"
#include "pkg/plugins/helper/node_list_tracker.h"

namespace berth::plugins::interpodaffinity {

// Amounts per topology value of one key: an open-addressing table, so that a lookup (Filter and
// Score make one per node and key) reads one slot, whose address can be asked for ahead of time
// from the value's hash. Not thread-safe for writes; concurrent reads are safe.
class ValueTable {
 public:
  struct Cell {
    int64_t amount = 0;
    int64_t contributions = 0;
  };

  static uint64_t Hash(std::string_view value) { return std::hash<std::string_view>{}(value); }

  const Cell* Find(std::string_view value) const { return Find(value, Hash(value)); }
  const Cell* Find(std::string_view value, uint64_t hash) const {
    if (size_ == 0) return nullptr;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.hash == hash && slot.value == value) return &slot.cell;
    }
  }
  // Asks for the slot a lookup of `hash` reads first (a hint, no effect on results).
  void Prefetch(uint64_t hash) const {
    if (size_ != 0) __builtin_prefetch(&slots_[hash & mask_]);
  }
  // Adds to the value's cell, created when absent and dropped once both its amount and its
  // contributions are back to zero. Returns +1 when the value appeared, -1 when it was dropped.
  int Add(std::string_view value, int64_t amount, int64_t contributions);
  size_t size() const { return size_; }
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.used) fn(std::string_view(slot.value), slot.cell);
    }
  }

 private:
  // One cache line, so that a lookup that finds its value in the first slot (the common case at
  // this load) reads a single line, the one Prefetch asks for.
  struct alignas(64) Slot {
    uint64_t hash = 0;
    bool used = false;
    Cell cell;
    std::string value;
  };
  void Grow();
  void Erase(size_t index);

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Amounts per (topology key, value), grouped by key (a cycle uses few keys). A pair is present
// while it has a non-zero amount or a contribution not taken back: upstream's maps keep a pair
// with a zero total when scores of opposite signs cancel, but drop it when a count returns to zero.
// Not thread-safe for writes; concurrent reads are safe.
class TopologyCounts {
 public:
  using Cell = ValueTable::Cell;
  struct Key {
    std::string key;
    ValueTable values;
    // When bound to a column of the key: the amount of each of its value ids (absent ids: 0), so
    // that Filter reads a node's amount from the node's id in the column without text or hashing.
    // Unbound (null) once a value the column does not know was added.
    std::shared_ptr<const helper::KeyColumn> column;
    std::vector<int64_t> amount_by_id;

    int64_t AmountById(int32_t id) const {
      const auto i = static_cast<size_t>(id);
      return id >= 0 && i < amount_by_id.size() ? amount_by_id[i] : 0;
    }
  };

  // The index of `key`, added when absent. Indexes stay valid for the object's life.
  uint32_t KeyIndex(std::string_view key);
  void Add(uint32_t key_index, std::string_view value, int64_t amount, int64_t contributions);
  void Add(std::string_view key, std::string_view value, int64_t amount, int64_t contributions) {
    Add(KeyIndex(key), value, amount, contributions);
  }

  // The amount of the pair; 0 when absent.
  int64_t Amount(std::string_view key, std::string_view value) const;
  // The index of `key`; -1 when absent.
  int32_t FindKey(std::string_view key) const;
  // The amount of the pair of the key at `key_index` (-1: absent key) and `value`, whose
  // ValueTable::Hash is `hash`.
  int64_t AmountAt(int32_t key_index, std::string_view value, uint64_t hash) const {
    if (key_index < 0) return 0;
    const Cell* cell = keys_[key_index].values.Find(value, hash);
    return cell == nullptr ? 0 : cell->amount;
  }
  // Keeps the key's amounts by the ids of `column` (of the same key) from now on; false, leaving
  // the key unbound, when one of its values is not in the column.
  bool Bind(uint32_t key_index, std::shared_ptr<const helper::KeyColumn> column);

  // Pairs present.
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::vector<Key>& keys() const { return keys_; }

 private:
  std::vector<Key> keys_;
  size_t size_ = 0;
};

// One node's share of a CountsEntry's maps: `amount` added to pair (key, value) of map `map`.
// `value` views a label of the node, kept alive by the NodeInfo the entry holds for the slot.
struct Contribution {
  uint32_t map = 0;
  uint32_t key = 0;
  std::string_view value;
  int64_t amount = 0;
};

inline constexpr size_t kMaxCountsMaps = 2;

using helper::NodeListTracker;

// Counts over every node of the snapshot for one signature (what the counts depend on besides the
// cluster), with each node's contributions, so that a later cycle recomputes only the nodes whose
// NodeInfo was replaced since (as a NodeListTracker tells). The entry keeps the NodeInfos it
// counted alive: contributions view their labels.
struct CountsEntry {
  // Emits the contributions of one node: called with (map, key, value, amount).
  using Emit = std::function<void(uint32_t, std::string_view, std::string_view, int64_t)>;
  using Compute = std::function<void(const framework::NodeInfo&, const Emit&)>;

  std::string signature;
  std::vector<framework::NodeInfoPtr> seen;
  std::vector<std::vector<Contribution>> contributions;
  TopologyCounts maps[kMaxCountsMaps];
  // Bumped whenever the maps change; a cycle's state compares it to notice it was kept past its
  // cycle (the maps are only valid for the cycle that last brought them up to date).
  uint64_t version = 0;
  uint64_t last_used = 0;
  // The tracker epoch the maps reflect; 0: none yet.
  uint64_t synced_epoch = 0;

  // Brings the maps up to date with `nodes`, which `tracker` was synced with last. With
  // `bind_columns`, every key of the maps ends bound to the tracker's column of the key.
  void Refresh(NodeListTracker& tracker, const std::vector<framework::NodeInfoPtr>& nodes,
               const Compute& compute, bool bind_columns);
  // Fills the maps from `nodes` once, keeping no slots: for an entry that is never refreshed.
  void CountOnce(const std::vector<framework::NodeInfoPtr>& nodes, const Compute& compute);
};

// CountsEntries by signature, least recently used dropped first. A signature is kept only once
// it was asked for twice, so pods that are each unlike every other (as pods that carry their own
// name as a label) cost one scan each, as without a cache, rather than evicting entries that
// serve many pods. Thread-safe, though meant for the scheduling thread.
//
// Invariant: an entry returned by Get is only read until the next Get, by the cycle that asked.
class CountsCache {
 public:
  // With `bind_columns`, kept entries' keys are bound to the tracker's columns (for the maps
  // Filter reads).
  explicit CountsCache(size_t capacity = 4, bool bind_columns = false)
      : capacity_(capacity), bind_columns_(bind_columns) {}

  // Counts over `nodes` (the snapshot's list, whose positions the entry's slots follow; `tracker`
  // was synced with it last).
  // `contributing` is a subset of `nodes` holding every node that can contribute: a signature not
  // kept is counted over it alone, without the bookkeeping a kept entry needs.
  std::shared_ptr<const CountsEntry> Get(std::string signature, NodeListTracker& tracker,
                                         const std::vector<framework::NodeInfoPtr>& nodes,
                                         const std::vector<framework::NodeInfoPtr>& contributing,
                                         const CountsEntry::Compute& compute);

 private:
  std::mutex mu_;
  size_t capacity_;
  bool bind_columns_;
  uint64_t clock_ = 0;
  std::vector<std::shared_ptr<CountsEntry>> entries_;
  // Signatures asked for once and not kept, newest last.
  std::vector<std::string> seen_once_;
};

}  // namespace berth::plugins::interpodaffinity

#endif  // BERTH_PKG_PLUGINS_INTERPODAFFINITY_COUNTS_H_
