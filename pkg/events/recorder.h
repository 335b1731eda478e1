#ifndef BERTH_PKG_EVENTS_RECORDER_H_
#define BERTH_PKG_EVENTS_RECORDER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pkg/client/client.h"
#include "pkg/framework/interface.h"

namespace berth::events {

// The apiserver rejects an events.k8s.io/v1 note longer than this many bytes.
inline constexpr size_t kMaxNoteLength = 1024;

// The recorder's time sources, injectable so tests drive series expiry and token refill without
// sleeping. Implementations must be thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Ages and token refill: must never go backwards.
  virtual std::chrono::steady_clock::time_point Monotonic() const = 0;
  // What the Event carries (eventTime, series.lastObservedTime) and its name suffix.
  virtual std::chrono::system_clock::time_point Wall() const = 0;
};

// steady_clock and system_clock.
std::shared_ptr<const Clock> RealClock();

// Defaults follow client-go (tools/events for series, tools/record for the per-object filter)
// except where noted.
struct RecorderOptions {
  // Every write to the apiserver (create or series update) takes a token from one bucket.
  // Events share the client's own limiter (default 50 qps) with bindings and status patches;
  // capping them at a fifth of it keeps a storm of unschedulable pods from slowing binding,
  // while the burst absorbs a typical batch of failures (a scale-up) at once. Beyond it new
  // events wait for tokens (see ApiEventRecorder). Upstream has no such cap because
  // kube-scheduler gives events a client of their own. qps <= 0: no limit.
  double qps = 10;
  int burst = 100;

  // tools/record's EventSourceObjectSpamFilter: each pod may produce `per_object_burst` writes,
  // refilled at one per 5 minutes. Creates and the immediate second-occurrence update are
  // charged; a repeat folded into a series in memory costs the apiserver nothing, so its count
  // stays exact, and periodic series writes are paced by series_refresh_period and the global
  // bucket instead. per_object_burst <= 0: off.
  int per_object_burst = 25;
  double per_object_qps = 1.0 / 300;
  // Pods whose bucket is remembered (LRU; a full bucket is forgotten at the next maintenance).
  size_t max_tracked_objects = 4096;

  // A series' count and lastObservedTime are written at most this often while it keeps growing.
  // Upstream refreshes every 30 minutes, so `kubectl describe pod` can show "x2" and a
  // lastObservedTime half an hour old while the scheduler is still retrying, which reads as if
  // it had given up. 5 minutes is the period at which an unschedulable pod is retried anyway
  // (podMaxInUnschedulablePodsDuration), so the visible count trails by about one retry, for at
  // most one PATCH per active series per 5 minutes (and the global bucket paces those).
  std::chrono::milliseconds series_refresh_period = std::chrono::minutes(5);
  // A cached event not observed for this long is finished: its pending count is written and the
  // entry forgotten, so the next occurrence creates a new Event. As upstream (6 minutes): longer
  // than the unschedulable retry period, so a stuck pod keeps a single series.
  std::chrono::milliseconds series_finish_after = std::chrono::minutes(6);
  // Cached events (LRU; upstream's correlator cache size). Evicting a series writes its count.
  size_t max_cached_events = 4096;

  // Writes waiting for the sender; beyond it new events are dropped (upstream maxQueuedEvents).
  size_t backlog = 1000;
  // First occurrences waiting in the cache for a token of the global bucket. Upstream holds at
  // most maxQueuedEvents (1,000) events not yet written and drops the newest beyond it; so does
  // this, except that a Warning takes the place of the oldest waiting Normal event when there is
  // one. Without it a burst of bindings filled the whole cache with Scheduled events that could
  // only be written minutes later (about 2 MiB at 4,096). Zero: no cap beyond the cache's.
  size_t max_waiting_events = 1000;
  // How often the sender thread refreshes and finishes series and sends again creates that found
  // no apiserver; while events wait for tokens it runs as often as tokens come. Zero: never
  // (tests call Maintain()).
  std::chrono::milliseconds maintenance_interval = std::chrono::seconds(10);

