#include "pkg/plugins/dynamicresources/decision_memo.h"

#include <algorithm>
#include <cstddef>

namespace berth::plugins::dynamicresources {

DecisionMemo::DecisionMemo(size_t slots) : size_(slots), slots_(std::make_unique<Slot[]>(slots)) {}

std::shared_ptr<const DecisionMemo::Claims> DecisionMemo::Intern(
    std::shared_ptr<const Claims> claims) {
  // A few specs alternate at most (the templates of the pods pending at once); others are simply
  // compared by value in Find.
  constexpr size_t kInterned = 8;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < interned_.size(); i++) {
    if (*interned_[i] == *claims) {
      std::rotate(interned_.begin(), interned_.begin() + static_cast<std::ptrdiff_t>(i),
                  interned_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return interned_.front();
    }
  }
  if (interned_.size() == kInterned) interned_.pop_back();
  interned_.insert(interned_.begin(), claims);
  return claims;
}

std::optional<DecisionMemo::Decision> DecisionMemo::Find(
    size_t slot, const std::shared_ptr<const Claims>& claims, const std::string& state) const {
  if (slot >= size_ || claims == nullptr) return std::nullopt;
  const Slot& entry = slots_[slot];
  std::lock_guard lock(entry.lock);
  if (entry.claims == nullptr || entry.state != state) return std::nullopt;
  if (entry.claims != claims && *entry.claims != *claims) return std::nullopt;
  entry.hits++;
  return entry.decision;
}

void DecisionMemo::Remember(size_t slot, std::shared_ptr<const Claims> claims, std::string state,
                            Decision decision) {
  if (slot >= size_ || claims == nullptr) return;
  Slot& entry = slots_[slot];
  std::lock_guard lock(entry.lock);
  entry.claims = std::move(claims);
  entry.state = std::move(state);
  entry.decision = std::move(decision);
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
