#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "pkg/events/recorder.h"
#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/scheduler/cluster_events.h"
#include "pkg/scheduler/scheduler.h"

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
  } else {
    std::map<std::string, int> reasons;
    // Runs of equal reason lists (every node short of cpu) are counted once per run: with a pod
    // that fits nowhere there is one status per node of the cluster.
    const std::vector<std::string>* run = nullptr;
    int run_length = 0;
    auto flush = [&] {
      if (run != nullptr) {
        for (const auto& reason : *run) reasons[reason] += run_length;
      }
    };
    for (const auto& entry : diagnosis.node_to_status.entries()) {
      const auto& entry_reasons = entry.status.reasons();
      if (run != nullptr && *run == entry_reasons) {
        run_length++;
        continue;
      }
      flush();
      run = &entry_reasons;
      run_length = 1;
    }
    flush();
    int absent = num_all_nodes - static_cast<int>(diagnosis.node_to_status.size());
    if (absent > 0) {
      for (const auto& reason : diagnosis.node_to_status.absent_nodes_status().reasons()) {
        reasons[reason] += absent;
      }
    }
    std::vector<std::string> parts;
    parts.reserve(reasons.size());
    for (const auto& [reason, count] : reasons)
      parts.push_back(std::to_string(count) + " " + reason);
    std::sort(parts.begin(), parts.end());
    if (!parts.empty()) {
      msg += " ";
      for (size_t i = 0; i < parts.size(); i++) msg += (i ? ", " : "") + parts[i];
      msg += ".";
    }
  }
  if (!diagnosis.post_filter_msg.empty()) msg += " " + diagnosis.post_filter_msg + ".";
  return msg;
}

void ApiPodStatusWriter::SetUnschedulable(const api::Pod& pod, const std::string& reason,
                                          const std::string& message,
                                          const std::string& nominated_node_name) {
  nlohmann::json status = {
      {"conditions", nlohmann::json::array({{{"type", "PodScheduled"},
                                             {"status", "False"},
                                             {"reason", reason},
                                             {"message", message},
                                             {"lastProbeTime", nullptr},
                                             {"lastTransitionTime", events::TimeNow()}}})}};
  if (!nominated_node_name.empty()) status["nominatedNodeName"] = nominated_node_name;
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
                                        const std::string& nominated_node,
                                        Clock::time_point cycle_start) {
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
  if (!nominated_node.empty()) {
    queue_->nominator().AddNominatedPod(pinfo->pod_info, nominated_node);
  }
  // Also ends the pod's in-flight tracking (the queue calls Done itself).
  queue_->AddUnschedulableIfNotPresent(pinfo, had_error);
  log::Verbose(2, "pod is unschedulable",
               {{"pod", pod->Key()}, {"profile", pod->spec.scheduler_name}, {"reason", message}});
  ReportUnschedulable(current, reason, message, nominated_node);
}

void Scheduler::ReportUnschedulable(const api::PodPtr& pod, const std::string& reason,
                                    const std::string& message, const std::string& nominated_node) {
  reporters_->Post([this, pod, reason, message, nominated_node] {
    if (deps_.recorder) {
      deps_.recorder->Eventf(*pod, "Warning", "FailedScheduling", "Scheduling", message);
    }
    if (deps_.status_writer && !HasCondition(*pod, reason, message)) {
      try {
        deps_.status_writer->SetUnschedulable(*pod, reason, message, nominated_node);
      } catch (const std::exception& e) {
        log::Warn("could not update the PodScheduled condition",
                  {{"pod", pod->Key()}, {"err", e.what()}});
      }
    }
  });
}

}  // namespace berth::scheduler
