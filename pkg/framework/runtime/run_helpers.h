#ifndef BERTH_PKG_FRAMEWORK_RUNTIME_RUN_HELPERS_H_
#define BERTH_PKG_FRAMEWORK_RUNTIME_RUN_HELPERS_H_

// What the framework's Run* methods share across the files that implement them.

#include <chrono>
#include <string>

#include "pkg/framework/interface.h"

namespace berth::framework::runtime::internal {

using Clock = std::chrono::steady_clock;

inline double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Per-plugin durations are sampled; reading the clock around every Filter and Score call of an
// unsampled cycle would cost more than the plugins themselves.
inline Clock::time_point PluginStart(const CycleState& state) {
  return state.record_plugin_metrics ? Clock::now() : Clock::time_point();
}

// A plugin's failure as the error the cycle reports, naming the plugin.
inline Status AsError(const std::string& what, const std::string& plugin, const Status& s) {
  Status error = Status::Error(what + " " + plugin + ": " + s.Message());
  error.WithPlugin(plugin);
  return error;
}

}  // namespace berth::framework::runtime::internal

#endif  // BERTH_PKG_FRAMEWORK_RUNTIME_RUN_HELPERS_H_
