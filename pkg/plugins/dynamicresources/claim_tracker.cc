#include "pkg/plugins/dynamicresources/claim_tracker.h"

#include <charconv>
#include <system_error>
#include <utility>
#include <vector>

#include "pkg/informer/factory.h"
#include "pkg/plugins/dynamicresources/extended_claim.h"

namespace berth::plugins::dynamicresources {
namespace {

// Whether resourceVersion `a` comes before `b`. Versions that are not numbers (never made by
// etcd) are ordered only when equal: a different one counts as newer, so it replaces.
bool OlderVersion(const std::string& a, const std::string& b) {
  uint64_t x = 0;
  uint64_t y = 0;
  auto parse = [](const std::string& text, uint64_t* out) {
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, *out);
    return ec == std::errc() && ptr == end && !text.empty();
  };
  if (parse(a, &x) && parse(b, &y)) return x < y;
  return a != b;
}

}  // namespace

std::shared_ptr<ClaimTracker> ClaimTracker::For(informer::SharedInformerFactory& informers) {
  static std::mutex mu;
  static std::map<const informer::SharedInformerFactory*, std::weak_ptr<ClaimTracker>> trackers;
  informer::Informer<api::ResourceClaim>& informer = informers.For<api::ResourceClaim>();
  std::lock_guard lock(mu);
  std::weak_ptr<ClaimTracker>& slot = trackers[&informers];
  std::shared_ptr<ClaimTracker> tracker = slot.lock();
  // A factory made where a destroyed one was gets a tracker of its own.
  if (tracker == nullptr || tracker->store_ != &informer.store()) {
    tracker = std::make_shared<ClaimTracker>(informer);
    slot = tracker;
    std::weak_ptr<ClaimTracker> weak = tracker;
    informer::EventHandler<api::ResourceClaim> handler;
    handler.on_add = [weak](const api::ResourceClaimPtr& claim) {
      if (auto t = weak.lock()) t->Stored(claim);
    };
    handler.on_update = [weak](const api::ResourceClaimPtr&, const api::ResourceClaimPtr& claim) {
      if (auto t = weak.lock()) t->Stored(claim);
    };
    handler.on_delete = [weak](const api::ResourceClaimPtr& claim) {
      if (auto t = weak.lock()) t->Deleted(claim);
    };
    informer.AddEventHandler(std::move(handler));
  }
  return tracker;
}

ClaimTracker::ClaimTracker(informer::Informer<api::ResourceClaim>& informer)
    : store_(&informer.store()) {}

api::ResourceClaimPtr ClaimTracker::Get(const std::string& namespace_,
                                        const std::string& name) const {
  const std::string key = namespace_ + "/" + name;
  api::ResourceClaimPtr stored = store_->Get(key);
  if (stored == nullptr) return nullptr;
  std::lock_guard lock(mu_);
  auto it = written_.find(key);
  if (it != written_.end() &&
      OlderVersion(stored->meta.resource_version, it->second->meta.resource_version)) {
    return it->second;
  }
  return stored;
}

api::ResourceClaimPtr ClaimTracker::FindExtendedClaim(
    const std::string& namespace_, const std::string& owner_uid,
    const std::function<bool(const api::ResourceClaim&)>& match) const {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu_);
    // Written but maybe not in the informer yet: the scheduler's own, few.
    for (const auto& [key, claim] : written_) {
      if (claim->meta.namespace_ == namespace_ && match(*claim)) return claim;
    }
    auto owned = extended_by_owner_.find(owner_uid);
    if (owned == extended_by_owner_.end()) return nullptr;
    keys.assign(owned->second.begin(), owned->second.end());
  }
  for (const std::string& key : keys) {
    const size_t slash = key.find('/');
    if (key.compare(0, slash, namespace_) != 0 || slash != namespace_.size()) continue;
    api::ResourceClaimPtr claim = Get(namespace_, key.substr(slash + 1));
    if (claim != nullptr && match(*claim)) return claim;
  }
  return nullptr;
}

