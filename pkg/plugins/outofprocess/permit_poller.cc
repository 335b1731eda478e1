#include "pkg/plugins/outofprocess/permit_poller.h"

#include <algorithm>
#include <optional>

#include "pkg/log/log.h"
#include "pkg/util/time.h"

namespace berth::plugins::outofprocess {
namespace {

// How often a decision is tried again while the framework has not parked the pod yet.
constexpr std::chrono::milliseconds kApplyRetry{20};
// How long past the last endpoint's deadline an undelivered decision is kept.
constexpr std::chrono::seconds kGiveUpSlack{5};

}  // namespace

PermitPoller::PermitPoller(framework::Handle& handle, std::string plugin)
    : handle_(handle), plugin_(std::move(plugin)), thread_([this] { Run(); }) {}

PermitPoller::~PermitPoller() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PermitPoller::Add(const std::string& uid, std::vector<Wait> waits) {
  auto entry = std::make_shared<Entry>();
  entry->uid = uid;
  const Clock::time_point now = Clock::now();
  Clock::time_point last = now;
  for (Wait& wait : waits) {
    last = std::max(last, wait.deadline);
    WaitState state;
    state.next_poll = now + wait.endpoint->args().permit.poll_interval;
    state.wait = std::move(wait);
    entry->waits.push_back(std::move(state));
  }
  entry->give_up = last + kGiveUpSlack;
  {
    std::lock_guard lock(mu_);
    entries_[uid] = std::move(entry);
  }
  wake_.notify_all();
}

void PermitPoller::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  entries_.erase(uid);
}

size_t PermitPoller::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

PermitPoller::Clock::time_point PermitPoller::CollectLocked(
    Clock::time_point now, std::vector<Poll>* polls, std::vector<std::shared_ptr<Entry>>* decided) {
  Clock::time_point next = Clock::time_point::max();
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& entry = *it->second;
    if (now >= entry.give_up) {
      it = entries_.erase(it);
      continue;
    }
    if (!entry.decided) {
      bool all_allowed = true;
      for (size_t i = 0; i < entry.waits.size() && !entry.decided; i++) {
        WaitState& state = entry.waits[i];
        if (state.allowed) continue;
        all_allowed = false;
        if (state.in_flight) continue;
        if (now >= state.wait.deadline) {
          entry.decided = true;
          entry.allow = false;
          entry.message = Named(*state.wait.endpoint) + " did not allow the pod within " +
                          util::FormatGoDuration(state.wait.timeout);
        } else if (now >= state.next_poll) {
          state.in_flight = true;
          polls->push_back({it->second, i});
        } else {
          next = std::min({next, state.next_poll, state.wait.deadline});
        }
      }
      if (all_allowed && !entry.decided) {
        entry.decided = true;
        entry.allow = true;
      }
    }
    if (entry.decided) {
      decided->push_back(it->second);
      next = std::min(next, now + kApplyRetry);
    }
    next = std::min(next, entry.give_up);
    ++it;
  }
  return next;
}

bool PermitPoller::Apply(const Entry& entry) {
  std::shared_ptr<framework::WaitingPod> pod = handle_.GetWaitingPod(entry.uid);
  if (!pod) return false;
  if (entry.allow) {
    pod->Allow(plugin_);
  } else {
    pod->Reject(plugin_, entry.message);
  }
  return true;
}

void PermitPoller::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    std::vector<Poll> polls;
    std::vector<std::shared_ptr<Entry>> decided;
    const Clock::time_point next = CollectLocked(Clock::now(), &polls, &decided);
    if (polls.empty() && decided.empty()) {
      if (next == Clock::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, next);
      }
      continue;
    }
    lock.unlock();

    // A decided entry is read without the lock: nothing changes it once decided.
    std::vector<std::shared_ptr<Entry>> applied;
    for (const auto& entry : decided) {
      if (Apply(*entry)) applied.push_back(entry);
    }
    // Every due endpoint is asked at once, then each answer is waited on.
    std::vector<Endpoint::Pending> pending;
    pending.reserve(polls.size());
    for (const Poll& poll : polls) {
      const Wait& wait = poll.entry->waits[poll.index].wait;
      pending.push_back(wait.endpoint->Start(Verb::kPermitStatus, wait.body));
    }
    std::vector<Endpoint::Reply> replies;
    replies.reserve(pending.size());
    for (Endpoint::Pending& call : pending) replies.push_back(call.Wait());

    lock.lock();
    for (const auto& entry : applied) {
      auto it = entries_.find(entry->uid);
      if (it != entries_.end() && it->second == entry) entries_.erase(it);
    }
    const Clock::time_point now = Clock::now();
    for (size_t p = 0; p < polls.size(); p++) {
      Entry& entry = *polls[p].entry;
      WaitState& state = entry.waits[polls[p].index];
      state.in_flight = false;
      if (entry.decided) continue;
      const Endpoint& endpoint = *state.wait.endpoint;
      const Endpoint::Reply& reply = replies[p];
      std::optional<PermitAnswer> answer;
      std::string error;
      if (reply.ok()) {
        try {
          answer = DecodePermit(*reply.answer);
        } catch (const ProtocolError& e) {
          error = Named(endpoint) + " (PermitStatus): " + e.what();
        }
      } else {
        error = reply.error;
      }
      if (!answer) {
        if (endpoint.args().ignorable) {
          log::Warn(
              "an ignorable out-of-process endpoint failed; its Permit wait counts as "
              "allowed",
              {{"endpoint", endpoint.name()}, {"pod", entry.uid}, {"error", error}});
          state.allowed = true;
        } else {
          entry.decided = true;
          entry.allow = false;
          entry.message = error;
        }
        continue;
      }
      switch (answer->decision) {
        case PermitAnswer::Decision::kAllow:
          state.allowed = true;
          break;
        case PermitAnswer::Decision::kReject:
          entry.decided = true;
          entry.allow = false;
          entry.message = Named(endpoint) + " rejected the pod" +
                          (answer->reason.empty() ? "" : ": " + answer->reason);
          break;
        case PermitAnswer::Decision::kWait:
          state.next_poll = now + endpoint.args().permit.poll_interval;
          break;
      }
    }
  }
}

}  // namespace berth::plugins::outofprocess
