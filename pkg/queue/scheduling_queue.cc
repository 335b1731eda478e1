#include "pkg/queue/scheduling_queue.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/queue/events.h"

namespace berth::queue {
namespace {

using framework::ClusterEvent;
using framework::EventObjects;
using framework::QueuedPodInfo;
using framework::QueuedPodInfoPtr;

// Labels of the queue's own moves, for logs.
const std::string kUnscheduledPodAdd = "UnscheduledPodAdd";
const std::string kUnscheduledPodUpdate = "UnscheduledPodUpdate";
const std::string kScheduleAttemptFailure = "ScheduleAttemptFailure";
const std::string kBackoffComplete = "BackoffComplete";
const std::string kPopFromBackoffQ = "PopFromBackoffQ";
const ClusterEvent kForceActivate{framework::EventResource::kWildcard, framework::kAll,
                                  "ForceActivate"};

// PrioritySort: higher priority first, then the pod that has waited longer.
bool DefaultLess(const QueuedPodInfo& a, const QueuedPodInfo& b) {
  int32_t pa = a.pod().spec.priority;
  int32_t pb = b.pod().spec.priority;
  return pa > pb || (pa == pb && a.timestamp < b.timestamp);
}

bool HasRejectors(const QueuedPodInfo& pinfo) {
  return !pinfo.unschedulable_plugins.empty() || !pinfo.pending_plugins.empty();
}

bool IsRejector(const QueuedPodInfo& pinfo, const std::string& plugin) {
  return pinfo.unschedulable_plugins.count(plugin) != 0 || pinfo.pending_plugins.count(plugin) != 0;
}

}  // namespace

SchedulingQueue::SchedulingQueue(QueueOptions options, LessFn less, PreEnqueueFn pre_enqueue,
                                 QueueingHintMap hints, std::shared_ptr<util::Clock> clock)
    : options_(std::move(options)),
      less_(less ? std::move(less) : LessFn(DefaultLess)),
      pre_enqueue_(std::move(pre_enqueue)),
      hints_(std::move(hints)),
      clock_(clock ? std::move(clock) : std::make_shared<util::RealClock>()),
      active_q_([this](const QueuedPodInfo& a, const QueuedPodInfo& b) { return less_(a, b); }),
      backoff_q_([this](const QueuedPodInfo& a, const QueuedPodInfo& b) {
        return BackoffExpiry(a) < BackoffExpiry(b);
      }),
      error_backoff_q_([this](const QueuedPodInfo& a, const QueuedPodInfo& b) {
        return BackoffExpiry(a) < BackoffExpiry(b);
      }),
      owned_nominator_(options_.nominator ? nullptr : std::make_unique<Nominator>()),
      nominator_(options_.nominator ? options_.nominator : owned_nominator_.get()) {}

SchedulingQueue::~SchedulingQueue() { Close(); }

void SchedulingQueue::Run() {
  std::lock_guard lock(mu_);
  if (running_ || closed_) return;
  running_ = true;
  threads_.emplace_back(&SchedulingQueue::FlushLoop, this, options_.backoff_flush_period,
                        &SchedulingQueue::FlushBackoffQCompleted);
  threads_.emplace_back(&SchedulingQueue::FlushLoop, this, options_.unschedulable_flush_period,
                        &SchedulingQueue::FlushUnschedulablePodsLeftover);
}

void SchedulingQueue::Close() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    threads.swap(threads_);
  }
  pop_cv_.notify_all();
  stop_cv_.notify_all();
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
}

void SchedulingQueue::FlushLoop(std::chrono::milliseconds period,
                                void (SchedulingQueue::*flush)()) {
  std::unique_lock lock(mu_);
  while (!closed_) {
    if (stop_cv_.wait_for(lock, period, [this] { return closed_; })) return;
    lock.unlock();
    (this->*flush)();
    lock.lock();
  }
}

std::chrono::milliseconds SchedulingQueue::BackoffDuration(int attempts) const {
  if (attempts <= 0) return std::chrono::milliseconds(0);
  std::chrono::milliseconds d = options_.initial_backoff;
  for (int i = 1; i < attempts; ++i) {
    // Compared before doubling so that a large attempt count cannot overflow.
    if (d > options_.max_backoff - d) return options_.max_backoff;
    d += d;
  }
  return std::min(d, options_.max_backoff);
}