void ClaimTracker::IndexExtended(const std::string& key, const api::ResourceClaim* claim) {
  std::string owner;
  if (claim != nullptr) {
    const std::string* annotation = claim->meta.annotations.Find(kExtendedResourceClaimAnnotation);
    if (annotation != nullptr && *annotation == "true") {
      for (const api::OwnerReference& reference : claim->meta.owner_references) {
        if (reference.controller) owner = reference.uid;
      }
    }
  }
  auto old = extended_owner_.find(key);
  if (old != extended_owner_.end() && old->second != owner) {
    auto keys = extended_by_owner_.find(old->second);
    if (keys != extended_by_owner_.end()) {
      keys->second.erase(key);
      if (keys->second.empty()) extended_by_owner_.erase(keys);
    }
    extended_owner_.erase(old);
  }
  if (owner.empty()) return;
  extended_owner_[key] = owner;
  extended_by_owner_[owner].insert(key);
}

std::shared_ptr<const api::ResourceClaim> ClaimTracker::PendingAllocation(
    const std::string& uid, std::string* group) const {
  std::lock_guard lock(mu_);
  auto it = in_flight_.find(uid);
  if (it == in_flight_.end()) return nullptr;
  if (group != nullptr) *group = it->second.group;
  return it->second.claim;
}

void ClaimTracker::SignalPendingAllocation(const std::string& uid, api::ResourceClaimPtr allocated,
                                           const std::string& group) {
  std::lock_guard lock(mu_);
  auto [it, added] = in_flight_.try_emplace(uid, InFlight{std::move(allocated), group, 0});
  it->second.sharers++;
  if (added) revision_++;
}

bool ClaimTracker::MaybeRemovePendingAllocation(const std::string& uid, bool force) {
  std::lock_guard lock(mu_);
  auto it = in_flight_.find(uid);
  if (it == in_flight_.end()) return false;
  if (!force && it->second.sharers > 1) {
    it->second.sharers--;
    return false;
  }
  in_flight_.erase(it);
  revision_++;
  return true;
}

void ClaimTracker::AssumeWritten(api::ResourceClaimPtr written) {
  const std::string key = written->meta.Key();
  std::lock_guard lock(mu_);
  // The informer may deliver the write at any moment; Get and the handler both compare versions,
  // so an entry that lost the race is never seen and is dropped by the next event or Restore.
  api::ResourceClaimPtr stored = store_->Get(key);
  // Without a stored version the claim is one the scheduler just created (for extended
  // resources): its allocation counts until the informer has it.
  if (stored != nullptr &&
      !OlderVersion(stored->meta.resource_version, written->meta.resource_version)) {
    return;
  }
  // The base counts the informer's version, which the written one now replaces.
  if (base_claims_.contains(key)) base_stale_ = true;
  written_[key] = std::move(written);
  revision_++;
}

void ClaimTracker::RestoreWritten(const std::string& key) {
  std::lock_guard lock(mu_);
  if (written_.erase(key) > 0) revision_++;
}

