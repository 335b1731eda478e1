#include "pkg/plugins/dynamicresources/decision_memo.h"

#include <algorithm>
#include <cstddef>

namespace berth::plugins::dynamicresources {

DecisionMemo::DecisionMemo(size_t slots) : size_(slots), slots_(std::make_unique<Slot[]>(slots)) {}

std::shared_ptr<const DecisionMemo::Claims> DecisionMemo::Intern(
    std::shared_ptr<const Claims> claims) {
  std::lock_guard lock(mu_);
  for (const std::shared_ptr<const Claims>& kept : interned_) {
    if (*kept == *claims) return kept;
  }
  if (interned_.size() >= kMaxClaims) return nullptr;
  interned_.push_back(claims);
  return claims;
}

namespace {

// This thread's hit counter (threads take them in turn).
size_t HitCountIndex(size_t counts) {
  static std::atomic<size_t> next{0};
  thread_local const size_t index = next.fetch_add(1, std::memory_order_relaxed);
  return index % counts;
}

}  // namespace

void DecisionMemo::CountHit() const {
  hit_counts_[HitCountIndex(kHitCounts)].hits.fetch_add(1, std::memory_order_relaxed);
}

void DecisionMemo::Remember(size_t slot, const std::shared_ptr<const Claims>& claims,
                            std::string state, Decision decision) {
  if (slot >= size_ || claims == nullptr) return;
  Slot& entry = slots_[slot];
  std::unique_ptr<const SlotData> replaced;
  {
    std::lock_guard lock(entry.lock);
    auto next = std::make_unique<SlotData>();
    if (entry.owned != nullptr && entry.owned->state == state) {
      next->entries = entry.owned->entries;
    }
    next->state = std::move(state);
    bool updated = false;
    for (Entry& decided : next->entries) {
      if (decided.claims == claims.get()) {
        decided.decision = std::move(decision);
        updated = true;
        break;
      }
    }
    // At most one entry per interned claims: bounded by kMaxClaims.
    if (!updated) next->entries.push_back({claims.get(), std::move(decision)});
    entry.data.store(next.get(), std::memory_order_release);
    replaced = std::move(entry.owned);
    entry.owned = std::move(next);
  }
  // A Find of this cycle may still read it: freed by Reclaim.
  if (replaced != nullptr) {
    std::lock_guard lock(mu_);
    retired_.push_back(std::move(replaced));
  }
}

void DecisionMemo::Reclaim() {
  std::vector<std::unique_ptr<const SlotData>> freed;
  std::lock_guard lock(mu_);
  freed.swap(retired_);
}

uint64_t DecisionMemo::hits() const {
  uint64_t total = 0;
  for (const HitCount& count : hit_counts_) total += count.hits.load(std::memory_order_relaxed);
  return total;
}

}  // namespace berth::plugins::dynamicresources