util::Clock::TimePoint SchedulingQueue::BackoffExpiry(const QueuedPodInfo& pinfo) const {
  return pinfo.timestamp + BackoffDuration(pinfo.attempts);
}

bool SchedulingQueue::IsBackingOff(const QueuedPodInfo& pinfo) const {
  return BackoffExpiry(pinfo) > clock_->Now();
}

QueuedPodInfoPtr SchedulingQueue::NewQueuedPodInfo(api::PodPtr pod) const {
  auto pinfo = std::make_shared<QueuedPodInfo>();
  pinfo->pod_info = std::make_shared<const framework::PodInfo>(std::move(pod));
  pinfo->timestamp = clock_->Now();
  return pinfo;
}

const char* SchedulingQueue::WhereName(Where where) {
  switch (where) {
    case Where::kActive:
      return "activeQ";
    case Where::kBackoff:
      return "backoffQ";
    case Where::kUnschedulable:
      return "unschedulable pool";
  }
  return "?";
}

// ---- Informer events ----

void SchedulingQueue::Add(api::PodPtr pod) {
  std::lock_guard lock(mu_);
  AddLocked(std::move(pod));
}

void SchedulingQueue::AddLocked(api::PodPtr pod) {
  const std::string& uid = pod->meta.uid;
  // A repeated add (a relist, a resync) must not reset the pod's attempts and backoff.
  api::PodPtr known;
  if (auto p = active_q_.Get(uid)) {
    known = p->pod_info->pod;
  } else if (auto b = GetFromBackoff(uid)) {
    known = b->pod_info->pod;
  } else if (auto it = unschedulable_.find(uid); it != unschedulable_.end()) {
    known = it->second->pod_info->pod;
  } else if (auto f = in_flight_pods_.find(uid); f != in_flight_pods_.end()) {
    known = f->second.latest;
  }
  if (known) {
    UpdateLocked(known, std::move(pod));
    return;
  }
  QueuedPodInfoPtr pinfo = NewQueuedPodInfo(std::move(pod));
  if (MoveToActiveQ(pinfo, kUnscheduledPodAdd)) pop_cv_.notify_all();
}

void SchedulingQueue::Update(const api::PodPtr& old_pod, api::PodPtr new_pod) {
  std::lock_guard lock(mu_);
  UpdateLocked(old_pod, std::move(new_pod));
}

void SchedulingQueue::UpdateLocked(const api::PodPtr& old_pod, api::PodPtr new_pod) {
  const std::string uid = new_pod->meta.uid;
  auto new_info = std::make_shared<const framework::PodInfo>(new_pod);

  // In flight: nothing to move now; the change is replayed against the pod's rejectors if the
  // attempt fails, and the attempt's requeue uses this newest version.
  if (auto it = in_flight_pods_.find(uid); it != in_flight_pods_.end()) {
    api::PodPtr before = old_pod ? old_pod : it->second.latest;
    if (before && IsPodUpdated(*before, *new_pod)) {
      EventObjects objects;
      objects.old_pod = before;
      objects.new_pod = new_pod;
      for (auto& event : PodSchedulingPropertiesChange(*new_pod, *before)) {
        RecordInFlightEvent(event, objects, uid);
      }
    }
    it->second.latest = new_pod;
    nominator_->UpdateNominatedPod(before ? *before : *new_pod, new_info);
    return;
  }

  // activeQ / backoffQ: swap the pod in place; attempts and timestamps stay.
  for (PodHeap* heap : {&active_q_, &backoff_q_, &error_backoff_q_}) {
    if (QueuedPodInfoPtr pinfo = heap->Get(uid)) {
      api::PodPtr before = old_pod ? old_pod : pinfo->pod_info->pod;
      pinfo->pod_info = new_info;
      heap->AddOrUpdate(pinfo);  // The priority may have changed.
      nominator_->UpdateNominatedPod(*before, new_info);
      return;
    }
  }

  if (auto it = unschedulable_.find(uid); it != unschedulable_.end()) {
    QueuedPodInfoPtr pinfo = it->second;
    api::PodPtr before = old_pod ? old_pod : pinfo->pod_info->pod;
    pinfo->pod_info = new_info;
    nominator_->UpdateNominatedPod(*before, new_info);

    if (!pinfo->gating_plugin.empty()) {
      // PreEnqueue plugins judge the pod alone, so any change to it may lift the gate.
      if (!RunPreEnqueue(*pinfo)) return;
      unschedulable_.erase(it);
      Where where = Requeue(pinfo, Strategy::kAfterBackoff, kUnscheduledPodUpdate);
      spdlog::debug("pod {} ungated by an update; moved to {}", pinfo->pod().Key(),
                    WhereName(where));
      if (where == Where::kActive) pop_cv_.notify_all();
      return;
    }

    if (!IsPodUpdated(*before, *new_pod)) return;
    EventObjects objects;
    objects.old_pod = before;
    objects.new_pod = new_pod;
    for (const auto& event : PodSchedulingPropertiesChange(*new_pod, *before)) {
      Strategy strategy = IsPodWorthRequeuing(*pinfo, event, objects);
      if (strategy == Strategy::kSkip) continue;
      unschedulable_.erase(uid);
      Where where = Requeue(pinfo, strategy, EventLabel(event));
      spdlog::debug("pod {} moved to {} by its own update ({})", pinfo->pod().Key(),
                    WhereName(where), EventLabel(event));
      if (where == Where::kActive) pop_cv_.notify_all();
      return;
    }
    return;
  }

  QueuedPodInfoPtr pinfo = NewQueuedPodInfo(std::move(new_pod));
  if (MoveToActiveQ(pinfo, kUnscheduledPodUpdate)) pop_cv_.notify_all();
}

