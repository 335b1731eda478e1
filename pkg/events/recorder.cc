#include "pkg/events/recorder.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iterator>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "pkg/util/time.h"

namespace berth::events {
namespace {

using MonoTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

class SystemClock final : public Clock {
 public:
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
  WallTime Wall() const override { return std::chrono::system_clock::now(); }
};

// The apiserver counts the note's length in bytes; cutting inside a multi-byte character would
// leave invalid UTF-8, which the JSON encoder refuses, so the cut backs off to a character start.
std::string_view TruncateNote(std::string_view note) {
  if (note.size() <= kMaxNoteLength) return note;
  size_t n = kMaxNoteLength;
  for (int i = 0; i < 3 && n > 0 && (static_cast<unsigned char>(note[n]) & 0xC0) == 0x80; i++) {
    n--;
  }
  return note.substr(0, n);
}

// Length-prefixed, so no field's content can make two different tuples collide.
void AppendKeyField(std::string& key, std::string_view field) {
  key += std::to_string(field.size());
  key += ':';
  key += field;
}

// What identifies a series. client-go keys on (type, action, reason, reportingController,
// reportingInstance, regarding, related); the controller and instance are fixed per recorder and
// there is no related object here. Two deliberate differences:
//  - regarding is (kind, namespace, name, uid) without resourceVersion: the scheduler patches the
//    pod's PodScheduled condition after its first failure, and keying on the bumped
//    resourceVersion would split every pod's FailedScheduling series in two.
//  - the note is part of the key: upstream folds repeats with a new note into the old series, so
//    the Event keeps showing the first failure's message after the cause changed (say from
//    "Insufficient cpu" to an untolerated taint). A changed note starts a new Event instead; the
//    per-pod filter bounds how many.
// The cache keeps no key string: its index holds this tuple's hash, and a lookup compares the
// cached Event's own fields (a key beside each Event was a fifth of the cache's memory).
struct SeriesId {
  const api::ObjectReference& object;
  std::string_view type;
  std::string_view reason;
  std::string_view action;
  std::string_view note;

  size_t Hash() const {
    size_t hash = 0;
    for (const std::string_view field :
         {std::string_view(object.kind), std::string_view(object.namespace_),
          std::string_view(object.name), std::string_view(object.uid), type, reason, action,
          note}) {
      // The length goes in too, so moving text between neighbouring fields changes the hash.
      hash = (hash ^ std::hash<std::string_view>{}(field)) * 0x100000001b3ULL + field.size();
    }
    return hash;
  }
};

// A token bucket that starts full. Not thread-safe: the recorder's lock guards it.
class TokenBucket {
 public:
  TokenBucket(double burst, MonoTime now) : tokens_(burst), last_(now) {}

  void Refill(double qps, double burst, MonoTime now) {
    if (now <= last_) return;
    tokens_ = std::min(burst, tokens_ + std::chrono::duration<double>(now - last_).count() * qps);
    last_ = now;
  }
  // A rounding error short of a whole token still counts as one.
  bool Ready() const { return tokens_ >= 1 - 1e-9; }
  void Take() { tokens_ -= 1; }
  bool Full(double burst) const { return tokens_ >= burst - 1e-9; }

 private:
  double tokens_;
  MonoTime last_;
};

// Items in most-recently-used order, indexed by a hash of what identifies each (its `hash`
// member). The index stores no key: a lookup passes the hash and a predicate that recognises the
// item, and hashes that collide only cost a comparison. List iterators stay valid across splices,
// so the index never needs fixing when the order changes.
template <typename T>
class LruMap {
 public:
  using Iterator = typename std::list<T>::iterator;

  // Marks the item most recently used.
  template <typename Matches>
  T* Find(size_t hash, const Matches& matches) {
    const Iterator it = Locate(hash, matches);
    if (it == items_.end()) return nullptr;
    items_.splice(items_.begin(), items_, it);
    return &*it;
  }
  // Leaves the order alone.
  template <typename Matches>
  T* Peek(size_t hash, const Matches& matches) {
    const Iterator it = Locate(hash, matches);
    return it == items_.end() ? nullptr : &*it;
  }
  // No present item may be one `item` is taken for.
  T& Insert(T item) {
    items_.push_front(std::move(item));
    index_.emplace(items_.front().hash, items_.begin());
    return items_.front();
  }
  Iterator Erase(Iterator it) {
    auto [first, last] = index_.equal_range(it->hash);
    for (; first != last; ++first) {
      if (first->second == it) {
        index_.erase(first);
        break;
      }
    }
    return items_.erase(it);
  }
  size_t size() const { return items_.size(); }
  Iterator begin() { return items_.begin(); }
  Iterator end() { return items_.end(); }

