#ifndef BERTH_PKG_PLUGINS_SCHEDULINGGATES_SCHEDULINGGATES_H_
#define BERTH_PKG_PLUGINS_SCHEDULINGGATES_SCHEDULINGGATES_H_

// SchedulingGates: keeps a pod out of activeQ while it carries spec.schedulingGates, and lets the
// queue release it on the update that removes the last gate.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::plugins::schedulinggates {

inline constexpr std::string_view kName = "SchedulingGates";
// The PreEnqueue message is this prefix followed by the gate names as Go prints a []string:
// "waiting for scheduling gates: [gate1 gate2]".
inline constexpr std::string_view kReasonPrefix = "waiting for scheduling gates: ";

// Stateless; every method is safe to call from any thread.
class SchedulingGates final : public framework::PreEnqueuePlugin,
                              public framework::EnqueueExtensions {
 public:
  std::string_view Name() const override { return kName; }
  framework::Status PreEnqueue(const api::Pod& pod) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
};

// Queues `pod` only for an update of `pod` itself that left it without gates.
framework::QueueingHint IsSchedulableAfterGatesChange(const api::Pod& pod,
                                                      const framework::EventObjects& event);

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::schedulinggates

#endif  // BERTH_PKG_PLUGINS_SCHEDULINGGATES_SCHEDULINGGATES_H_
