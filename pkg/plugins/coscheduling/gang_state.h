#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_GANG_STATE_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_GANG_STATE_H_

// What Coscheduling knows of each gang of its profile: the pods that join it (from the pod
// informer), the pods placed for it in the current attempt, its failures (queue order and
// backoff), and the work its background threads owe it (activations, statuses).

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/plugins/coscheduling/gang_source.h"
#include "pkg/plugins/coscheduling/topology_placement.h"

namespace berth::plugins::coscheduling {

using SteadyClock = std::chrono::steady_clock;

// A gang: the source that defines it and its namespace and name.
struct GangKey {
  const GangSource* source = nullptr;
  std::string namespace_;
  std::string name;

  // "namespace/name", as messages name it.
  std::string Display() const { return namespace_ + "/" + name; }
  auto operator<=>(const GangKey&) const = default;
};

// A GangKey whose strings live elsewhere (in a pod), for lookups that allocate nothing.
struct GangKeyView {
  const GangSource* source = nullptr;
  std::string_view namespace_;
  std::string_view name;
};

struct GangKeyLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    if (a.source != b.source) return std::less<const GangSource*>()(a.source, b.source);
    const int by_namespace = std::string_view(a.namespace_).compare(b.namespace_);
    if (by_namespace != 0) return by_namespace < 0;
    return std::string_view(a.name) < std::string_view(b.name);
  }
};
// A pod placed (assumed) for a gang and not yet seen bound.
struct Placement {
  std::string name;
  // Quorum reached: the pod may bind. Until then it waits at Permit (or is about to).
  bool allowed = false;
  SteadyClock::time_point since;
  std::chrono::milliseconds wait{0};
  // The node it was placed on.
  std::string node;
};

struct Gang {
  // Pods of the profile that join the gang and are not terminating, by uid: name and whether
  // bound.
  std::unordered_map<std::string, std::pair<std::string, bool>> members;
  int32_t bound = 0;
  std::unordered_map<std::string, Placement> assumed;
  // The spec as last read.
  int32_t min_member = 1;
  // The gang's creation on the steady clock, for the queue order.
  std::optional<SteadyClock::time_point> created;
  // Recent failed attempts, oldest first (at most kFailureHistory).
  std::deque<SteadyClock::time_point> failures;
  SteadyClock::time_point backoff_until{};
  // Pods PreFilter turned away during the backoff, activated when it ends.
  std::set<std::string> held;
  // When the first pod of the current attempt began waiting; unset while none waits.
  std::optional<SteadyClock::time_point> wait_started;
  std::optional<std::chrono::system_clock::time_point> schedule_start;
  // The last message of a failed attempt, for pods that arrive at Permit after it.
  std::string last_rejection;
  bool min_resources_refused = false;
  // Under a topology constraint: the domain of the current attempt and each pending pod's node,
  // from the simulation made before its first pod was placed. Dropped when the attempt fails.
  std::optional<TopologyPlan> plan;

  // Pods assumed or bound: what counts towards min_member.
  int32_t Placed() const { return static_cast<int32_t>(assumed.size()) + bound; }
  int32_t Waiting() const;
  bool Idle(SteadyClock::time_point now) const {
    return members.empty() && assumed.empty() && held.empty() && backoff_until <= now;
  }
};

// A waiting pod a rejection could not reach yet (its Permit had not parked it), retried shortly.
struct Orphan {
  GangKey gang;
  std::string uid;
  std::string message;
  SteadyClock::time_point retry_at;
  int tries = 0;
};

// Shared by the plugin and the informer handlers it registers, which may outlive it.
// Thread-safety: the sources are thread-safe; every member below `mu` is guarded by it. Lock order:
// the scheduling queue's lock, then mu, then informer stores'; nothing is called with mu held that
// takes the queue's.
class GangState {
 public:
  static constexpr size_t kFailureHistory = 16;

  // Owns the sources: the informer handlers that ask them may outlive the plugin.
  GangState(std::string profile, std::vector<std::unique_ptr<GangSource>> sources)
      : profile_(std::move(profile)),
        sources_(std::move(sources)),
        wall_to_steady_(SteadyClock::now().time_since_epoch() -
                        std::chrono::duration_cast<SteadyClock::duration>(
                            std::chrono::system_clock::now().time_since_epoch())) {}

  const std::vector<std::unique_ptr<GangSource>>& sources() const { return sources_; }

  // The gang `pod` joins (through the first source that names one), or false.
  bool ViewOf(const api::Pod& pod, GangKeyView* key) const;
  std::optional<GangKey> KeyOf(const api::Pod& pod) const;

  // Pod informer events. Only pods of the profile count.
  void OnPod(const api::PodPtr& old_pod, const api::PodPtr& new_pod);
  // A gang was added, deleted or its spec changed.
  void OnGangChange(const GangSource* source, const std::string& namespace_,
                    const std::string& name);

  // The time the queue orders a pod of `key` by when it entered the queue at `queued`: the gang's
  // creation or its latest failure before `queued`. Failures after `queued` do not count, so a
  // queued pod's position does not move (unless kFailureHistory more failures of its gang pass
  // while it stays queued).
  SteadyClock::time_point SortTime(const GangKeyView& key, SteadyClock::time_point queued);

  // Records a failed attempt: queue order, backoff, and the status to rewrite. Requires mu.
  void RecordFailureLocked(const GangKey& key, Gang& gang, SteadyClock::time_point now,
                           std::chrono::milliseconds backoff);
  // Uids of the gang's pods that wait for nothing but a retry: members neither bound nor placed.
  // Requires mu.
  static std::vector<std::string> PendingLocked(const Gang& gang);
  // Notes that the gang's status should be rewritten, waking the status writer when a batch
  // starts. Requires mu.
  void MarkDirtyLocked(const GangKey& key);
  // What the gang's status is written from. Requires mu.
  GangProgress ProgressLocked(const Gang& gang) const;

  std::mutex mu;
  // Signalled when work is queued below, or on stop.
  std::condition_variable wake;
  std::map<GangKey, Gang, GangKeyLess> gangs;
  std::set<GangKey> to_activate;
  std::map<GangKey, SteadyClock::time_point> backoff_ends;
  std::set<GangKey> dirty;
  std::optional<SteadyClock::time_point> dirty_since;
  std::vector<Orphan> orphans;
  bool stopping = false;

 private:
  bool Responsible(const api::Pod& pod) const {
    return pod.spec.scheduler_name == profile_ && !pod.IsTerminating();
  }
  // The min_member and creation of `key` as its source says; unchanged when it is absent.
  void ReadSpec(const GangKey& key, Gang& gang);
  // A wall-clock time on the steady clock, with one offset taken at construction: the same time
  // always converts to the same point, so a gang's place in the queue does not drift.
  SteadyClock::time_point ToSteady(std::chrono::system_clock::time_point t) const;

  const std::string profile_;
  const std::vector<std::unique_ptr<GangSource>> sources_;
  const SteadyClock::duration wall_to_steady_;
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_GANG_STATE_H_
