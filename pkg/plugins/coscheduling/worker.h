#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_WORKER_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_WORKER_H_

// Coscheduling's background work, off the scheduling thread: bringing a gang's pods back to the
// active queue (when the gang is complete, when its backoff ends), rejecting waiting pods a
// rejection could not reach yet, and writing gangs' statuses. Two threads, so that a slow
// apiserver (statuses) never delays an activation.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "pkg/framework/interface.h"
#include "pkg/plugins/coscheduling/gang_state.h"

namespace berth::plugins::coscheduling {

class GangWorker {
 public:
  // Statuses of a batch of changes are written this long after the first change, so a gang whose
  // pods bind one after another gets one write rather than one per pod.
  static constexpr std::chrono::milliseconds kStatusBatch{200};
  static constexpr std::chrono::milliseconds kStatusRetry{2000};
  static constexpr std::chrono::milliseconds kOrphanRetry{20};
  static constexpr int kOrphanTries = 50;

  // `handle` must outlive the worker; `plugin` names the rejecting plugin.
  GangWorker(std::shared_ptr<GangState> state, framework::Handle& handle, std::string plugin);
  ~GangWorker();
  GangWorker(const GangWorker&) = delete;
  GangWorker& operator=(const GangWorker&) = delete;

 private:
  void ActivateLoop();
  void StatusLoop();

  const std::shared_ptr<GangState> state_;
  framework::Handle& handle_;
  const std::string plugin_;
  std::thread activator_;
  std::thread writer_;
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_WORKER_H_
