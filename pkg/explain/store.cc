#include "pkg/explain/store.h"

#include <algorithm>

namespace berth::explain {

size_t Store::IndexBytes(const Attempt& attempt) {
  // A node of each hash map (key, value and cached hash), a list node, two buckets, and the
  // copies of the uid (three) and the pod key (one) when they do not fit in a string inline.
  auto text = [](const std::string& s) { return s.size() > 15 ? s.size() + 1 + 16 : 0; };
  constexpr size_t kNodes = 96 + 80 + 48 + 2 * 8;
  return kNodes + 3 * text(attempt.uid) + text(attempt.pod);
}

void Store::EraseLocked(std::unordered_map<std::string, Entry>::iterator it) {
  const Attempt& a = *it->second.attempt;
  if (auto key = uid_by_key_.find(a.pod); key != uid_by_key_.end() && key->second == a.uid) {
    uid_by_key_.erase(key);
  }
  bytes_ -= it->second.bytes;
  order_.erase(it->second.order);
  by_uid_.erase(it);
}

void Store::EvictLocked() {
  while (bytes_ + recent_bytes_ > options_.max_bytes && !order_.empty()) {
    EraseLocked(by_uid_.find(order_.front()));
  }
}

void Store::Record(const AttemptPtr& attempt) {
  if (!attempt) return;
  const size_t bytes = attempt->ApproxBytes() + IndexBytes(*attempt);
  const std::string& uid = attempt->uid;
  std::lock_guard lock(mu_);
  if (auto it = by_uid_.find(uid); it != by_uid_.end()) EraseLocked(it);
  order_.push_back(uid);
  uid_by_key_[attempt->pod] = uid;
  bytes_ += bytes;
  Entry entry{attempt, bytes, std::prev(order_.end())};
  by_uid_.emplace(uid, std::move(entry));
  EvictLocked();
}

void Store::Bound(AttemptPtr attempt) {
  if (!attempt) return;
  const size_t bytes = attempt->ApproxBytes();
  std::lock_guard lock(mu_);
  if (auto it = by_uid_.find(attempt->uid); it != by_uid_.end()) EraseLocked(it);
  if (options_.recent_bound == 0) return;
  recent_bytes_ += bytes;
  recent_.push_front(std::move(attempt));
  while (recent_.size() > options_.recent_bound) {
    recent_bytes_ -= recent_.back()->ApproxBytes();
    recent_.pop_back();
  }
  EvictLocked();
}

void Store::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  if (auto it = by_uid_.find(uid); it != by_uid_.end()) EraseLocked(it);
}

AttemptPtr Store::Find(const std::string& pod_key) const {
  std::lock_guard lock(mu_);
  if (auto key = uid_by_key_.find(pod_key); key != uid_by_key_.end()) {
    if (auto it = by_uid_.find(key->second); it != by_uid_.end()) return it->second.attempt;
  }
  for (const auto& a : recent_) {
    if (a->pod == pod_key) return a;
  }
  return nullptr;
}

std::vector<AttemptPtr> Store::Pending() const {
  std::vector<AttemptPtr> out;
  {
    std::lock_guard lock(mu_);
    out.reserve(by_uid_.size());
    for (const auto& uid : order_) out.push_back(by_uid_.at(uid).attempt);
  }
  // order_ is by write; the newest attempt first, whatever order they were written in.
  std::stable_sort(out.begin(), out.end(),
                   [](const AttemptPtr& a, const AttemptPtr& b) { return a->time > b->time; });
  return out;
}

std::vector<AttemptPtr> Store::Recent() const {
  std::lock_guard lock(mu_);
  return {recent_.begin(), recent_.end()};
}

size_t Store::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_ + recent_bytes_;
}

size_t Store::pending_count() const {
  std::lock_guard lock(mu_);
  return by_uid_.size();
}

}  // namespace berth::explain
