#include "pkg/server/limits.h"

#include <algorithm>
#include <chrono>
#include <iterator>

namespace berth::server {

SourceLimits::SourceLimits(const Limits& limits)
    : limits_(limits), clock_(limits.clock != nullptr ? limits.clock : &real_clock_) {}

std::unique_ptr<SourceLimits::Slot> SourceLimits::Open(const std::string& source) {
  std::lock_guard lock(mu_);
  if (open_ >= limits_.max_connections) return nullptr;
  const util::Clock::TimePoint now = clock_->Now();
  if (sources_.size() >= kPruneAt) Prune(now);
  Source& s = Find(source, now);
  if (s.connections >= limits_.max_connections_per_source) return nullptr;
  s.connections++;
  open_++;
  return std::make_unique<Slot>(this, source);
}

bool SourceLimits::TakeRequest(const std::string& source) {
  std::lock_guard lock(mu_);
  Source& s = Find(source, clock_->Now());
  if (s.tokens < 1) return false;
  s.tokens -= 1;
  return true;
}

SourceLimits::Source& SourceLimits::Find(const std::string& source, util::Clock::TimePoint now) {
  auto [it, added] = sources_.try_emplace(source);
  Source& s = it->second;
  const double burst = static_cast<double>(limits_.request_burst);
  if (added) {
    s.tokens = burst;
  } else {
    const double elapsed = std::chrono::duration<double>(now - s.refilled).count();
    s.tokens = std::min(burst, s.tokens + elapsed * limits_.requests_per_second);
  }
  s.refilled = now;
  return s;
}

void SourceLimits::Release(const std::string& source) {
  std::lock_guard lock(mu_);
  open_--;
  auto it = sources_.find(source);
  if (it != sources_.end()) it->second.connections--;
}

void SourceLimits::Prune(util::Clock::TimePoint now) {
  const double burst = static_cast<double>(limits_.request_burst);
  for (auto it = sources_.begin(); it != sources_.end();) {
    const double elapsed = std::chrono::duration<double>(now - it->second.refilled).count();
    const bool full = it->second.tokens + elapsed * limits_.requests_per_second >= burst;
    it = it->second.connections == 0 && full ? sources_.erase(it) : std::next(it);
  }
}

}  // namespace berth::server
