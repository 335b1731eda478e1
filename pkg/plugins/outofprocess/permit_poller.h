#ifndef BERTH_PKG_PLUGINS_OUTOFPROCESS_PERMIT_POLLER_H_
#define BERTH_PKG_PLUGINS_OUTOFPROCESS_PERMIT_POLLER_H_

// The pods whose Permit endpoints answered "wait": one background thread asks each such endpoint
// (permit-status) at its pollInterval until it allows, rejects, fails or its wait runs out, and
// then allows the waiting pod (once every endpoint it waits on allowed) or rejects it naming the
// endpoint, through the Handle. The scheduling thread never waits on these calls.
//
// Thread-safety: every method may be called from any thread. The Handle's waiting pods are only
// touched without mu_ held, because rejecting one runs Unreserve, which calls Forget.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/framework/interface.h"
#include "pkg/plugins/outofprocess/endpoint.h"

namespace berth::plugins::outofprocess {

class PermitPoller {
 public:
  using Clock = std::chrono::steady_clock;

  // One endpoint the pod waits on.
  struct Wait {
    const Endpoint* endpoint = nullptr;
    // The permit-status request, made once.
    std::string body;
    // When the endpoint's wait runs out; the pod is then rejected.
    Clock::time_point deadline;
    std::chrono::milliseconds timeout{0};
  };

  PermitPoller(framework::Handle& handle, std::string plugin);
  // Stops the thread; calls in flight are cancelled.
  ~PermitPoller();
  PermitPoller(const PermitPoller&) = delete;
  PermitPoller& operator=(const PermitPoller&) = delete;

  // Starts polling for the pod `uid` (replacing an earlier wait of the same pod). The first poll
  // of each endpoint comes one pollInterval from now.
  void Add(const std::string& uid, std::vector<Wait> waits);
  // Stops polling for `uid` (its wait ended elsewhere: Unreserve).
  void Forget(const std::string& uid);
  // Pods being polled for.
  size_t size() const;

 private:
  struct WaitState {
    Wait wait;
    Clock::time_point next_poll;
    bool allowed = false;
    bool in_flight = false;
  };
  struct Entry {
    std::string uid;
    std::vector<WaitState> waits;
    // The decision, once made: allowed, or rejected with `message`. Applied to the waiting pod
    // as soon as the Handle has it (the framework parks the pod only after Permit returns).
    bool decided = false;
    bool allow = false;
    std::string message;
    // After this the entry is dropped whatever happened: the framework's own deadline has
    // passed by then.
    Clock::time_point give_up;
  };
  struct Poll {
    std::shared_ptr<Entry> entry;
    size_t index;
  };

  void Run();
  // Under mu_: decides what is due now; returns when to look again.
  Clock::time_point CollectLocked(Clock::time_point now, std::vector<Poll>* polls,
                                  std::vector<std::shared_ptr<Entry>>* decided);
  // Without mu_: allows or rejects the waiting pod; false when the Handle does not have it yet.
  bool Apply(const Entry& entry);

  framework::Handle& handle_;
  const std::string plugin_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;                                      // Guarded by mu_.
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // Guarded by mu_; by uid.
  // Last: started when everything above exists.
  std::thread thread_;
};

}  // namespace berth::plugins::outofprocess

#endif  // BERTH_PKG_PLUGINS_OUTOFPROCESS_PERMIT_POLLER_H_
