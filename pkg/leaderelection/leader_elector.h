#ifndef BERTH_PKG_LEADERELECTION_LEADER_ELECTOR_H_
#define BERTH_PKG_LEADERELECTION_LEADER_ELECTOR_H_

// Leader election over a coordination.k8s.io/v1 Lease with client-go's leaderelection semantics
// (what kube-scheduler runs), so Berth replicas and anything else speaking that protocol agree
// on one holder:
//   - A lease is judged by the local time at which this candidate last saw its record change,
//     never by the timestamps written in it: clock skew between machines does not matter, only
//     their clock rates do. A candidate that just started waits a full lease duration before it
//     takes over a lease held by someone else, unless the holder released it (empty holder).
//   - Taking over from another holder increments spec.leaseTransitions; renewing keeps it and
//     spec.acquireTime.
//   - Every write is a compare-and-swap: a PUT carries the resourceVersion that was read, so of
//     two candidates racing for an expired lease only one succeeds (the other gets a Conflict and
//     reads again next round).
//   - The leader gives up after renew_deadline without a successful renew, and at once when the
//     lease shows another holder. renew_deadline < lease_duration leaves the old leader time to
//     stop acting before a standby may take over.
//   - One term per elector: once it stopped leading it never campaigns again (build a new one).
//
// Like client-go this does not fence: for a short while two processes may both believe they
// lead (a paused process, clocks running at different rates). Work guarded by leadership must
// tolerate that.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "pkg/client/client.h"
#include "pkg/leaderelection/background_caller.h"
#include "pkg/leaderelection/lease_lock.h"
#include "pkg/util/clock.h"

namespace berth::leaderelection {

// client-go's JitterFactor: a candidate retries acquiring after retry_period plus a random
// extra of up to JitterFactor * retry_period, so standbys do not poll in lockstep.
inline constexpr double kJitterFactor = 1.2;

struct LeaderElectionConfig {
  std::string lease_namespace, lease_name, identity;
  // lease_duration: how long a standby waits, from the moment it saw the record last change,
  // before it takes the lease over. renew_deadline: how long the leader keeps retrying a failed
  // renew before it gives up. retry_period: the pause between attempts.
  std::chrono::milliseconds lease_duration{15000}, renew_deadline{10000}, retry_period{2000};
  // How long past lease_duration without a successful renew a leader still reports healthy. Only
  // a stuck elector thread (a callback that does not return) gets there: the renew loop gives up
  // at renew_deadline. kube-scheduler gives its healthz adaptor 20s.
  std::chrono::milliseconds health_grace{2000};
};

struct LeaderCallbacks {
  // Called once, from the elector's thread, right after the lease was acquired. It must return
  // promptly (start the leader's work on other threads): the lease is not renewed while it runs.
  std::function<void()> on_started_leading;
  // Called once, from the elector's thread, when leadership is lost (renew failed for
  // renew_deadline, or another holder appeared) or given up by Release(). Not called when the
  // elector never led, nor on Stop() or destruction (a crash does not call anything either).
  std::function<void()> on_stopped_leading;
  // Optional. Called from the elector's thread whenever the observed holder changes to a new
  // non-empty identity (this elector's own included), starting with the first one observed.
  std::function<void(const std::string&)> on_new_leader;
};

// One candidate for one Lease. Run() starts a background thread that campaigns (one attempt per
// jittered retry_period) until it acquires the lease, then renews it every retry_period.
// Every public method is thread-safe. Callbacks run on the elector's thread; Release(), Stop()
// and Run() may be called from them (they then return without waiting for the thread), but the
// elector must not be destroyed from its own callbacks.
//
// Apiserver requests run on a worker thread of their own and are waited for at most until the
// current deadline (renew_deadline per attempt while campaigning, the renew deadline while
// leading), so a hung request cannot keep a leader past its deadline. Such a request still
// occupies the worker until the client gives up on it; attempts fail until then. Stop(), and
// Release() while campaigning, stop waiting for a request at once; a leader's Release() waits
// for its request (up to the renew deadline) so the release write comes after it. The destructor
// waits for an abandoned request to end, so give the elector a client with a finite per-request
// timeout.
class LeaderElector {
 public:
  // Throws std::invalid_argument when `config` is invalid (see ValidateConfig) or `client` is
  // null. A null `clock` means the real steady clock.
  LeaderElector(std::shared_ptr<client::Client> client, LeaderElectionConfig config,
                LeaderCallbacks callbacks, std::shared_ptr<util::Clock> clock = nullptr);
  // Stop(), then waits for an in-flight request. Does not release the lease.
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Starts campaigning on a background thread and returns at once. Only the first call does
  // anything, and none after Stop() or Release().
  void Run();
  // Ends this elector's participation. If it leads: stops renewing, writes the lease with an
  // empty holderIdentity and leaseDurationSeconds 1 (so a standby takes over at its next
  // attempt instead of waiting out the lease), then calls on_stopped_leading. Returns when that
  // is done (from a callback: at once, the thread finishes it). Idempotent.
  void Release();
  // Ends participation without releasing and without callbacks: to the other candidates it looks
  // like a crash (the lease expires after lease_duration). Returns when the thread has ended
  // (from a callback: at once). Idempotent.
  void Stop();