 private:
  template <typename Matches>
  Iterator Locate(size_t hash, const Matches& matches) {
    auto [first, last] = index_.equal_range(hash);
    for (; first != last; ++first) {
      if (matches(*first->second)) return first->second;
    }
    return items_.end();
  }

  std::list<T> items_;
  std::unordered_multimap<size_t, Iterator> index_;
};

// What is sent about one Event; immutable once built, shared by the cache and queued writes. Its
// eleven texts are kept end to end in one string: held as eleven std::strings, an Event took
// about twice the memory (the struct, and a heap block for each text past the short-string
// buffer), and the cache holds up to 4,096 of them.
class EventData {
 public:
  EventData(std::string_view name, const api::ObjectReference& regarding, std::string_view type,
            std::string_view reason, std::string_view action, std::string_view note,
            WallTime event_time)
      : event_time_(event_time) {
    const std::array<std::string_view, kFields> fields = {name,
                                                          regarding.api_version,
                                                          regarding.kind,
                                                          regarding.namespace_,
                                                          regarding.name,
                                                          regarding.uid,
                                                          regarding.resource_version,
                                                          type,
                                                          reason,
                                                          action,
                                                          note};
    size_t total = 0;
    for (const std::string_view field : fields) total += field.size();
    text_.reserve(total);
    for (size_t i = 0; i < kFields; i++) {
      text_ += fields[i];
      end_[i] = static_cast<uint32_t>(text_.size());
    }
  }

  std::string_view name() const { return Field(0); }
  std::string_view api_version() const { return Field(1); }
  std::string_view kind() const { return Field(2); }
  std::string_view namespace_() const { return Field(3); }
  std::string_view regarding_name() const { return Field(4); }
  std::string_view uid() const { return Field(5); }
  std::string_view resource_version() const { return Field(6); }
  std::string_view type() const { return Field(7); }
  std::string_view reason() const { return Field(8); }
  std::string_view action() const { return Field(9); }
  std::string_view note() const { return Field(10); }
  WallTime event_time() const { return event_time_; }

 private:
  static constexpr size_t kFields = 11;

  std::string_view Field(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : end_[i - 1];
    return std::string_view(text_).substr(begin, end_[i] - begin);
  }

  // Every field is bounded well below 4 GiB: names by the apiserver's validation, the note by
  // kMaxNoteLength.
  std::string text_;
  std::array<uint32_t, kFields> end_{};
  WallTime event_time_;
};

// Whether `event` belongs to the series `id` names.
bool InSeries(const EventData& event, const SeriesId& id) {
  return event.uid() == id.object.uid && event.regarding_name() == id.object.name &&
         event.namespace_() == id.object.namespace_ && event.kind() == id.object.kind &&
         event.note() == id.note && event.reason() == id.reason && event.type() == id.type &&
         event.action() == id.action;
}

struct CachedEvent {
  // SeriesId::Hash of the Event's series.
  size_t hash = 0;
  std::shared_ptr<const EventData> event;
  // Occurrences so far. Invariant: acked <= queued <= count; count >= 1.
  int32_t count = 1;
  // The count of the last write handed to the sender, and of the last one the apiserver took.
  // Both zero: the Event was never created (its create is waiting for a token, or failed).
  int32_t queued = 1;
  int32_t acked = 0;
  MonoTime last_observed;
  WallTime last_observed_wall;
  MonoTime last_write;
  // A first occurrence the global bucket refused: cached unsent, and written by maintenance
  // before any new event takes a token.
  bool waiting_for_token = false;
  // When an Event whose create failed is tried again.
  MonoTime retry_at;

