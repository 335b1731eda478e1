#ifndef BERTH_PKG_QUEUE_SCHEDULING_QUEUE_H_
#define BERTH_PKG_QUEUE_SCHEDULING_QUEUE_H_

// The scheduling queue (upstream PriorityQueue with SchedulerQueueingHints and
// SchedulerPopFromBackoffQ): pending pods live in exactly one of
//   activeQ      ordered by the QueueSort plugin; Pop takes its head;
//   backoffQ     pods waiting out their backoff, ordered by backoff expiry; those a plugin
//                rejected are popped before their backoff ends when activeQ is empty (the ones
//                that failed with an error are not), so an idle scheduler retries them at once;
//   unschedulable pool
//                pods rejected by plugins, waiting for a cluster event that one of the rejecting
//                plugins says may help (its QueueingHint returns kQueue), and pods held back by
//                a PreEnqueue plugin ("gated");
// or are in flight: popped and not yet Done. Events that arrive while a pod is in flight are
// kept and replayed against the pod's rejectors when it comes back, so no event is lost to the
// race between a scheduling cycle and the informers.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/types.h"
#include "pkg/queue/nominator.h"
#include "pkg/queue/pod_heap.h"
#include "pkg/util/clock.h"

namespace berth::queue {

// A plugin's registration for one event kind in one profile. An empty hint means "always
// queue".
struct QueueingHintEntry {
  std::string plugin;
  framework::ClusterEvent event;
  framework::QueueingHintFn hint;
};
// Profile (= schedulerName) -> its plugins' registrations.
using QueueingHintMap = std::unordered_map<std::string, std::vector<QueueingHintEntry>>;

// Runs the pod's profile's PreEnqueue plugins; a non-success Status names the plugin that gated
// the pod (Status::plugin()).
using PreEnqueueFn = std::function<framework::Status(const api::Pod&)>;

// The QueueSort plugin of the profiles (all profiles share one QueueSort, as upstream requires).
using LessFn =
    std::function<bool(const framework::QueuedPodInfo&, const framework::QueuedPodInfo&)>;

struct QueueOptions {
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{10000};
  // Safety net: a pod left in the unschedulable pool this long is retried whatever happened.
  std::chrono::milliseconds max_in_unschedulable{300000};
  std::chrono::milliseconds backoff_flush_period{1000};
  std::chrono::milliseconds unschedulable_flush_period{30000};
  // Called, with the queue's mutex held, each time a pod enters "active", "backoff",
  // "unschedulable" or "gated", with the event that moved it (scheduler_queue_incoming_pods_total).
  // Must be cheap and must not call back into the queue.
  std::function<void(const char* queue, const std::string& event)> on_incoming;
  // The nominator the queue keeps current, shared with the frameworks that filter with it; it
  // must outlive the queue. Null: the queue owns one of its own.
  Nominator* nominator = nullptr;
};

// Invariants (all under mu_):
//  - a pod (by uid) is in at most one of activeQ, backoffQ and the unschedulable pool, and a pod
//    in flight is in none of them;
//  - no gated pod (gating_plugin set) is in activeQ or backoffQ;
//  - in_flight_events_ holds, in arrival order, a marker per in-flight pod and the events
//    received after the oldest in-flight pod was popped; events older than every marker are
//    pruned, so the list is empty whenever nothing is in flight;
//  - the QueuedPodInfo objects in the three structures are owned by the queue; a popped one is
//    owned by the caller until it comes back through AddUnschedulableIfNotPresent.
// Thread-safety: every public method may be called from any thread. One mutex guards all state;
// Pop blocks on a condition variable tied to it. QueueingHint, PreEnqueue and Less functions are
// called with the mutex held (they are cheap and side-effect free by contract, and must not call
// back into the queue). Lock order: mu_, then the nominator's own mutex.
class SchedulingQueue {
 public:
  struct Counts {
    size_t active = 0;
    size_t backoff = 0;
    size_t unschedulable = 0;  // In the pool because plugins rejected them.
    size_t gated = 0;          // In the pool because a PreEnqueue plugin holds them back.
  };

  SchedulingQueue(QueueOptions options, LessFn less, PreEnqueueFn pre_enqueue,
                  QueueingHintMap hints, std::shared_ptr<util::Clock> clock);
  ~SchedulingQueue();
  SchedulingQueue(const SchedulingQueue&) = delete;
  SchedulingQueue& operator=(const SchedulingQueue&) = delete;

