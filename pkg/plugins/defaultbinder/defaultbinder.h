#ifndef BERTH_PKG_PLUGINS_DEFAULTBINDER_DEFAULTBINDER_H_
#define BERTH_PKG_PLUGINS_DEFAULTBINDER_DEFAULTBINDER_H_

// DefaultBinder: binds a pod by POSTing a v1 Binding to the pod's binding subresource.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pkg/framework/interface.h"

namespace berth::plugins::defaultbinder {

inline constexpr std::string_view kName = "DefaultBinder";
inline constexpr std::string_view kErrNoClient = "no client to bind with";

// Holds only the handle, which the framework keeps alive for as long as its plugins. Bind is
// safe to call concurrently for different pods (the client is thread-safe).
class DefaultBinder final : public framework::BindPlugin {
 public:
  explicit DefaultBinder(framework::Handle& handle) : handle_(handle) {}

  std::string_view Name() const override { return kName; }
  // Error on any API failure (its message included), or when the handle has no client.
  framework::Status Bind(framework::CycleState& state, const api::Pod& pod,
                         const std::string& node) override;

 private:
  framework::Handle& handle_;
};

// Takes no args: throws std::invalid_argument for anything but null or an empty object.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::defaultbinder

#endif  // BERTH_PKG_PLUGINS_DEFAULTBINDER_DEFAULTBINDER_H_