  // An occurrence not yet handed to the sender: a series' latest count, or a create that has to
  // be sent (again).
  bool Dirty() const { return count > queued; }
};

bool IsWarning(const CachedEvent& cached) { return cached.event->type() == "Warning"; }

struct ObjectBucket {
  size_t hash = 0;
  std::string key;
  TokenBucket bucket;
};

// One write: a create when count is 1, else a series update (a create with the series when the
// Event is gone).
struct Write {
  uint64_t seq = 0;
  // The cached Event's hash, to find it again when the write is answered.
  size_t hash = 0;
  std::shared_ptr<const EventData> event;
  int32_t count = 1;
  WallTime last_observed;
};

}  // namespace

class ApiEventRecorder::Impl {
 public:
  Impl(std::shared_ptr<client::Client> client, std::string controller, std::string instance,
       RecorderOptions options)
      : client_(std::move(client)),
        controller_(std::move(controller)),
        instance_(std::move(instance)),
        options_(std::move(options)),
        clock_(options_.clock ? options_.clock : RealClock()),
        global_(GlobalBurst(), clock_->Monotonic()) {
    sender_ = std::thread([this] { Run(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    sender_.join();
  }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void Record(const api::ObjectReference& object, const std::string& type,
              const std::string& reason, const std::string& action, const std::string& full_note) {
    const std::string_view note = TruncateNote(full_note);
    const SeriesId id{object, type, reason, action, note};
    const size_t hash = id.Hash();
    const MonoTime now = clock_->Monotonic();
    const WallTime wall = clock_->Wall();

    std::lock_guard lock(mu_);
    if (CachedEvent* cached =
            events_.Find(hash, [&](const CachedEvent& c) { return InSeries(*c.event, id); })) {
      if (cached->count < std::numeric_limits<int32_t>::max()) cached->count++;
      cached->last_observed = now;
      cached->last_observed_wall = wall;
      // Upstream writes the second occurrence at once so the Event shows it is repeating. When
      // the limits refuse, nothing is lost: the series stays dirty and maintenance writes it.
      if (cached->count == 2 && cached->queued < 2 && !cached->waiting_for_token && waiting_ == 0 &&
          queue_.size() < options_.backlog && AdmitLocked(object, now)) {
        EnqueueLocked(*cached, now);
      }
      return;
    }
    if (queue_.size() >= options_.backlog) {
      dropped_backlog_++;
      return;
    }
    // Events already waiting for a token go first, so a storm of new ones cannot starve them.
    const bool must_wait = waiting_ > 0 || !GlobalReadyLocked(now);
    // At max_waiting_events a Warning takes the place of the oldest waiting Normal event; any
    // other new event is dropped. The place is taken only once the per-pod filter let it through.
    const bool waiting_full =
        must_wait && options_.max_waiting_events > 0 && waiting_ >= options_.max_waiting_events;
    if (waiting_full && (type != "Warning" || waiting_ == waiting_warnings_)) {
      dropped_backlog_++;
      return;
    }
    if (!AdmitObjectLocked(object, now)) {
      dropped_rate_limited_++;
      return;
    }
    if (waiting_full) DropOldestWaitingNormalLocked();
    // A token is taken only when none waits: the check above saw one ready at this same `now`.
    const bool deferred = must_wait || !AdmitGlobalLocked(now);
    auto data = std::make_shared<const EventData>(EventName(object.name, wall), object, type,
                                                  reason, action, note, wall);

    CachedEvent entry;
    entry.hash = hash;
    entry.event = std::move(data);
    entry.last_observed = now;
    entry.last_observed_wall = wall;
    CachedEvent& inserted = events_.Insert(std::move(entry));
    if (deferred) {
      inserted.queued = 0;
      inserted.waiting_for_token = true;
      waiting_++;
      if (IsWarning(inserted)) waiting_warnings_++;
      // The sender needs waking only to bring its next pass forward: once a pass is due within
      // a token wait it comes anyway. (Under a burst of bindings nearly every event is deferred,
      // and a wake-up each was a context switch per pod.)
      const bool wake = !starved_ && !token_pass_armed_;
      starved_ = true;
      if (wake) work_cv_.notify_one();
    } else {
      EnqueueLocked(inserted, now);
    }
    EvictLocked(now);
  }

  bool Flush(std::optional<std::chrono::milliseconds> timeout) {
    std::unique_lock lock(mu_);
    MaintainLocked(/*flush_all=*/true, /*walk_series=*/true);
    const uint64_t target = enqueued_seq_;
    auto done = [&] { return done_seq_ >= target; };
    if (!timeout) {
      idle_cv_.wait(lock, done);
      return true;
    }
    return idle_cv_.wait_for(lock, *timeout, done);
  }

  void Maintain() {
    std::lock_guard lock(mu_);
    MaintainLocked(/*flush_all=*/false, /*walk_series=*/true);
  }

  size_t cached_events() const {
    std::lock_guard lock(mu_);
    return events_.size();
  }

  std::atomic<uint64_t> dropped_rate_limited_{0};
  std::atomic<uint64_t> dropped_backlog_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> created_{0};
  std::atomic<uint64_t> series_patched_{0};

 private:
  // kFailed: the apiserver may take the write later (no answer, 5xx, 429); kRejected: it said
  // no (RBAC, validation).
  enum class Outcome { kCreated, kPatched, kFailed, kRejected };

  // As client::RateLimiter: a burst below one would refuse everything.
  double GlobalBurst() const { return std::max(1, options_.burst); }

  // "<pod>.<hex nanoseconds>", as upstream. Names are unique per recorder even when the clock
  // repeats a reading, and the prefix is cut so the name stays a valid 253-character subdomain.
  std::string EventName(const std::string& pod, WallTime wall) {
    const auto nanos = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count());
    last_name_nanos_ = std::max(nanos, last_name_nanos_ + 1);
    char suffix[24];
    const auto suffix_len = static_cast<size_t>(std::snprintf(
        suffix, sizeof(suffix), ".%llx", static_cast<unsigned long long>(last_name_nanos_)));
    constexpr size_t kMaxName = 253;
    std::string name = pod.substr(0, kMaxName - suffix_len);
    while (name.size() < pod.size() && !name.empty() &&
           (name.back() == '.' || name.back() == '-')) {
      name.pop_back();
    }
    return name + suffix;
  }

  // Charges a write about `object` to its per-object bucket and to the global bucket: both or
  // neither.
  bool AdmitLocked(const api::ObjectReference& object, MonoTime now) {
    if (!GlobalReadyLocked(now)) return false;
    if (!AdmitObjectLocked(object, now)) return false;
    if (options_.qps > 0) global_.Take();
    return true;
  }

  // Charges a write about `object` to its per-object bucket alone.
  bool AdmitObjectLocked(const api::ObjectReference& object, MonoTime now) {
    if (options_.per_object_burst > 0) {
      std::string object_key;
      object_key.reserve(object.kind.size() + object.namespace_.size() + object.name.size() +
                         object.uid.size() + 24);
      AppendKeyField(object_key, object.kind);
      AppendKeyField(object_key, object.namespace_);
      AppendKeyField(object_key, object.name);
      AppendKeyField(object_key, object.uid);
      const size_t hash = std::hash<std::string>{}(object_key);
      ObjectBucket* bucket =
          objects_.Find(hash, [&](const ObjectBucket& b) { return b.key == object_key; });
      if (bucket == nullptr) {
        bucket = &objects_.Insert(
            ObjectBucket{hash, std::move(object_key), TokenBucket(options_.per_object_burst, now)});
        // The new bucket is at the front, so this never evicts it.
        while (objects_.size() > std::max<size_t>(1, options_.max_tracked_objects)) {
          objects_.Erase(std::prev(objects_.end()));
        }
      }
      bucket->bucket.Refill(options_.per_object_qps, options_.per_object_burst, now);
      if (!bucket->bucket.Ready()) return false;
      bucket->bucket.Take();
    }
    return true;
  }

  // Whether the global bucket holds a token now, without taking it.
  bool GlobalReadyLocked(MonoTime now) {
    if (options_.qps <= 0) return true;
    global_.Refill(options_.qps, GlobalBurst(), now);
    return global_.Ready();
  }

  // Drops the least recently observed Normal event waiting for a token, counted in
  // dropped_backlog. Callers check that one waits (waiting_ > waiting_warnings_).
  void DropOldestWaitingNormalLocked() {
    for (auto it = events_.end(); it != events_.begin();) {
      --it;
      if (!it->waiting_for_token || IsWarning(*it)) continue;
      waiting_--;
      dropped_backlog_++;
      events_.Erase(it);
      return;
    }
  }

  // Series maintenance writes are bounded by the refresh period, so only the global bucket
  // paces them.
  bool AdmitGlobalLocked(MonoTime now) {
    if (!GlobalReadyLocked(now)) return false;
    if (options_.qps > 0) global_.Take();
    return true;
  }

  void EnqueueLocked(CachedEvent& cached, MonoTime now) {
    if (cached.waiting_for_token) {
      cached.waiting_for_token = false;
      waiting_--;
      if (IsWarning(cached)) waiting_warnings_--;
    }
    queue_.push_back(
        Write{++enqueued_seq_, cached.hash, cached.event, cached.count, cached.last_observed_wall});
    cached.queued = cached.count;
    cached.last_write = now;
    work_cv_.notify_one();
  }

  // Keeps the cache within max_cached_events by dropping the least recently observed entries,
  // writing their pending series count first when the limits allow.
  void EvictLocked(MonoTime now) {
    while (events_.size() > std::max<size_t>(1, options_.max_cached_events)) {
      auto oldest = std::prev(events_.end());
      if (oldest->Dirty() && queue_.size() < options_.backlog && AdmitGlobalLocked(now)) {
        EnqueueLocked(*oldest, now);
      }
      if (oldest->waiting_for_token) {
        waiting_--;
        if (IsWarning(*oldest)) waiting_warnings_--;
        dropped_rate_limited_++;
      }
      events_.Erase(oldest);
    }
  }

  // First the first occurrences waiting for a token, warnings before the rest: a pod left
  // Pending must get its FailedScheduling event even while a burst of Scheduled events waits.
  // Then series counts and creates to try again. Oldest observations first, so that when the
  // global bucket runs dry the longest-waiting are written and the rest follow on the next pass.
  // Returns whether a first occurrence is still waiting for a token.
  // `walk_series`: visit every cached series now rather than when the interval says so.
  bool MaintainLocked(bool flush_all, bool walk_series) {
    const MonoTime now = clock_->Monotonic();
    for (const bool warnings : {true, false}) {
      // Without this bound the warnings pass would walk the whole cache on every token wait
      // while only Normal events wait, as they do when a burst of pods is bound.
      const size_t& pending = warnings ? waiting_warnings_ : waiting_;
      for (auto it = events_.end(); pending > 0 && it != events_.begin();) {
        --it;
        if (!it->waiting_for_token || (warnings && !IsWarning(*it))) continue;
        if (queue_.size() >= options_.backlog || !AdmitGlobalLocked(now)) break;
        EnqueueLocked(*it, now);
      }
    }
    // The same holds for the walk over every cached series below: when no first occurrence
    // waits, passes come once per interval anyway, so series are refreshed, finished and retried
    // at that pace; token waits (10 a second under a burst of bindings) need not repeat it.
    const bool series_due =
        flush_all || walk_series || now - last_series_pass_ >= options_.maintenance_interval;
    if (series_due) last_series_pass_ = now;
    for (auto it = events_.end(); series_due && it != events_.begin();) {
      --it;
      if (it->waiting_for_token) continue;
      const bool finished = now - it->last_observed >= options_.series_finish_after;
      bool dirty = it->Dirty();
      // An Event never created is paced by retry_at alone, flushes included, so one the
      // apiserver keeps refusing is not sent again on every pass once its series is finished.
      const bool never_created = it->acked == 0 && it->queued == 0;
      const bool due = never_created ? now >= it->retry_at
                                     : flush_all || finished ||
                                           now - it->last_write >= options_.series_refresh_period;
      if (dirty && due) {
        if (queue_.size() < options_.backlog && AdmitGlobalLocked(now)) {
          EnqueueLocked(*it, now);
          dirty = false;
        }
      }
      // A finished series whose count could not be queued stays for the next pass.
      if (finished && !dirty) it = events_.Erase(it);
    }
    // A full bucket behaves exactly like a new one, so forgetting it changes nothing; and a
    // bucket refills in minutes, so sweeping on every token wait (each 1/qps while first
    // occurrences wait) would walk every tracked pod for nothing: once per interval is enough.
    if (flush_all || now - last_object_sweep_ >= options_.maintenance_interval) {
      last_object_sweep_ = now;
      for (auto it = objects_.begin(); it != objects_.end();) {
        it->bucket.Refill(options_.per_object_qps, options_.per_object_burst, now);
        it = it->bucket.Full(options_.per_object_burst) ? objects_.Erase(it) : std::next(it);
      }
    }
    return waiting_ > 0;
  }

  // How long until the global bucket holds another token, give or take: when a first occurrence
  // waits, maintenance runs again after this rather than after a whole interval.
  std::chrono::milliseconds TokenWait() const {
    const auto interval = options_.maintenance_interval;
    if (options_.qps <= 0) return interval;
    const auto wait = std::chrono::milliseconds(static_cast<int64_t>(1000 / options_.qps));
    return std::min(std::max(wait, std::chrono::milliseconds(10)), interval);
  }

  void Run() {
    const auto interval = options_.maintenance_interval;
    const bool periodic = interval > std::chrono::milliseconds::zero();
    auto next_pass = std::chrono::steady_clock::now() + interval;
    std::unique_lock lock(mu_);
    while (!stopping_) {
      if (periodic && starved_) {
        next_pass = std::min(next_pass, std::chrono::steady_clock::now() + TokenWait());
        token_pass_armed_ = true;
      }
      starved_ = false;
      if (periodic && std::chrono::steady_clock::now() >= next_pass) {
        const bool waiting = MaintainLocked(/*flush_all=*/false, /*walk_series=*/false);
        next_pass = std::chrono::steady_clock::now() + (waiting ? TokenWait() : interval);
        token_pass_armed_ = waiting;
      }
      if (queue_.empty()) {
        auto wake = [this] { return stopping_ || !queue_.empty() || starved_; };
        if (periodic) {
          work_cv_.wait_until(lock, next_pass, wake);
        } else {
          work_cv_.wait(lock, wake);
        }
        continue;
      }
      Write write = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      const Outcome outcome = Send(write);
      lock.lock();
      Acknowledge(write, outcome);
      done_seq_ = write.seq;
      idle_cv_.notify_all();
    }
    dropped_backlog_ += queue_.size();
    dropped_rate_limited_ += waiting_;
    queue_.clear();
    done_seq_ = enqueued_seq_;
    idle_cv_.notify_all();
  }

  // Runs on the sender thread without the lock.
  Outcome Send(const Write& write) {
    const EventData& event = *write.event;
    const std::string ns(event.namespace_());
    const std::string collection = client::EventsResource().Path(ns);
    try {
      if (write.count >= 2) {
        try {
          client_->Patch(client::EventsResource().Path(ns, std::string(event.name())),
                         {{"series",
                           {{"count", write.count},
                            {"lastObservedTime", util::FormatRfc3339Micro(write.last_observed)}}}},
                         client::PatchType::kMerge);
          series_patched_++;
          return Outcome::kPatched;
        } catch (const client::ApiError& e) {
          // The Event expired (TTL) or was deleted: create it again, series included.
          if (e.reason() != client::ErrorReason::kNotFound) throw;
        }
      }
      client_->Post(collection, EventJson(write));
      created_++;
      return Outcome::kCreated;
    } catch (const std::exception& e) {
      // The first failure is worth an operator's attention (RBAC, admission); a failing
      // apiserver would otherwise flood the log, so the rest only count.
      const bool first = failed_.fetch_add(1) == 0;
      spdlog::log(first ? spdlog::level::warn : spdlog::level::debug,
                  "event {} {} for {} {}/{} not recorded{}: {}", event.reason(), event.name(),
                  event.kind(), event.namespace_(), event.regarding_name(),
                  first ? " (further failures are only counted)" : "", e.what());
      const auto* api_error = dynamic_cast<const client::ApiError*>(&e);
      return api_error != nullptr && api_error->Transient() ? Outcome::kFailed : Outcome::kRejected;
    }
  }

  nlohmann::json EventJson(const Write& write) const {
    const EventData& event = *write.event;
    nlohmann::json json = {
        {"apiVersion", "events.k8s.io/v1"},
        {"kind", "Event"},
        {"metadata", {{"name", event.name()}, {"namespace", event.namespace_()}}},
        {"eventTime", util::FormatRfc3339Micro(event.event_time())},
        {"reportingController", controller_},
        {"reportingInstance", instance_},
        {"action", event.action()},
        {"reason", event.reason()},
        {"type", event.type()},
        {"note", event.note()},
        {"regarding",
         {{"apiVersion", event.api_version()},
          {"kind", event.kind()},
          {"namespace", event.namespace_()},
          {"name", event.regarding_name()},
          {"uid", event.uid()},
          {"resourceVersion", event.resource_version()}}}};
    if (write.count >= 2) {
      json["series"] = {{"count", write.count},
                        {"lastObservedTime", util::FormatRfc3339Micro(write.last_observed)}};
    }
    return json;
  }

  void Acknowledge(const Write& write, Outcome outcome) {
    CachedEvent* cached =
        events_.Peek(write.hash, [&](const CachedEvent& c) { return c.event == write.event; });
    // Evicted or finished meanwhile, and maybe replaced by a newer Event with the same key.
    if (cached == nullptr || cached->event != write.event) return;
    if (outcome == Outcome::kCreated || outcome == Outcome::kPatched) {
      cached->acked = std::max(cached->acked, write.count);
    } else if (cached->queued == write.count) {
      // Dirty again, so the next refresh retries it (re-creating the Event if it is missing). An
      // Event never created is tried again sooner when the apiserver may yet take it: a pod
      // left Pending would otherwise show no event until its next failure.
      cached->queued = cached->acked;
      if (cached->acked == 0) {
        cached->retry_at =
            clock_->Monotonic() + (outcome == Outcome::kFailed ? options_.maintenance_interval
                                                               : options_.series_refresh_period);
      }
    }
  }

  const std::shared_ptr<client::Client> client_;
  const std::string controller_;
  const std::string instance_;
  const RecorderOptions options_;
  const std::shared_ptr<const Clock> clock_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  LruMap<CachedEvent> events_;
  LruMap<ObjectBucket> objects_;
  TokenBucket global_;
  std::deque<Write> queue_;
  uint64_t enqueued_seq_ = 0;
  // Cached events with waiting_for_token set, and those of them whose type is Warning.
  size_t waiting_ = 0;
  size_t waiting_warnings_ = 0;
  // When MaintainLocked last swept objects_, and last walked events_ for series work.
  MonoTime last_object_sweep_{};
  MonoTime last_series_pass_{};
  // A first occurrence was deferred since the sender last looked: maintenance is due sooner.
  bool starved_ = false;
  // The sender's next pass is at most a token wait away (set and cleared by the sender).
  bool token_pass_armed_ = false;
  uint64_t done_seq_ = 0;
  uint64_t last_name_nanos_ = 0;
  bool stopping_ = false;
  // Signalled when a write is queued or on shutdown.
  std::condition_variable work_cv_;
  // Signalled when a write completed.
  std::condition_variable idle_cv_;
  std::thread sender_;
};

std::shared_ptr<const Clock> RealClock() {
  static const auto clock = std::make_shared<const SystemClock>();
  return clock;
}

std::string DefaultReportingInstance() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "berth-scheduler";
  return std::string("berth-scheduler-") + host;
}

ApiEventRecorder::ApiEventRecorder(std::shared_ptr<client::Client> client,
                                   std::string reporting_controller, std::string reporting_instance,
                                   RecorderOptions options)
    : impl_(std::make_unique<Impl>(std::move(client), std::move(reporting_controller),
                                   std::move(reporting_instance), std::move(options))) {}

ApiEventRecorder::~ApiEventRecorder() = default;

void ApiEventRecorder::Eventf(const api::Pod& regarding, const std::string& type,
                              const std::string& reason, const std::string& action,
                              const std::string& note) {
  impl_->Record({"v1", "Pod", regarding.meta.namespace_, regarding.meta.name, regarding.meta.uid,
                 regarding.meta.resource_version},
                type, reason, action, note);
}

void ApiEventRecorder::Eventf(const api::ObjectReference& regarding, const std::string& type,
                              const std::string& reason, const std::string& action,
                              const std::string& note) {
  impl_->Record(regarding, type, reason, action, note);
}

void ApiEventRecorder::Flush() { impl_->Flush(std::nullopt); }
bool ApiEventRecorder::Flush(std::chrono::milliseconds timeout) { return impl_->Flush(timeout); }
void ApiEventRecorder::Maintain() { impl_->Maintain(); }

uint64_t ApiEventRecorder::dropped_rate_limited() const {
  return impl_->dropped_rate_limited_.load();
}
uint64_t ApiEventRecorder::dropped_backlog() const { return impl_->dropped_backlog_.load(); }
uint64_t ApiEventRecorder::dropped() const { return dropped_rate_limited() + dropped_backlog(); }
uint64_t ApiEventRecorder::failed() const { return impl_->failed_.load(); }
uint64_t ApiEventRecorder::created() const { return impl_->created_.load(); }
uint64_t ApiEventRecorder::series_patched() const { return impl_->series_patched_.load(); }
size_t ApiEventRecorder::cached_events() const { return impl_->cached_events(); }

}  // namespace berth::events