  // Starts the flush threads: backoffQ -> activeQ every backoff_flush_period, and the
  // unschedulable-pool timeout every unschedulable_flush_period. At most once; not after Close.
  void Run();
  // Stops and joins the flush threads and wakes Pop, which returns nullptr from then on.
  // Idempotent; the destructor calls it.
  void Close();

  // A new pending pod. A pod the queue already holds (or has in flight) is treated as Update.
  void Add(api::PodPtr pod);
  // A pending pod changed. old_pod may be null.
  void Update(const api::PodPtr& old_pod, api::PodPtr new_pod);
  // A pending pod is gone (deleted, or bound by someone else). A pod deleted while in flight is
  // not requeued by AddUnschedulableIfNotPresent.
  void Delete(const api::Pod& pod);

  // Blocks until activeQ has a pod or the queue is closed (nullptr). The pod is in flight until
  // Done; its attempts are incremented and the scheduling cycle advances.
  framework::QueuedPodInfoPtr Pop();
  // The pod's scheduling attempt is over (bound, or requeued). Unknown uids are ignored.
  void Done(const std::string& pod_uid);

  // Requeues a pod whose attempt failed. The caller sets pinfo->unschedulable_plugins and
  // pending_plugins to the plugins that rejected it in this attempt. had_error (or no rejecting
  // plugin at all): retried after backoff. Otherwise it goes to backoffQ/activeQ if an event
  // received since it was popped is one its rejectors say may help, else to the unschedulable
  // pool. Calls Done for the pod. The pod object is refreshed to the latest version seen by
  // Update while it was in flight.
  void AddUnschedulableIfNotPresent(framework::QueuedPodInfoPtr pinfo, bool had_error);

  // A cluster event: moves the pool's pods that it may help (see class comment) to
  // backoffQ/activeQ, and records it for the pods in flight.
  void MoveAllToActiveOrBackoffQueue(const framework::ClusterEvent& event,
                                     const framework::EventObjects& objects);

  // Moves these pods (by uid) to activeQ at once, whatever their backoff, when they are in
  // backoffQ or the unschedulable pool; a gated pod runs PreEnqueue again and may stay gated. A pod
  // in flight is requeued, if its attempt fails, as for a ForceActivate event aimed at it: to
  // activeQ, or to backoffQ while its backoff runs. Unknown uids are ignored (upstream Activate).
  void Activate(const std::vector<std::string>& pod_uids);

  // Moves backoffQ pods whose backoff has expired to activeQ. Called by the flush thread; public
  // so tests can drive it with a fake clock.
  void FlushBackoffQCompleted();
  // Moves pods that stayed in the unschedulable pool longer than max_in_unschedulable (with the
  // kEventUnschedulableTimeout wildcard event). Called by the flush thread; public for tests.
  void FlushUnschedulablePodsLeftover();

  Counts PendingPods() const;
  // For tests and debugging: snapshots of the structures (activeQ and backoffQ in no particular
  // order).
  std::vector<framework::QueuedPodInfoPtr> UnschedulablePods() const;
  std::vector<framework::QueuedPodInfoPtr> PodsInActiveQ() const;
  std::vector<framework::QueuedPodInfoPtr> PodsInBackoffQ() const;
  std::vector<std::string> InFlightPodUids() const;
  // Number of events currently retained for in-flight pods.
  size_t InFlightEventCount() const;

  int64_t SchedulingCycle() const;

  // initial_backoff * 2^(attempts-1), capped at max_backoff; 0 for a pod never attempted.
  std::chrono::milliseconds BackoffDuration(int attempts) const;

  Nominator& nominator() { return *nominator_; }

 private:
  enum class Strategy { kSkip, kAfterBackoff, kImmediately };
  enum class Where { kActive, kBackoff, kUnschedulable };

  // One entry of the in-flight list: a pod marker (pod_uid set) or an event.
  struct InFlightEntry {
    std::string pod_uid;
    framework::ClusterEvent event;
    framework::EventObjects objects;
    // For events about one pod's own update: the only pod they may help.
    std::string target_uid;
  };
  using InFlightList = std::list<InFlightEntry>;
  struct InFlightPod {
    InFlightList::iterator marker;
    // The newest version seen by Update while the pod was in flight.
    api::PodPtr latest;
    bool deleted = false;
  };

