#ifndef BERTH_PKG_SERVER_AUTH_TTL_CACHE_H_
#define BERTH_PKG_SERVER_AUTH_TTL_CACHE_H_

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "pkg/util/clock.h"

namespace berth::server::auth {

// Values that expire a fixed time after they were stored, at most `capacity` of them: when full,
// expired entries go first, then those closest to expiry. The bound keeps a client that sends
// endless distinct tokens from growing the process. Thread-safe.
template <typename V>
class TtlCache {
 public:
  TtlCache(const util::Clock& clock, size_t capacity) : clock_(clock), capacity_(capacity) {}
  TtlCache(const TtlCache&) = delete;
  TtlCache& operator=(const TtlCache&) = delete;

  // The value stored under `key`, unless it expired.
  std::optional<V> Get(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    if (it->second.expires <= clock_.Now()) {
      Erase(it);
      return std::nullopt;
    }
    return it->second.value;
  }

  // Stores `value` for `ttl`, replacing what `key` held; a ttl of zero or less stores nothing.
  void Put(const std::string& key, V value, std::chrono::nanoseconds ttl) {
    if (ttl <= std::chrono::nanoseconds::zero() || capacity_ == 0) return;
    std::lock_guard lock(mu_);
    const auto now = clock_.Now();
    if (auto it = entries_.find(key); it != entries_.end()) Erase(it);
    while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
      Erase(entries_.find(by_expiry_.begin()->second));
    }
    if (entries_.size() >= capacity_) Erase(entries_.find(by_expiry_.begin()->second));
    const auto expires = now + ttl;
    auto order = by_expiry_.emplace(expires, key);
    entries_.emplace(key, Entry{std::move(value), expires, order});
  }

  size_t Size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

 private:
  using TimePoint = util::Clock::TimePoint;
  struct Entry {
    V value;
    TimePoint expires;
    typename std::multimap<TimePoint, std::string>::iterator order;
  };

  void Erase(typename std::unordered_map<std::string, Entry>::iterator it) {
    by_expiry_.erase(it->second.order);
    entries_.erase(it);
  }

  const util::Clock& clock_;
  const size_t capacity_;
  mutable std::mutex mu_;  // Guards both maps, which always hold the same keys.
  std::unordered_map<std::string, Entry> entries_;
  std::multimap<TimePoint, std::string> by_expiry_;
};

}  // namespace berth::server::auth

#endif  // BERTH_PKG_SERVER_AUTH_TTL_CACHE_H_