void SchedulingQueue::Delete(const api::Pod& pod) {
  std::lock_guard lock(mu_);
  nominator_->DeleteNominatedPodIfExists(pod);
  const std::string& uid = pod.meta.uid;
  active_q_.Delete(uid);
  DeleteFromBackoff(uid);
  unschedulable_.erase(uid);
  if (auto it = in_flight_pods_.find(uid); it != in_flight_pods_.end()) it->second.deleted = true;
}

// ---- The scheduling cycle ----

QueuedPodInfoPtr SchedulingQueue::Pop() {
  std::unique_lock lock(mu_);
  for (;;) {
    pop_cv_.wait(lock, [this] { return closed_ || !active_q_.empty() || !backoff_q_.empty(); });
    if (closed_) return nullptr;
    QueuedPodInfoPtr pinfo;
    if (!active_q_.empty()) {
      pinfo = active_q_.Pop();
    } else {
      pinfo = backoff_q_.Pop();
      Incoming("active", kPopFromBackoffQ);
    }
    const std::string& uid = pinfo->pod().meta.uid;
    if (in_flight_pods_.count(uid) != 0) {
      // The invariants make this unreachable; scheduling one pod twice at once would be worse
      // than dropping the duplicate.
      spdlog::error("pod {} popped while already in flight; discarding the duplicate",
                    pinfo->pod().Key());
      continue;
    }
    ++pinfo->attempts;
    ++scheduling_cycle_;
    auto marker = in_flight_events_.insert(in_flight_events_.end(), InFlightEntry{uid, {}, {}, {}});
    in_flight_pods_.emplace(uid, InFlightPod{marker, pinfo->pod_info->pod, false});
    return pinfo;
  }
}

void SchedulingQueue::Done(const std::string& pod_uid) {
  std::lock_guard lock(mu_);
  DoneLocked(pod_uid);
}

