#include "pkg/plugins/interpodaffinity/counts.h"

#include <algorithm>
#include <utility>

namespace berth::plugins::interpodaffinity {
namespace {

constexpr size_t kSeenOnceCapacity = 16;

}  // namespace

uint32_t TopologyCounts::KeyIndex(std::string_view key) {
  for (size_t i = 0; i < keys_.size(); i++) {
    if (keys_[i].key == key) return static_cast<uint32_t>(i);
  }
  keys_.push_back(Key{std::string(key), {}});
  return static_cast<uint32_t>(keys_.size() - 1);
}

void TopologyCounts::Add(uint32_t key_index, std::string_view value, int64_t amount,
                         int64_t contributions) {
  Values& values = keys_[key_index].values;
  auto it = values.find(value);
  if (it == values.end()) {
    if (amount == 0 && contributions == 0) return;
    values.emplace(std::string(value), Cell{amount, contributions});
    size_++;
    return;
  }
  it->second.amount += amount;
  it->second.contributions += contributions;
  if (it->second.amount == 0 && it->second.contributions == 0) {
    values.erase(it);
    size_--;
  }
}

int64_t TopologyCounts::Amount(std::string_view key, std::string_view value) const {
  return AmountAt(FindKey(key), value);
}

int32_t TopologyCounts::FindKey(std::string_view key) const {
  for (size_t i = 0; i < keys_.size(); i++) {
    if (keys_[i].key == key) return static_cast<int32_t>(i);
  }
  return -1;
}

void CountsEntry::Refresh(const std::vector<framework::NodeInfoPtr>& nodes,
                          const Compute& compute) {
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
  for (; slot < nodes.size(); slot++) {
    if (seen[slot] == nodes[slot]) continue;
    take_back(slot);
    seen[slot] = nodes[slot];
    compute(*nodes[slot], emit);
    changed = true;
  }
  if (changed) version++;
}

std::shared_ptr<const CountsEntry> CountsCache::Get(
    std::string signature, const std::vector<framework::NodeInfoPtr>& nodes,
    const CountsEntry::Compute& compute) {
  std::lock_guard lock(mu_);
  clock_++;
  for (const auto& entry : entries_) {
    if (entry->signature != signature) continue;
    entry->last_used = clock_;
    entry->Refresh(nodes, compute);
    return entry;
  }

  auto entry = std::make_shared<CountsEntry>();
  entry->Refresh(nodes, compute);
  entry->last_used = clock_;
  auto once = std::find(seen_once_.begin(), seen_once_.end(), signature);
  if (once == seen_once_.end()) {
    if (seen_once_.size() == kSeenOnceCapacity) seen_once_.erase(seen_once_.begin());
    seen_once_.push_back(std::move(signature));
    return entry;
  }
  seen_once_.erase(once);
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
