#include "pkg/plugins/coscheduling/worker.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "pkg/log/log.h"

namespace berth::plugins::coscheduling {

GangWorker::GangWorker(std::shared_ptr<GangState> state, framework::Handle& handle,
                       std::string plugin)
    : state_(std::move(state)), handle_(handle), plugin_(std::move(plugin)) {
  activator_ = std::thread([this] { ActivateLoop(); });
  writer_ = std::thread([this] { StatusLoop(); });
}

GangWorker::~GangWorker() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  activator_.join();
  writer_.join();
}

void GangWorker::ActivateLoop() {
  GangState& s = *state_;
  std::unique_lock lock(s.mu);
  while (!s.stopping) {
    const auto now = SteadyClock::now();
    std::vector<std::string> activate;
    for (const GangKey& key : s.to_activate) {
      if (auto it = s.gangs.find(key); it != s.gangs.end()) {
        for (auto& uid : GangState::PendingLocked(it->second)) activate.push_back(std::move(uid));
      }
    }
    s.to_activate.clear();
    std::optional<SteadyClock::time_point> next;
    for (auto it = s.backoff_ends.begin(); it != s.backoff_ends.end();) {
      if (it->second > now) {
        next = next ? std::min(*next, it->second) : it->second;
        ++it;
        continue;
      }
      if (auto gang = s.gangs.find(it->first); gang != s.gangs.end()) {
        activate.insert(activate.end(), gang->second.held.begin(), gang->second.held.end());
        gang->second.held.clear();
      }
      it = s.backoff_ends.erase(it);
    }
    std::vector<Orphan> due;
    for (auto it = s.orphans.begin(); it != s.orphans.end();) {
      if (it->retry_at > now) {
        next = next ? std::min(*next, it->retry_at) : it->retry_at;
        ++it;
        continue;
      }
      // Placed again since: it is a new attempt, not the one rejected.
      auto gang = s.gangs.find(it->gang);
      if (gang == s.gangs.end() || gang->second.assumed.count(it->uid) == 0) {
        due.push_back(std::move(*it));
      }
      it = s.orphans.erase(it);
    }
    if (activate.empty() && due.empty()) {
      if (next) {
        s.wake.wait_until(lock, *next);
      } else {
        s.wake.wait(lock);
      }
      continue;
    }
    lock.unlock();
    handle_.Activate(activate);
    std::vector<Orphan> again;
    for (Orphan& orphan : due) {
      if (auto waiting = handle_.GetWaitingPod(orphan.uid)) {
        waiting->Reject(plugin_, orphan.message);
      } else if (++orphan.tries < kOrphanTries) {
        orphan.retry_at = SteadyClock::now() + kOrphanRetry;
        again.push_back(std::move(orphan));
      }
    }
    lock.lock();
    for (Orphan& orphan : again) s.orphans.push_back(std::move(orphan));
  }
}

void GangWorker::StatusLoop() {
  GangState& s = *state_;
  bool failed_before = false;
  std::unique_lock lock(s.mu);
  while (!s.stopping) {
    if (s.dirty.empty()) {
      s.wake.wait(lock);
      continue;
    }
    const auto due = *s.dirty_since + kStatusBatch;
    if (SteadyClock::now() < due) {
      s.wake.wait_until(lock, due);
      continue;
    }
    std::vector<std::pair<GangKey, GangProgress>> batch;
    for (const GangKey& key : s.dirty) {
      auto it = s.gangs.find(key);
      batch.emplace_back(key, it == s.gangs.end() ? GangProgress() : s.ProgressLocked(it->second));
    }
    s.dirty.clear();
    s.dirty_since.reset();
    lock.unlock();
    std::vector<GangKey> retry;
    for (const auto& [key, progress] : batch) {
      try {
        key.source->WriteStatus(key.namespace_, key.name, progress);
      } catch (const std::exception& e) {
        // The first failure (RBAC, a missing status subresource) is worth an operator's eye; the
        // rest of a failing apiserver's would flood the log.
        const int level = failed_before ? 2 : 0;
        failed_before = true;
        const std::string gang = key.Display();
        if (level == 0) {
          log::Warn("could not update the status of a gang; retrying",
                    {{"kind", key.source->Kind()}, {"gang", gang}, {"err", e.what()}});
        } else {
          log::Verbose(level, "could not update the status of a gang; retrying",
                       {{"kind", key.source->Kind()}, {"gang", gang}, {"err", e.what()}});
        }
        retry.push_back(key);
      }
    }
    lock.lock();
    for (const GangKey& key : retry) s.dirty.insert(key);
    if (!retry.empty() && !s.dirty_since) s.dirty_since = SteadyClock::now() + kStatusRetry;
  }
}

}  // namespace berth::plugins::coscheduling