void SchedulingQueue::DoneLocked(const std::string& pod_uid) {
  auto it = in_flight_pods_.find(pod_uid);
  if (it == in_flight_pods_.end()) return;
  in_flight_events_.erase(it->second.marker);
  in_flight_pods_.erase(it);
  // Events before the oldest remaining marker happened before every in-flight pod was popped.
  while (!in_flight_events_.empty() && in_flight_events_.front().pod_uid.empty()) {
    in_flight_events_.pop_front();
  }
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): a copy on purpose (see the header).
void SchedulingQueue::AddUnschedulableIfNotPresent(QueuedPodInfoPtr pinfo, bool had_error) {
  std::lock_guard lock(mu_);
  const std::string uid = pinfo->pod().meta.uid;

  if (auto it = in_flight_pods_.find(uid); it != in_flight_pods_.end()) {
    if (it->second.deleted) {
      spdlog::debug("pod {} was deleted during its attempt; not requeued", pinfo->pod().Key());
      DoneLocked(uid);
      return;
    }
    if (it->second.latest && it->second.latest != pinfo->pod_info->pod) {
      pinfo->pod_info = std::make_shared<const framework::PodInfo>(it->second.latest);
    }
  }
  if (active_q_.Has(uid) || GetFromBackoff(uid) || unschedulable_.count(uid) != 0) {
    spdlog::error("pod {} is already queued; not requeued after its failed attempt",
                  pinfo->pod().Key());
    DoneLocked(uid);
    return;
  }

  if (had_error) {
    // An error names no plugin whose condition an event could satisfy: retry after backoff.
    pinfo->unschedulable_plugins.clear();
    pinfo->pending_plugins.clear();
  }
  pinfo->timestamp = clock_->Now();

  Where where = Requeue(pinfo, StrategyForInFlightPod(*pinfo), kScheduleAttemptFailure);
  spdlog::debug("pod {} moved to {} after a failed attempt (cycle {})", pinfo->pod().Key(),
                WhereName(where), scheduling_cycle_);
  DoneLocked(uid);
  if (where == Where::kActive) pop_cv_.notify_all();
}

// ---- Cluster events ----

void SchedulingQueue::MoveAllToActiveOrBackoffQueue(const ClusterEvent& event,
                                                    const EventObjects& objects) {
  std::lock_guard lock(mu_);
  if (!IsEventOfInterest(event)) return;
  // Every assigned pod's add or update is such an event, and the pool can hold thousands of
  // pods, so the pods no plugin registered for this event could move are left out by plugin
  // name alone before MovePodsLocked runs any hint.
  std::vector<QueuedPodInfoPtr> pods;
  if (IsWildcardEvent(event)) {
    pods.reserve(unschedulable_.size());
    for (const auto& [uid, pinfo] : unschedulable_) pods.push_back(pinfo);
  } else if (!unschedulable_.empty()) {
    // An empty pool (every node of the start-up list; a binding while no pod waits) needs no
    // interest map: only the pods in flight see the event.
    std::unordered_map<std::string_view, std::vector<std::string_view>> interested;
    for (const auto& [profile, entries] : hints_) {
      std::vector<std::string_view>& plugins = interested[profile];
      for (const auto& entry : entries) {
        if (entry.event.Matches(event)) plugins.push_back(entry.plugin);
      }
    }
    auto registered = [](const std::vector<std::string_view>& plugins, const std::string& name) {
      return std::find(plugins.begin(), plugins.end(), name) != plugins.end();
    };
    for (const auto& [uid, pinfo] : unschedulable_) {
      auto profile = interested.find(pinfo->pod().spec.scheduler_name);
      bool candidate = profile == interested.end() || !HasRejectors(*pinfo);
      if (!candidate && !pinfo->gating_plugin.empty()) {
        candidate = registered(profile->second, pinfo->gating_plugin);
      }
      for (const std::string& plugin : pinfo->unschedulable_plugins) {
        if (candidate) break;
        candidate = registered(profile->second, plugin);
      }
      for (const std::string& plugin : pinfo->pending_plugins) {
        if (candidate) break;
        candidate = registered(profile->second, plugin);
      }
      if (candidate) pods.push_back(pinfo);
    }
  }
  if (MovePodsLocked(pods, event, objects)) pop_cv_.notify_all();
}

bool SchedulingQueue::MovePodsLocked(const std::vector<QueuedPodInfoPtr>& pods,
                                     const ClusterEvent& event, const EventObjects& objects) {
  if (!IsEventOfInterest(event)) return false;
  std::string label;  // Built for the first pod that moves: most events move none.
  bool activated = false;
  for (const QueuedPodInfoPtr& pinfo : pods) {
    if (!pinfo->gating_plugin.empty() && !GatingPluginRegistered(*pinfo, event)) continue;
    Strategy strategy = IsPodWorthRequeuing(*pinfo, event, objects);
    if (strategy == Strategy::kSkip) continue;
    if (label.empty()) label = EventLabel(event);
    unschedulable_.erase(pinfo->pod().meta.uid);
    Where where = Requeue(pinfo, strategy, label);
    spdlog::debug("pod {} moved to {} by {}", pinfo->pod().Key(), WhereName(where), label);
    if (where == Where::kActive) activated = true;
  }
  // Pods in flight see the event when they come back.
  RecordInFlightEvent(event, objects, "");
  return activated;
}