  static const char* WhereName(Where where);
  void Incoming(const char* queue, const std::string& event) const {
    if (options_.on_incoming) options_.on_incoming(queue, event);
  }
  framework::QueuedPodInfoPtr NewQueuedPodInfo(api::PodPtr pod) const;
  util::Clock::TimePoint BackoffExpiry(const framework::QueuedPodInfo& pinfo) const;
  bool IsBackingOff(const framework::QueuedPodInfo& pinfo) const;

  // Everything below requires mu_ held. Pods are passed by value where the callee may erase
  // the container entry that owns them.
  void AddLocked(api::PodPtr pod);
  void UpdateLocked(const api::PodPtr& old_pod, api::PodPtr new_pod);
  // Runs PreEnqueue; sets or clears gating_plugin. True when the pod may enter activeQ.
  bool RunPreEnqueue(framework::QueuedPodInfo& pinfo) const;
  // MoveToActiveQ, MoveToBackoffQ, Requeue and AddUnschedulableIfNotPresent take the pointer by
  // value on purpose: callers pass entries of the queue's own maps, which these erase, and a
  // reference would dangle.
  // activeQ if PreEnqueue admits the pod (returns true), else the pool as gated.
  bool MoveToActiveQ(framework::QueuedPodInfoPtr pinfo, const std::string& event);
  // Into backoff_q_ (waking Pop) or, for a pod that failed with an error, error_backoff_q_.
  void MoveToBackoffQ(framework::QueuedPodInfoPtr pinfo);
  framework::QueuedPodInfoPtr GetFromBackoff(const std::string& uid) const;
  void DeleteFromBackoff(const std::string& uid);
  Where Requeue(framework::QueuedPodInfoPtr pinfo, Strategy strategy, const std::string& event);
  Strategy IsPodWorthRequeuing(const framework::QueuedPodInfo& pinfo,
                               const framework::ClusterEvent& event,
                               const framework::EventObjects& objects) const;
  Strategy StrategyForInFlightPod(const framework::QueuedPodInfo& pinfo) const;
  bool GatingPluginRegistered(const framework::QueuedPodInfo& pinfo,
                              const framework::ClusterEvent& event) const;
  bool IsEventOfInterest(const framework::ClusterEvent& event) const;
  // Returns whether a pod reached activeQ.
  bool MovePodsLocked(const std::vector<framework::QueuedPodInfoPtr>& pods,
                      const framework::ClusterEvent& event, const framework::EventObjects& objects);
  void RecordInFlightEvent(const framework::ClusterEvent& event,
                           const framework::EventObjects& objects, std::string target_uid);
  void DoneLocked(const std::string& pod_uid);
  void FlushLoop(std::chrono::milliseconds period, void (SchedulingQueue::*flush)());

  const QueueOptions options_;
  const LessFn less_;
  const PreEnqueueFn pre_enqueue_;
  const QueueingHintMap hints_;
  const std::shared_ptr<util::Clock> clock_;

  mutable std::mutex mu_;
  std::condition_variable pop_cv_;   // activeQ gained a pod, or closed_.
  std::condition_variable stop_cv_;  // closed_ (wakes the flush threads).
  bool closed_ = false;
  bool running_ = false;
  std::vector<std::thread> threads_;

  PodHeap active_q_;
  // backoffQ in two parts: pods rejected by plugins (Pop may take them early) and pods whose
  // attempt failed with an error (only the flush releases them), as upstream's.
  PodHeap backoff_q_;
  PodHeap error_backoff_q_;
  std::unordered_map<std::string, framework::QueuedPodInfoPtr> unschedulable_;  // uid -> pod
  InFlightList in_flight_events_;
  std::unordered_map<std::string, InFlightPod> in_flight_pods_;  // uid -> pod
  int64_t scheduling_cycle_ = 0;

  std::unique_ptr<Nominator> owned_nominator_;
  Nominator* nominator_;  // owned_nominator_ or QueueOptions::nominator.
};

}  // namespace berth::queue

#endif  // BERTH_PKG_QUEUE_SCHEDULING_QUEUE_H_
