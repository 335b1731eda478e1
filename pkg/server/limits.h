#ifndef BERTH_PKG_SERVER_LIMITS_H_
#define BERTH_PKG_SERVER_LIMITS_H_

// Internal to the secure port: the admission counts behind Options::limits.

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "pkg/server/server.h"
#include "pkg/util/clock.h"

namespace berth::server {

// The admission counts of Options::limits, per source address: how many connections are open in
// all and from each source, and each source's bucket of request tokens.
//
// Invariants: the open count is the number of live Slots, and a source's connection count the
// number of its live Slots; neither exceeds its Limits cap. A bucket holds at most request_burst
// tokens. A source is forgotten only with no connection open and a bucket full again, so
// reconnecting never refills a bucket sooner than time does.
//
// Thread-safe: every method may be called from any thread. A Slot must not outlive the
// SourceLimits it came from.
class SourceLimits {
 public:
  explicit SourceLimits(const Limits& limits);
  SourceLimits(const SourceLimits&) = delete;
  SourceLimits& operator=(const SourceLimits&) = delete;

  // One open connection; its destruction frees the place.
  class Slot {
   public:
    Slot(SourceLimits* limits, std::string source) : limits_(limits), source_(std::move(source)) {}
    ~Slot() { limits_->Release(source_); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    SourceLimits* const limits_;
    const std::string source_;
  };

  // A place for a new connection from `source`; null when the listener or the source is full.
  std::unique_ptr<Slot> Open(const std::string& source);

  // Spends one request from the source's bucket; false when it is empty.
  bool TakeRequest(const std::string& source);

 private:
  struct Source {
    size_t connections = 0;
    double tokens = 0;
    util::Clock::TimePoint refilled;
  };
  // Sources without a connection are forgotten once their bucket is full again (forgetting one
  // sooner would let a client refill it by reconnecting); looked for when this many are known.
  static constexpr size_t kPruneAt = 4096;

  // The source's entry, its bucket refilled to `now`. Requires mu_.
  Source& Find(const std::string& source, util::Clock::TimePoint now);
  void Release(const std::string& source);
  // Requires mu_.
  void Prune(util::Clock::TimePoint now);

  const Limits limits_;
  const util::RealClock real_clock_;
  const util::Clock* const clock_;  // limits_.clock, or real_clock_.
  std::mutex mu_;                   // Guards open_ and sources_.
  size_t open_ = 0;
  std::unordered_map<std::string, Source> sources_;
};

}  // namespace berth::server

#endif  // BERTH_PKG_SERVER_LIMITS_H_