void SchedulingQueue::Activate(const std::vector<std::string>& pod_uids) {
  std::lock_guard lock(mu_);
  bool activated = false;
  for (const std::string& uid : pod_uids) {
    QueuedPodInfoPtr pinfo;
    if (auto it = unschedulable_.find(uid); it != unschedulable_.end()) {
      pinfo = it->second;
    } else {
      pinfo = GetFromBackoff(uid);
    }
    if (pinfo) {
      if (MoveToActiveQ(std::move(pinfo), kForceActivate.label)) activated = true;
    } else if (auto it = in_flight_pods_.find(uid); it != in_flight_pods_.end()) {
      EventObjects objects;
      objects.new_pod = it->second.latest;
      RecordInFlightEvent(kForceActivate, objects, uid);
    }
  }
  if (activated) pop_cv_.notify_all();
}

void SchedulingQueue::RecordInFlightEvent(const ClusterEvent& event, const EventObjects& objects,
                                          std::string target_uid) {
  if (in_flight_pods_.empty()) return;
  in_flight_events_.push_back(InFlightEntry{"", event, objects, std::move(target_uid)});
}

bool SchedulingQueue::IsEventOfInterest(const ClusterEvent& event) const {
  if (IsWildcardEvent(event)) return true;
  for (const auto& [profile, entries] : hints_) {
    for (const auto& entry : entries) {
      if (entry.event.Matches(event)) return true;
    }
  }
  return false;
}

bool SchedulingQueue::GatingPluginRegistered(const QueuedPodInfo& pinfo,
                                             const ClusterEvent& event) const {
  auto profile = hints_.find(pinfo.pod().spec.scheduler_name);
  if (profile == hints_.end()) return false;
  for (const auto& entry : profile->second) {
    if (entry.plugin == pinfo.gating_plugin && entry.event.Matches(event)) return true;
  }
  return false;
}

SchedulingQueue::Strategy SchedulingQueue::IsPodWorthRequeuing(const QueuedPodInfo& pinfo,
                                                               const ClusterEvent& event,
                                                               const EventObjects& objects) const {
  // Rejected for no plugin's reason (an error): any event is a reason to retry.
  if (!HasRejectors(pinfo)) return Strategy::kAfterBackoff;

  if (IsWildcardEvent(event)) {
    // A wildcard carrying a pod is aimed at that pod only.
    if (objects.new_pod && objects.new_pod->meta.uid != pinfo.pod().meta.uid) {
      return Strategy::kSkip;
    }
    return Strategy::kAfterBackoff;
  }

  auto profile = hints_.find(pinfo.pod().spec.scheduler_name);
  if (profile == hints_.end()) {
    spdlog::error("no queueing hints registered for profile {} (pod {}); requeuing",
                  pinfo.pod().spec.scheduler_name, pinfo.pod().Key());
    return Strategy::kAfterBackoff;
  }

  Strategy strategy = Strategy::kSkip;
  for (const auto& entry : profile->second) {
    if (!entry.event.Matches(event) || !IsRejector(pinfo, entry.plugin)) continue;
    framework::QueueingHint hint = framework::QueueingHint::kQueue;
    if (entry.hint) {
      try {
        hint = entry.hint(pinfo.pod(), objects);
      } catch (const std::exception& e) {
        // A failing hint must not strand the pod in the pool.
        spdlog::error("queueing hint of {} failed for pod {} on {}: {}; requeuing", entry.plugin,
                      pinfo.pod().Key(), EventLabel(event), e.what());
      } catch (...) {
        spdlog::error("queueing hint of {} failed for pod {} on {}; requeuing", entry.plugin,
                      pinfo.pod().Key(), EventLabel(event));
      }
    }
    if (hint == framework::QueueingHint::kSkip) continue;
    // A Pending plugin waits for something other than the node, not a sign the pod does not
    // fit: once that arrives there is no point in penalising the pod with backoff.
    if (pinfo.pending_plugins.count(entry.plugin) != 0) return Strategy::kImmediately;
    // Only a Pending plugin could still upgrade the answer to kImmediately.
    if (pinfo.pending_plugins.empty()) return Strategy::kAfterBackoff;
    strategy = Strategy::kAfterBackoff;
  }
  return strategy;
}

