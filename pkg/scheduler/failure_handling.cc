#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "pkg/events/recorder.h"
#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/scheduler/cluster_events.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/util/time.h"

// Failure handling and reporting: the FailedScheduling message, requeueing a pod whose attempt
// failed, and the event and PodScheduled condition that tell the user why (sent off-thread).

namespace berth::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
using framework::Code;
using framework::Status;

bool HasCondition(const api::Pod& pod, const std::string& reason, const std::string& message) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == "PodScheduled") {
      return c.status == "False" && c.reason == reason && c.message == message;
    }
  }
  return false;
}

}  // namespace

std::string FitErrorMessage(int num_all_nodes, const Diagnosis& diagnosis) {
  std::string msg = "0/" + std::to_string(num_all_nodes) + " nodes are available:";
  if (!diagnosis.pre_filter_msg.empty()) {
    msg += " " + diagnosis.pre_filter_msg + ".";
  } else if (std::string reasons =
                 framework::CountNodeReasons(num_all_nodes, diagnosis.node_to_status);
             !reasons.empty()) {
    msg += " " + reasons + ".";
  }
  // As upstream: PostFilter plugins end their message themselves.
  if (!diagnosis.post_filter_msg.empty()) msg += " " + diagnosis.post_filter_msg;
  return msg;
}

void ApiPodStatusWriter::SetUnschedulable(const api::Pod& pod, const std::string& reason,
                                          const std::string& message,
                                          const std::optional<std::string>& nominated_node_name) {
  nlohmann::json status = {
      {"conditions",
       nlohmann::json::array(
           {{{"type", "PodScheduled"},
             {"status", "False"},
             {"reason", reason},
             {"message", message},
             {"lastProbeTime", nullptr},
             {"lastTransitionTime", util::FormatRfc3339(std::chrono::system_clock::now())}}})}};
  if (nominated_node_name) {
    status["nominatedNodeName"] = nominated_node_name->empty()
                                      ? nlohmann::json(nullptr)
                                      : nlohmann::json(*nominated_node_name);
  }
  nlohmann::json patch = {{"status", status}};
  client_->Patch(client::PodsResource().Path(pod.meta.namespace_, pod.meta.name, "status"), patch,
                 client::PatchType::kStrategicMerge);
}

api::PodPtr Scheduler::CurrentPod(const api::Pod& pod) const {
  if (!deps_.informers) return std::make_shared<const api::Pod>(pod);
  return deps_.informers->Pods().store().Get(pod.Key());
}

void Scheduler::HandleSchedulingFailure(const framework::QueuedPodInfoPtr& pinfo,
                                        const Status& status, const Diagnosis* diagnosis,
                                        const std::optional<std::string>& nominated_node,
                                        Clock::time_point cycle_start,
                                        std::shared_ptr<explain::Attempt> attempt,
                                        explain::Verdicts verdicts) {
  const api::PodPtr pod = pinfo->pod_info->pod;
  std::string reason = "Unschedulable";
  bool had_error = false;
  ObserveAttempt(
      pod->spec.scheduler_name,
      status.IsRejected() ? metrics::AttemptResult::kUnschedulable : metrics::AttemptResult::kError,
      cycle_start);
  if (status.IsRejected()) {
    stats_.unschedulable++;
    if (diagnosis) {
      pinfo->unschedulable_plugins = diagnosis->unschedulable_plugins;
      pinfo->pending_plugins = diagnosis->pending_plugins;
    }
  } else {
    stats_.errors++;
    reason = "SchedulerError";
    had_error = true;
    log::Error("error while scheduling pod", {{"pod", pod->Key()},
                                              {"profile", pod->spec.scheduler_name},
                                              {"plugin", status.plugin()},
                                              {"err", status.Message()}});
  }
  const std::string message = status.Message();

  // Only a pod that still exists and is still unbound goes back to the queue: a pod deleted, or
  // bound by someone else (a 404 or 409 on bind), is not retried forever.
  api::PodPtr current = CurrentPod(*pod);
  if (!current) {
    log::Verbose(2, "pod no longer exists; not requeued", {{"pod", pod->Key()}});
    queue_->Done(pod->meta.uid);
    return;
  }
  if (Assigned(*current)) {
    log::Verbose(2, "pod is already bound; not requeued",
                 {{"pod", pod->Key()}, {"node", current->spec.node_name}});
    queue_->Done(pod->meta.uid);
    return;
  }
  if (current != pod && current->meta.uid == pod->meta.uid) {
    pinfo->pod_info = std::make_shared<framework::PodInfo>(current);
  }
  if (attempt == nullptr) {
    attempt = std::make_shared<explain::Attempt>();
    attempt->pod = pod->Key();
    attempt->uid = pod->meta.uid;
    attempt->profile = pod->spec.scheduler_name;
    attempt->time = std::chrono::system_clock::now();
    attempt->attempt = pinfo->attempts;
    attempt->pod_object = pod;
  }
  if (!attempt->node.empty()) {
    attempt->outcome = explain::Outcome::kFailedAfterSelection;
  } else {
    attempt->outcome = had_error ? explain::Outcome::kError : explain::Outcome::kUnschedulable;
  }
  attempt->message = explain::Bounded(message);
  // As upstream: a nomination left as it is (nullopt) is the one the pod object carries.
  queue_->nominator().AddNominatedPod(pinfo->pod_info, nominated_node);
  // Also ends the pod's in-flight tracking (the queue calls Done itself).
  queue_->AddUnschedulableIfNotPresent(pinfo, had_error);
  log::Verbose(2, "pod is unschedulable",
               {{"pod", pod->Key()}, {"profile", pod->spec.scheduler_name}, {"reason", message}});
  ReportUnschedulable(current, reason, message, nominated_node, std::move(attempt),
                      std::move(verdicts));
}

void Scheduler::ReportUnschedulable(const api::PodPtr& pod, const std::string& reason,
                                    const std::string& message,
                                    const std::optional<std::string>& nominated_node,
                                    explain::AttemptPtr attempt, explain::Verdicts verdicts) {
  reporters_->Post([this, pod, reason, message, nominated_node, attempt = std::move(attempt),
                    verdicts = std::move(verdicts)] {
    if (attempt) {
      // What is kept is made here, from this worker's memory: the scheduling thread's draft is
      // freed, and its memory taken up again by the cycles that follow. Records the scheduling
      // thread made and kept, one per pending pod, lay between the queue's allocations for those
      // pods and spread them out, and the passes over the unschedulable pods that each bound pod
      // makes got measurably slower.
      auto kept = std::make_shared<explain::Attempt>(*attempt);
      if (!verdicts.empty()) verdicts.Build(kept.get());
      attempts_.Record(kept);
    }
    if (deps_.recorder) {
      deps_.recorder->Eventf(*pod, "Warning", "FailedScheduling", "Scheduling", message);
    }
    // Only a nomination that changes the pod's is written.
    std::optional<std::string> nomination;
    if (nominated_node && *nominated_node != pod->status.nominated_node_name) {
      nomination = nominated_node;
    }
    if (deps_.status_writer && (nomination || !HasCondition(*pod, reason, message))) {
      try {
        deps_.status_writer->SetUnschedulable(*pod, reason, message, nomination);
      } catch (const std::exception& e) {
        log::Warn("could not update the PodScheduled condition",
                  {{"pod", pod->Key()}, {"err", e.what()}});
      }
    }
  });
}

}  // namespace berth::scheduler
