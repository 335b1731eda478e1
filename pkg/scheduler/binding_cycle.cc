#include <string>

#include "pkg/log/log.h"
#include "pkg/metrics/metrics.h"
#include "pkg/scheduler/cluster_events.h"
#include "pkg/scheduler/scheduler.h"

// The binding cycle of one assumed pod: WaitOnPermit, PreBind, Bind, PostBind, on a binding thread;
// or, when nothing before Bind needs a thread, Bind sent with none waiting for its answer. Any
// failure unreserves, forgets the assumed pod and hands the pod to failure handling.

namespace berth::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
using framework::Status;

}  // namespace

void Scheduler::BindingCycle(PendingBinding& binding, std::optional<Status> bind_outcome) {
  framework::runtime::Framework* fwk = binding.fwk;
  const api::Pod& pod = *binding.assumed;
  const std::string& host = binding.result.host;
  Status s;
  if (bind_outcome) {
    s = std::move(*bind_outcome);
  } else {
    if (!binding.ready_to_bind) {
      s = fwk->WaitOnPermit(pod);
      if (s.IsSuccess()) s = fwk->RunPreBindPlugins(*binding.state, pod, host);
    }
    if (s.IsSuccess()) {
      // Extenders bind before the Bind plugins, as upstream.
      if (std::optional<Status> by_extender = BindByExtender(deps_.extenders, pod, host)) {
        s = std::move(*by_extender);
      } else {
        s = fwk->RunBindPlugins(*binding.state, pod, host);
        if (s.IsSkip()) s = Status::Error("no bind plugin bound the pod");
      }
    }
  }
  FinishBindingCycle(binding, s);
}

void Scheduler::FinishBindingCycle(PendingBinding& binding, const Status& status) {
  framework::runtime::Framework* fwk = binding.fwk;
  framework::CycleState& state = *binding.state;
  const framework::QueuedPodInfoPtr& pinfo = binding.pinfo;
  const api::PodPtr& assumed = binding.assumed;
  const std::string& host = binding.result.host;
  const Clock::time_point cycle_start = binding.cycle_start;
  std::shared_ptr<explain::Attempt> attempt = std::move(binding.attempt);
  if (!status.IsSuccess()) {
    fwk->RunReservePluginsUnreserve(state, *assumed, host);
    cache_.ForgetPod(*assumed);
    // The assumed pod's room is free again: pods that did not fit may fit now.
    queue_->MoveAllToActiveOrBackoffQueue(kAssignedPodDelete, PodObjects(assumed, nullptr));
    if (status.IsRejected() && !status.plugin().empty()) {
      pinfo->unschedulable_plugins = {status.plugin()};
    }
    stats_.bind_failures++;
    HandleSchedulingFailure(pinfo, status, nullptr, "", cycle_start, attempt);
    return;
  }
  cache_.FinishBinding(*assumed);
  attempts_.Bound(std::move(attempt));
  stats_.scheduled++;
  ObserveAttempt(fwk->ProfileName(), metrics::AttemptResult::kScheduled, cycle_start);
  if (deps_.metrics) {
    deps_.metrics->ObservePodScheduled(
        pinfo->attempts,
        std::chrono::duration<double>(Clock::now() - (pinfo->initial_attempt_set
                                                          ? pinfo->initial_attempt_timestamp
                                                          : cycle_start))
            .count());
  }
  if (log::V(2)) {
    log::Verbose(
        2, "pod bound",
        {{"pod", assumed->Key()},
         {"node", host},
         {"profile", fwk->ProfileName()},
         {"attempts", std::to_string(pinfo->attempts)},
         {"latency_ms",
          std::to_string(
              std::chrono::duration<double, std::milli>(Clock::now() - cycle_start).count())}});
  }
  if (deps_.recorder) {
    deps_.recorder->Eventf(*assumed, "Normal", "Scheduled", "Binding",
                           "Successfully assigned " + assumed->Key() + " to " + host);
  }
  fwk->RunPostBindPlugins(state, *assumed, host);
  queue_->Done(assumed->meta.uid);
}

void Scheduler::PostBindingCycle(util::TaskQueue* binders, PendingBinding binding,
                                 std::optional<Status> bind_outcome) {
  const bool posted = binders->Post([this, binding = std::move(binding), bind_outcome]() mutable {
    BindingCycle(binding, std::move(bind_outcome));
    in_flight_bindings_--;
  });
  if (!posted) in_flight_bindings_--;  // Shutting down: the binders no longer take work.
}

void Scheduler::BindWithoutThread(PendingBinding binding) {
  binding.fwk->SkipPreBindPlugins();
  binding.ready_to_bind = true;
  {
    std::lock_guard<std::mutex> lock(unsent_mu_);
    if (places_taken_ >= std::max(1, options_.binding_workers)) {
      unanswered_bindings_++;  // Stop waits for it as for one sent.
      unsent_bindings_.push_back(std::move(binding));
      return;
    }
    places_taken_++;
  }
  if (SendWithoutThread(binding)) return;
  PassOnPlace();
  PostBindingCycle(binders_.get(), std::move(binding));
}

bool Scheduler::SendWithoutThread(PendingBinding& binding) {
  unanswered_bindings_++;
  // The completion holds the binding (and so the cycle state the framework reads) until it ran.
  auto shared = std::make_shared<PendingBinding>(std::move(binding));
  framework::runtime::Framework* fwk = shared->fwk;
  const bool sent = fwk->RunBindPluginsAsync(
      *shared->state, *shared->assumed, shared->result.host,
      [this, shared](std::optional<Status> outcome) {
        PendingBinding& b = *shared;
        if (outcome && outcome->IsSuccess() && !b.fwk->HasPostBindPlugins()) {
          // Bound, and the rest takes no waiting: finish here rather than wake a thread for it.
          FinishBindingCycle(b, *outcome);
          in_flight_bindings_--;
        } else {
          // Settling the binding, Unreserve, failure handling and PostBind may all wait.
          PostBindingCycle(binders_.get(), std::move(b), std::move(outcome));
        }
        PassOnPlace();
        unanswered_bindings_--;  // Last: Stop may go on once this is zero.
      });
  if (!sent) {
    binding = std::move(*shared);
    unanswered_bindings_--;
  }
  return sent;
}

void Scheduler::PassOnPlace() {
  for (;;) {
    PendingBinding next;
    {
      std::lock_guard<std::mutex> lock(unsent_mu_);
      if (unsent_bindings_.empty()) {
        places_taken_--;
        return;
      }
      next = std::move(unsent_bindings_.front());
      unsent_bindings_.pop_front();
    }
    // Counted as sent from now on (or handed to a binding thread).
    const bool sent = SendWithoutThread(next);
    unanswered_bindings_--;
    if (sent) return;
    PostBindingCycle(binders_.get(), std::move(next));
  }
}

}  // namespace berth::scheduler