SchedulingQueue::Strategy SchedulingQueue::StrategyForInFlightPod(
    const QueuedPodInfo& pinfo) const {
  if (!HasRejectors(pinfo)) return Strategy::kAfterBackoff;
  const std::string& uid = pinfo.pod().meta.uid;
  auto it = in_flight_pods_.find(uid);
  if (it == in_flight_pods_.end()) {
    // Not popped through this queue (or the queue was closed): the events it may have missed
    // are unknown, so retry rather than risk waiting forever.
    spdlog::warn("pod {} came back without being in flight; requeuing after backoff",
                 pinfo.pod().Key());
    return Strategy::kAfterBackoff;
  }
  Strategy strategy = Strategy::kSkip;
  for (auto e = std::next(it->second.marker); e != in_flight_events_.end(); ++e) {
    if (!e->pod_uid.empty()) continue;                             // Another pod's marker.
    if (!e->target_uid.empty() && e->target_uid != uid) continue;  // Another pod's own update.
    switch (IsPodWorthRequeuing(pinfo, e->event, e->objects)) {
      case Strategy::kSkip:
        break;
      case Strategy::kImmediately:
        return Strategy::kImmediately;
      case Strategy::kAfterBackoff:
        if (pinfo.pending_plugins.empty()) return Strategy::kAfterBackoff;
        strategy = Strategy::kAfterBackoff;
        break;
    }
  }
  return strategy;
}

// ---- Moving between structures ----

bool SchedulingQueue::RunPreEnqueue(QueuedPodInfo& pinfo) const {
  if (!pre_enqueue_) {
    pinfo.gating_plugin.clear();
    return true;
  }
  framework::Status status;
  try {
    status = pre_enqueue_(pinfo.pod());
  } catch (const std::exception& e) {
    status = framework::Status::Error(e.what());
  } catch (...) {
    status = framework::Status::Error("PreEnqueue threw");
  }
  if (status.IsSuccess()) {
    pinfo.gating_plugin.clear();
    return true;
  }
  // Gating needs a name: it selects the events that may lift the gate.
  std::string plugin = status.plugin().empty() ? "PreEnqueue" : status.plugin();
  if (status.code() == framework::Code::kError) {
    spdlog::error("PreEnqueue plugin {} failed for pod {}: {}", plugin, pinfo.pod().Key(),
                  status.Message());
  } else {
    spdlog::debug("pod {} gated by {}: {}", pinfo.pod().Key(), plugin, status.Message());
  }
  pinfo.unschedulable_plugins.insert(plugin);
  pinfo.gating_plugin = std::move(plugin);
  return false;
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): a copy on purpose (see the header).
bool SchedulingQueue::MoveToActiveQ(QueuedPodInfoPtr pinfo, const std::string& event) {
  const std::string& uid = pinfo->pod().meta.uid;
  if (!RunPreEnqueue(*pinfo)) {
    active_q_.Delete(uid);
    DeleteFromBackoff(uid);
    unschedulable_[uid] = pinfo;
    Incoming("gated", event);
    return false;
  }
  Incoming("active", event);
  if (!pinfo->initial_attempt_set) {
    pinfo->initial_attempt_timestamp = clock_->Now();
    pinfo->initial_attempt_set = true;
  }
  unschedulable_.erase(uid);
  DeleteFromBackoff(uid);
  active_q_.AddOrUpdate(pinfo);
  // A pod that arrives with status.nominatedNodeName (e.g. after a scheduler restart) keeps
  // its claim on that node.
  if (event == kUnscheduledPodAdd || event == kUnscheduledPodUpdate) {
    nominator_->AddNominatedPod(pinfo->pod_info);
  }
  return true;
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): a copy on purpose (see the header).
void SchedulingQueue::MoveToBackoffQ(QueuedPodInfoPtr pinfo) {
  unschedulable_.erase(pinfo->pod().meta.uid);
  if (!HasRejectors(*pinfo)) {
    error_backoff_q_.AddOrUpdate(pinfo);
    return;
  }
  backoff_q_.AddOrUpdate(pinfo);
  pop_cv_.notify_all();
}

QueuedPodInfoPtr SchedulingQueue::GetFromBackoff(const std::string& uid) const {
  if (QueuedPodInfoPtr pinfo = backoff_q_.Get(uid)) return pinfo;
  return error_backoff_q_.Get(uid);
}