  // Whether this elector currently holds the lease and renews it.
  bool IsLeader() const;
  // The holderIdentity last observed (empty before the first read, or when released).
  std::string Leader() const;
  // For /readyz, like client-go's HealthzAdaptor: a leader is healthy while its last successful
  // renew is at most lease_duration + health_grace old; a candidate that does not lead is healthy
  // while it read the lease (or wrote it) successfully within the last lease_duration (a lease it
  // cannot find and cannot create does not count). False before Run() and after the elector
  // finished (lost, released, stopped).
  bool Healthy() const;
  const std::string& Identity() const { return config_.identity; }

 private:
  enum class Phase { kIdle, kCampaigning, kLeading, kFinished };
  enum class Ending { kLost, kReleased, kStopped };
  struct Attempt {
    bool ok = false;
    bool held_by_other = false;  // The lease has another holder whose term has not expired.
    std::string error;
  };

  void Loop();
  // Campaigns until the lease is acquired (true) or Stop/Release was requested (false).
  bool Acquire();
  // Renews until leadership is lost or Stop/Release was requested.
  Ending Renew();
  // client-go's tryAcquireOrRenew: one optimistic renew when leading, else read, then create or
  // take over (when free or expired) or renew. Requests give up at `deadline`.
  Attempt TryAcquireOrRenew(util::Clock::TimePoint deadline);
  void ReleaseLease();
  // Runs `call` on caller_ and waits for it until `deadline` (or Stop). nullopt on success, else
  // a description of the failure naming `verb` and the lease.
  std::optional<std::string> Call(const char* verb, std::function<void(LeaseLock&)> call,
                                  util::Clock::TimePoint deadline);
  // Records `record` as observed now (and as renewed now when this elector holds it).
  void Observe(const LeaseRecord& record);
  void ReportLeader();
  void LogAcquireFailure(const std::string& error);
  std::optional<Ending> Requested() const;
  // Waits `d` (real time) unless Stop/Release is requested first; returns what was requested.
  std::optional<Ending> WaitInterruptible(std::chrono::nanoseconds d);
  // Like WaitInterruptible, but also returns early (nullopt) when the release watch saw the lease
  // released or deleted.
  std::optional<Ending> WaitForRetry(std::chrono::nanoseconds d);
  // While campaigning, a watch on the Lease wakes the campaign the moment the holder releases it,
  // so a standby takes over within a round trip instead of up to retryPeriod * 2.2 later. Without
  // watch permission (or on any watch failure) the campaign simply keeps polling.
  void StartReleaseWatch();
  void StopReleaseWatch();
  void ReleaseWatchLoop();
  // Joins the elector thread unless called on it.
  void JoinThread();

  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  const std::shared_ptr<util::Clock> clock_;
  const std::string description_;  // "namespace/name"

  const std::shared_ptr<client::Client> client_;
  // Used only by calls on caller_'s worker, which runs one at a time.
  LeaseLock lock_;

  // Used only by the elector thread.
  std::string reported_leader_;
  std::string last_logged_error_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // Signalled on Stop/Release.
  // Guarded by mu_.
  Phase phase_ = Phase::kIdle;
  bool stop_requested_ = false;
  bool release_requested_ = false;
  std::thread::id loop_thread_id_;
  LeaseRecord observed_record_;
  util::Clock::TimePoint observed_time_{};  // When observed_record_ was last seen to change.
  util::Clock::TimePoint last_renew_time_{};
  // When the lease was last read (found) or written successfully.
  std::optional<util::Clock::TimePoint> last_read_time_;

  bool released_seen_ = false;  // Set by the release watch, cleared by WaitForRetry.
  bool release_watch_stop_ = false;

  std::mutex thread_mu_;  // Guards thread_ (start and join). Never taken with mu_ held.
  std::thread thread_;

  // The release watch: its thread is started and joined by the elector thread only.
  std::thread release_watch_thread_;
  std::mutex watch_mu_;  // Guards release_watch_. Never taken with mu_ held.
  std::unique_ptr<client::WatchStream> release_watch_;

  // Last: destroyed first, so an in-flight call (which uses lock_) ends before the rest.
  BackgroundCaller caller_;
};

// "<hostname>_<uuid v4>", like kube-scheduler's identity.
std::string DefaultIdentity();

// Checks what client-go's NewLeaderElector checks, plus non-empty names: lease_duration >
// renew_deadline > kJitterFactor * retry_period, all durations > 0, health_grace >= 0. Throws
// std::invalid_argument whose message names the configuration field
// ("leaderElection.leaseDuration (10s) must be greater than leaderElection.renewDeadline (10s)").
void ValidateConfig(const LeaderElectionConfig& config);

}  // namespace berth::leaderelection

#endif  // BERTH_PKG_LEADERELECTION_LEADER_ELECTOR_H_