  // Null: RealClock().
  std::shared_ptr<const Clock> clock;
};

// Records events.k8s.io/v1 Events about pods (and other objects) the way client-go's tools/events
// broadcaster does: the first occurrence is created; an identical repeat (same pod, type, reason,
// action and note) turns it into a series whose count is patched onto the same Event (the second
// occurrence at once, later ones in batches, see RecorderOptions); a series update that finds the
// Event gone creates it again. Writes go through a per-pod spam filter and a global token bucket.
// What the per-pod filter refuses is dropped and counted. A new event the global bucket refuses
// waits in the cache and is written as tokens come, warnings (FailedScheduling) before the rest
// and before any newer event, so a pod left Pending gets its explanation even right after a burst
// of Scheduled events. At most max_waiting_events wait: beyond it a new Normal event is dropped,
// and a new Warning displaces the oldest waiting Normal one. A create the apiserver
// did not answer (unreachable, 5xx, 429) is sent again at the next maintenance pass, one it
// refused after series_refresh_period.
//
// Thread-safe. Eventf never blocks on the network: it updates an in-memory cache under a short
// lock and hands writes to one sender thread. One thread keeps each Event's writes in order
// (the create before its series patches).
class ApiEventRecorder : public framework::EventRecorder {
 public:
  ApiEventRecorder(std::shared_ptr<client::Client> client, std::string reporting_controller,
                   std::string reporting_instance, RecorderOptions options = {});
  // Stops the sender after its current request. Writes still queued are abandoned (and counted
  // in dropped_backlog) so that shutdown never waits on an unreachable apiserver: call Flush()
  // first to send them.
  ~ApiEventRecorder() override;
  ApiEventRecorder(const ApiEventRecorder&) = delete;
  ApiEventRecorder& operator=(const ApiEventRecorder&) = delete;

  // A note longer than kMaxNoteLength is cut (at a UTF-8 character boundary).
  void Eventf(const api::Pod& regarding, const std::string& type, const std::string& reason,
              const std::string& action, const std::string& note) override;
  void Eventf(const api::ObjectReference& regarding, const std::string& type,
              const std::string& reason, const std::string& action,
              const std::string& note) override;

  // Queues the pending count of every series (as far as the global bucket allows), then waits
  // until every write queued so far was sent or failed.
  void Flush();
  // As Flush(), waiting at most `timeout`; false when writes were still outstanding.
  bool Flush(std::chrono::milliseconds timeout);

  // One refresh/expiry pass now: writes events waiting for a token (warnings first) and creates
  // due to be sent again, series counts older than series_refresh_period, finishes series idle
  // for series_finish_after, forgets idle singletons and full per-pod buckets. The sender thread
  // runs it every maintenance_interval.
  void Maintain();

  // New events refused by the per-pod filter, or evicted from the cache (or abandoned at
  // destruction) while waiting for a token of the global bucket.
  uint64_t dropped_rate_limited() const;
  // New events refused because the backlog was full or max_waiting_events already waited for a
  // token (a waiting Normal event a Warning displaced included), plus writes abandoned at
  // destruction.
  uint64_t dropped_backlog() const;
  // dropped_rate_limited() + dropped_backlog().
  uint64_t dropped() const;
  // Writes the apiserver rejected or that never reached it (after the client's own retries).
  uint64_t failed() const;
  // Events created (first occurrences, and series re-created after a 404).
  uint64_t created() const;
  // Series updates applied by PATCH.
  uint64_t series_patched() const;
  // Events currently cached for series detection.
  size_t cached_events() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// "berth-scheduler-<hostname>".
std::string DefaultReportingInstance();

}  // namespace berth::events

#endif  // BERTH_PKG_EVENTS_RECORDER_H_