bool ClaimTracker::GatherAllocatedState(AllocatedState* state) const {
  std::lock_guard lock(mu_);
  auto add = [](AllocatedState* to, const api::ResourceClaim& claim) {
    return !claim.status.allocation || to->AddAllocation(*claim.status.allocation);
  };
  // Rebuilding costs one step per allocated claim. Claims allocated since are folded, a few at a
  // time, into a level over the base (so a call re-adds at most kFoldAbove of them), and the
  // levels are folded into a new base once they count about 4 sqrt(2n) claims: rebuilds then
  // cost a few steps per call, and a lookup by device ID (rare: devices the inventory indexes
  // are looked up by index) walks at most a few dozen levels.
  constexpr size_t kFoldAbove = 16;
  size_t limit = 128;
  while (limit * limit < 32 * base_claims_.size()) limit *= 2;
  if (base_stale_ || folded_ + added_.size() > limit) {
    auto base = std::make_shared<AllocatedState>();
    base_exact_ = true;
    base_claims_.clear();
    added_.clear();
    for (const auto& [key, claim] : allocated_) {
      if (written_.contains(key)) {
        added_.insert(key);
        continue;
      }
      if (!add(base.get(), *claim)) base_exact_ = false;
      base_claims_.emplace(key, claim);
    }
    base_ = std::move(base);
    base_stale_ = false;
    folded_ = 0;
    base_builds_++;
  } else if (added_.size() > kFoldAbove) {
    auto level = std::make_shared<AllocatedState>();
    level->base = base_;
    for (auto it = added_.begin(); it != added_.end();) {
      if (written_.contains(*it)) {
        ++it;
        continue;
      }
      const api::ResourceClaimPtr& claim = allocated_.at(*it);
      if (!add(level.get(), *claim)) base_exact_ = false;
      base_claims_.emplace(*it, claim);
      folded_++;
      it = added_.erase(it);
    }
    if (!level->SumsWithBase()) base_exact_ = false;
    base_ = std::move(level);
  }
  bool exact = base_exact_;
  for (const std::string& key : added_) {
    if (written_.contains(key)) continue;
    if (!add(state, *allocated_.at(key))) exact = false;
  }
  for (const auto& [key, written] : written_) {
    if (!add(state, *written)) exact = false;
  }
  for (const auto& [uid, in_flight] : in_flight_) {
    if (!add(state, *in_flight.claim)) exact = false;
  }
  state->base = base_;
  return exact && state->SumsWithBase();
}

bool ClaimTracker::GatherAllocatedStateWithout(const std::set<std::string>& claim_uids,
                                               AllocatedState* state) const {
  std::lock_guard lock(mu_);
  bool exact = true;
  auto add = [&](const api::ResourceClaim& claim) {
    if (!claim.status.allocation || claim_uids.contains(claim.meta.uid)) return;
    if (!state->AddAllocation(*claim.status.allocation)) exact = false;
  };
  for (const auto& [key, claim] : allocated_) {
    if (!written_.contains(key)) add(*claim);
  }
  for (const auto& [key, written] : written_) add(*written);
  for (const auto& [uid, in_flight] : in_flight_) {
    if (in_flight.claim->status.allocation &&
        !state->AddAllocation(*in_flight.claim->status.allocation)) {
      exact = false;
    }
  }
  return exact;
}

uint64_t ClaimTracker::base_builds() const {
  std::lock_guard lock(mu_);
  return base_builds_;
}

uint64_t ClaimTracker::revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

void ClaimTracker::Stored(const api::ResourceClaimPtr& claim) {
  const std::string key = claim->meta.Key();
  std::lock_guard lock(mu_);
  if (auto counted = base_claims_.find(key); counted != base_claims_.end()) {
    // The base stays right while the claim keeps the allocation it counted.
    if (!claim->status.allocation ||
        !(*claim->status.allocation == *counted->second->status.allocation)) {
      base_stale_ = true;
    }
  } else if (claim->status.allocation) {
    added_.insert(key);
  } else {
    added_.erase(key);
  }
  if (claim->status.allocation) {
    allocated_[key] = claim;
  } else {
    allocated_.erase(key);
  }
  IndexExtended(key, claim.get());
  if (auto it = written_.find(key);
      it != written_.end() &&
      !OlderVersion(claim->meta.resource_version, it->second->meta.resource_version)) {
    written_.erase(it);
  }
  revision_++;
}

void ClaimTracker::Deleted(const api::ResourceClaimPtr& claim) {
  const std::string key = claim->meta.Key();
  std::lock_guard lock(mu_);
  if (base_claims_.contains(key)) base_stale_ = true;
  added_.erase(key);
  allocated_.erase(key);
  written_.erase(key);
  IndexExtended(key, nullptr);
  revision_++;
}

}  // namespace berth::plugins::dynamicresources
