#include "pkg/plugins/schedulinggates/schedulinggates.h"

#include <memory>
#include <stdexcept>

#include "pkg/framework/args.h"

namespace berth::plugins::schedulinggates {

framework::Status SchedulingGates::PreEnqueue(const api::Pod& pod) {
  const std::vector<std::string>& gates = pod.spec.scheduling_gates;
  if (gates.empty()) return framework::Status::Success();
  std::string message(kReasonPrefix);
  message += '[';
  for (size_t i = 0; i < gates.size(); i++) {
    if (i > 0) message += ' ';
    message += gates[i];
  }
  message += ']';
  return framework::Status::Unresolvable(std::move(message));
}

std::vector<framework::ClusterEventWithHint> SchedulingGates::EventsToRegister() const {
  return {
      {{framework::EventResource::kUnscheduledPod, framework::kUpdatePodSchedulingGatesEliminated,
        "UnscheduledPodUpdatePodSchedulingGatesEliminated"},
       IsSchedulableAfterGatesChange},
  };
}

framework::QueueingHint IsSchedulableAfterGatesChange(const api::Pod& pod,
                                                      const framework::EventObjects& event) {
  // A missing object is a malformed event; queueing is the safe answer (upstream does the same
  // on a type error).
  if (!event.new_pod) return framework::QueueingHint::kQueue;
  if (event.new_pod->meta.uid != pod.meta.uid) return framework::QueueingHint::kSkip;
  return event.new_pod->spec.scheduling_gates.empty() ? framework::QueueingHint::kQueue
                                                      : framework::QueueingHint::kSkip;
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle&) {
  framework::ExpectNoArgs(args);
  return std::make_shared<SchedulingGates>();
}

}  // namespace berth::plugins::schedulinggates
