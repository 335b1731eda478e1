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

std::optional<DecisionMemo::Decision> DecisionMemo::Find(
    size_t slot, const std::shared_ptr<const Claims>& claims, const std::string& state) const {
  if (slot >= size_ || claims == nullptr) return std::nullopt;
  const Slot& entry = slots_[slot];
  std::lock_guard lock(entry.lock);
  if (entry.state != state) return std::nullopt;
  for (const Entry& decided : entry.entries) {
    if (decided.claims != claims.get()) continue;
    entry.hits++;
    return decided.decision;
  }
  return std::nullopt;
}

void DecisionMemo::Remember(size_t slot, const std::shared_ptr<const Claims>& claims,
                            std::string state, Decision decision) {
  if (slot >= size_ || claims == nullptr) return;
  Slot& entry = slots_[slot];
  std::lock_guard lock(entry.lock);
  if (entry.state != state) {
    entry.state = std::move(state);
    entry.entries.clear();
  }
  for (Entry& decided : entry.entries) {
    if (decided.claims == claims.get()) {
      decided.decision = std::move(decision);
      return;
    }
  }
  // At most one entry per interned claims: bounded by kMaxClaims.
  entry.entries.push_back({claims.get(), std::move(decision)});
}

uint64_t DecisionMemo::hits() const {
  uint64_t total = 0;
  for (size_t i = 0; i < size_; i++) {
    std::lock_guard lock(slots_[i].lock);
    total += slots_[i].hits;
  }
  return total;
}

}  // namespace berth::plugins::dynamicresources
