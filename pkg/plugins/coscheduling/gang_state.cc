#include "pkg/plugins/coscheduling/gang_state.h"

#include <algorithm>
#include <utility>

namespace berth::plugins::coscheduling {

int32_t Gang::Waiting() const {
  int32_t waiting = 0;
  for (const auto& [uid, placement] : assumed) {
    if (!placement.allowed) waiting++;
  }
  return waiting;
}

bool GangState::ViewOf(const api::Pod& pod, GangKeyView* key) const {
  for (const auto& source : sources_) {
    std::string_view name = source->GangOf(pod);
    if (name.empty()) continue;
    *key = {source.get(), pod.meta.namespace_, name};
    return true;
  }
  return false;
}

std::optional<GangKey> GangState::KeyOf(const api::Pod& pod) const {
  GangKeyView view;
  if (!ViewOf(pod, &view)) return std::nullopt;
  return GangKey{view.source, std::string(view.namespace_), std::string(view.name)};
}

SteadyClock::time_point GangState::ToSteady(std::chrono::system_clock::time_point t) const {
  return SteadyClock::time_point(
      std::chrono::duration_cast<SteadyClock::duration>(t.time_since_epoch()) + wall_to_steady_);
}

void GangState::ReadSpec(const GangKey& key, Gang& gang) {
  GangSpec spec;
  std::string why;
  if (key.source->Get(key.namespace_, key.name, &spec, &why) != Lookup::kFound) return;
  gang.min_member = spec.min_member;
  gang.created = ToSteady(spec.created);
}

void GangState::OnPod(const api::PodPtr& old_pod, const api::PodPtr& new_pod) {
  std::optional<GangKey> old_key =
      old_pod && Responsible(*old_pod) ? KeyOf(*old_pod) : std::nullopt;
  std::optional<GangKey> new_key =
      new_pod && Responsible(*new_pod) ? KeyOf(*new_pod) : std::nullopt;
  // Most pods join no gang: they cost no lock.
  if (!old_key && !new_key) return;
  std::lock_guard lock(mu);
  const api::Pod& pod = new_pod ? *new_pod : *old_pod;
  const std::string& uid = pod.meta.uid;
  const auto now = SteadyClock::now();
  bool notify = false;
  if (old_key && old_key != new_key) {
    auto it = gangs.find(*old_key);
    if (it != gangs.end()) {
      Gang& gang = it->second;
      auto member = gang.members.find(uid);
      if (member != gang.members.end()) {
        if (member->second.second) gang.bound--;
        gang.members.erase(member);
      }
      // A pod still waiting is rejected and unreserved by the scheduler, which tells the gang;
      // one allowed to bind no longer needs tracking.
      if (auto placed = gang.assumed.find(uid);
          placed != gang.assumed.end() && placed->second.allowed) {
        gang.assumed.erase(placed);
      }
      MarkDirtyLocked(*old_key);
      if (gang.Idle(now)) gangs.erase(it);
    }
  }
  if (new_key) {
    auto [it, created] = gangs.try_emplace(*new_key);
    Gang& gang = it->second;
    if (created) ReadSpec(*new_key, gang);
    const bool bound = !new_pod->spec.node_name.empty();
    auto [member, added] = gang.members.try_emplace(uid, new_pod->meta.name, false);
    if (bound && !member->second.second) {
      member->second.second = true;
      gang.bound++;
      gang.assumed.erase(uid);
      MarkDirtyLocked(*new_key);
    }
    if (added) {
      MarkDirtyLocked(*new_key);
      // The pod that completes the gang brings back the ones turned away for being too few.
      if (!bound && static_cast<int32_t>(gang.members.size()) == gang.min_member) {
        to_activate.insert(*new_key);
        notify = true;
      }
    }
  }
  if (notify) wake.notify_all();
}

void GangState::OnGangChange(const GangSource* source, const std::string& namespace_,
                             const std::string& name) {
  const GangKey key{source, namespace_, name};
  std::lock_guard lock(mu);
  auto it = gangs.find(key);
  // A gang none of whose pods is this profile's gets its status from the profile that has them.
  if (it == gangs.end()) return;
  const int32_t before = it->second.min_member;
  ReadSpec(key, it->second);
  // A smaller minMember may complete the gang.
  if (it->second.min_member < before) to_activate.insert(key);
  MarkDirtyLocked(key);
  wake.notify_all();
}

SteadyClock::time_point GangState::SortTime(const GangKeyView& key,
                                            SteadyClock::time_point queued) {
  std::lock_guard lock(mu);
  auto it = gangs.find(key);
  if (it == gangs.end()) {
    // A gang not tracked here (its pods are not this profile's, or the informer has not told of
    // them yet): its creation, read each time, is the same each time.
    Gang gang;
    ReadSpec(GangKey{key.source, std::string(key.namespace_), std::string(key.name)}, gang);
    return gang.created.value_or(queued);
  }
  Gang& gang = it->second;
  if (!gang.created) ReadSpec(it->first, gang);
  SteadyClock::time_point t = gang.created.value_or(queued);
  for (auto f = gang.failures.rbegin(); f != gang.failures.rend(); ++f) {
    if (*f <= queued) {
      t = std::max(t, *f);
      break;
    }
  }
  return t;
}

void GangState::RecordFailureLocked(const GangKey& key, Gang& gang, SteadyClock::time_point now,
                                    std::chrono::milliseconds backoff) {
  gang.failures.push_back(now);
  while (gang.failures.size() > kFailureHistory) gang.failures.pop_front();
  if (backoff.count() > 0) {
    gang.backoff_until = now + backoff;
    backoff_ends[key] = gang.backoff_until;
  }
  gang.wait_started.reset();
  MarkDirtyLocked(key);
  wake.notify_all();
}

std::vector<std::string> GangState::PendingLocked(const Gang& gang) {
  std::vector<std::string> uids;
  for (const auto& [uid, member] : gang.members) {
    if (!member.second && gang.assumed.count(uid) == 0) uids.push_back(uid);
  }
  return uids;
}

void GangState::MarkDirtyLocked(const GangKey& key) {
  dirty.insert(key);
  if (dirty_since) return;
  dirty_since = SteadyClock::now();
  // Only a batch's first change wakes the status writer: it then sleeps until the batch is due, so
  // waking it for every pod placed would only cost the scheduling thread context switches.
  wake.notify_all();
}

GangProgress GangState::ProgressLocked(const Gang& gang) const {
  GangProgress progress;
  progress.waiting = gang.Waiting();
  progress.assumed = static_cast<int32_t>(gang.assumed.size());
  progress.bound = gang.bound;
  progress.last_rejection = gang.last_rejection;
  progress.schedule_start = gang.schedule_start;
  return progress;
}

}  // namespace berth::plugins::coscheduling
