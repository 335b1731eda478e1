#include <string>

#include "pkg/log/log.h"
#include "pkg/metrics/metrics.h"
#include "pkg/scheduler/cluster_events.h"
#include "pkg/scheduler/scheduler.h"

// The binding cycle of one assumed pod, on a binder thread: WaitOnPermit, PreBind, Bind, PostBind.
// Any failure unreserves, forgets the assumed pod and hands the pod to failure handling.

namespace berth::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
using framework::Status;

}  // namespace

void Scheduler::BindingCycle(framework::runtime::Framework* fwk,
                             std::shared_ptr<framework::CycleState> state,
                             framework::QueuedPodInfoPtr pinfo, api::PodPtr assumed,
                             const ScheduleResult& result, Clock::time_point cycle_start,
                             std::shared_ptr<explain::Attempt> attempt) {
  const std::string& host = result.host;
  auto fail = [&](const Status& status) {
    fwk->RunReservePluginsUnreserve(*state, *assumed, host);
    cache_.ForgetPod(*assumed);
    // The assumed pod's room is free again: pods that did not fit may fit now.
    queue_->MoveAllToActiveOrBackoffQueue(kAssignedPodDelete, PodObjects(assumed, nullptr));
    if (status.IsRejected() && !status.plugin().empty()) {
      pinfo->unschedulable_plugins = {status.plugin()};
    }
    stats_.bind_failures++;
    HandleSchedulingFailure(pinfo, status, nullptr, "", cycle_start, attempt);
  };

  Status s = fwk->WaitOnPermit(*assumed);
  if (!s.IsSuccess()) return fail(s);
  s = fwk->RunPreBindPlugins(*state, *assumed, host);
  if (!s.IsSuccess()) return fail(s);
  // Extenders bind before the Bind plugins, as upstream.
  if (std::optional<Status> by_extender = BindByExtender(deps_.extenders, *assumed, host)) {
    s = std::move(*by_extender);
  } else {
    s = fwk->RunBindPlugins(*state, *assumed, host);
    if (s.IsSkip()) s = Status::Error("no bind plugin bound the pod");
  }
  if (!s.IsSuccess()) return fail(s);
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
  fwk->RunPostBindPlugins(*state, *assumed, host);
  queue_->Done(assumed->meta.uid);
}

}  // namespace berth::scheduler