void SchedulingQueue::DeleteFromBackoff(const std::string& uid) {
  backoff_q_.Delete(uid);
  error_backoff_q_.Delete(uid);
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): a copy on purpose (see the header).
SchedulingQueue::Where SchedulingQueue::Requeue(QueuedPodInfoPtr pinfo, Strategy strategy,
                                                const std::string& event) {
  const std::string& uid = pinfo->pod().meta.uid;
  if (strategy == Strategy::kSkip) {
    unschedulable_[uid] = pinfo;
    Incoming("unschedulable", event);
    return Where::kUnschedulable;
  }
  if (strategy == Strategy::kAfterBackoff && IsBackingOff(*pinfo)) {
    // Pop may take the pod from backoffQ without going through activeQ: its PreEnqueue plugins
    // admit it on the way in, and a gated pod stays in the pool until they do.
    if (!RunPreEnqueue(*pinfo)) {
      unschedulable_[uid] = pinfo;
      Incoming("gated", event);
      return Where::kUnschedulable;
    }
    MoveToBackoffQ(pinfo);
    Incoming("backoff", event);
    return Where::kBackoff;
  }
  return MoveToActiveQ(pinfo, event) ? Where::kActive : Where::kUnschedulable;
}

// ---- Flushes ----

void SchedulingQueue::FlushBackoffQCompleted() {
  std::lock_guard lock(mu_);
  bool activated = false;
  for (PodHeap* heap : {&backoff_q_, &error_backoff_q_}) {
    while (!heap->empty() && !IsBackingOff(*heap->Peek())) {
      QueuedPodInfoPtr pinfo = heap->Pop();
      if (MoveToActiveQ(pinfo, kBackoffComplete)) activated = true;
    }
  }
  if (activated) pop_cv_.notify_all();
}

void SchedulingQueue::FlushUnschedulablePodsLeftover() {
  std::lock_guard lock(mu_);
  const util::Clock::TimePoint now = clock_->Now();
  std::vector<QueuedPodInfoPtr> pods;
  for (const auto& [uid, pinfo] : unschedulable_) {
    if (now - pinfo->timestamp > options_.max_in_unschedulable) pods.push_back(pinfo);
  }
  if (pods.empty()) return;
  if (MovePodsLocked(pods, kEventUnschedulableTimeout, EventObjects{})) pop_cv_.notify_all();
}

// ---- Introspection ----

SchedulingQueue::Counts SchedulingQueue::PendingPods() const {
  std::lock_guard lock(mu_);
  Counts counts;
  counts.active = active_q_.size();
  counts.backoff = backoff_q_.size() + error_backoff_q_.size();
  for (const auto& [uid, pinfo] : unschedulable_) {
    if (pinfo->gating_plugin.empty()) {
      ++counts.unschedulable;
    } else {
      ++counts.gated;
    }
  }
  return counts;
}

std::vector<QueuedPodInfoPtr> SchedulingQueue::UnschedulablePods() const {
  std::lock_guard lock(mu_);
  std::vector<QueuedPodInfoPtr> out;
  out.reserve(unschedulable_.size());
  for (const auto& [uid, pinfo] : unschedulable_) out.push_back(pinfo);
  return out;
}

std::vector<QueuedPodInfoPtr> SchedulingQueue::PodsInActiveQ() const {
  std::lock_guard lock(mu_);
  return active_q_.items();
}

std::vector<QueuedPodInfoPtr> SchedulingQueue::PodsInBackoffQ() const {
  std::lock_guard lock(mu_);
  std::vector<QueuedPodInfoPtr> out = backoff_q_.items();
  for (auto& pinfo : error_backoff_q_.items()) out.push_back(std::move(pinfo));
  return out;
}

std::vector<std::string> SchedulingQueue::InFlightPodUids() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  out.reserve(in_flight_pods_.size());
  for (const auto& [uid, pod] : in_flight_pods_) out.push_back(uid);
  return out;
}

size_t SchedulingQueue::InFlightEventCount() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& e : in_flight_events_) {
    if (e.pod_uid.empty()) ++n;
  }
  return n;
}

int64_t SchedulingQueue::SchedulingCycle() const {
  std::lock_guard lock(mu_);
  return scheduling_cycle_;
}

}  // namespace berth::queue
