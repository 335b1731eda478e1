#ifndef BERTH_PKG_PLUGINS_DEFAULTBINDER_DEFAULTBINDER_H_
#define BERTH_PKG_PLUGINS_DEFAULTBINDER_DEFAULTBINDER_H_

// DefaultBinder: binds a pod by POSTing a v1 Binding to the pod's binding subresource.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pkg/framework/interface.h"

namespace berth::plugins::defaultbinder {

inline constexpr std::string_view kName = "DefaultBinder";
inline constexpr std::string_view kErrNoClient = "no client to bind with";

// How long Bind keeps settling a binding whose outcome is unknown, and the pause between tries.
struct RetryPolicy {
  // Covers an apiserver restart (seconds) with room to spare; a longer outage ends the binding
  // cycle with the outcome still unknown.
  std::chrono::milliseconds budget = std::chrono::seconds(60);
  std::chrono::milliseconds initial_backoff = std::chrono::milliseconds(200);
  std::chrono::milliseconds max_backoff = std::chrono::seconds(5);
};

// Bind reports success exactly when the pod ends up bound to the node. A binding whose response
// was lost (connection cut, apiserver killed, timeout, 5xx) may have been applied all the same;
// reporting that as a failure would make the scheduler forget the pod and free its room on the
// node while the apiserver has it there, and the next pod placed into that room over-commits the
// node. So such a binding is sent again until the apiserver answers, and an "already assigned"
// answer is checked against the pod itself: bound to this very node is a success.
//
// BindAsync sends the first try with no thread waiting for it and settles what that try settles:
// bound, or refused for good. Anything else (answer lost, already assigned, worth retrying) it
// leaves to Bind, which starts over with the same rules.
//
// Holds only the handle, which the framework keeps alive for as long as its plugins. Bind and
// BindAsync are safe to call concurrently for different pods (the client is thread-safe).
class DefaultBinder final : public framework::AsyncBindPlugin {
 public:
  explicit DefaultBinder(framework::Handle& handle, RetryPolicy retry = {})
      : handle_(handle), retry_(retry) {}

  std::string_view Name() const override { return kName; }
  // Error on an API failure that leaves the pod unbound or bound elsewhere (its message
  // included), when the outcome is still unknown after the retry budget or at shutdown, or when
  // the handle has no client.
  framework::Status Bind(framework::CycleState& state, const api::Pod& pod,
                         const std::string& node) override;
  bool BindAsync(const api::Pod& pod, const std::string& node, BindDone done) override;

 private:
  framework::Handle& handle_;
  const RetryPolicy retry_;
};

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::defaultbinder

#endif  // BERTH_PKG_PLUGINS_DEFAULTBINDER_DEFAULTBINDER_H_
