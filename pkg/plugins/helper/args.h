#ifndef BERTH_PKG_PLUGINS_HELPER_ARGS_H_
#define BERTH_PKG_PLUGINS_HELPER_ARGS_H_

// What every plugin's args decoder checks first.

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string_view>

namespace berth::plugins::helper {

// Throws std::invalid_argument ("args: expected object, got array", "<key>: unknown field")
// unless `args` is null or an object whose keys are all in `fields`. apiVersion and kind, which
// kube-scheduler files carry inside args, are always accepted.
void ExpectArgsFields(const nlohmann::json& args, std::initializer_list<std::string_view> fields);

}  // namespace berth::plugins::helper

#endif  // BERTH_PKG_PLUGINS_HELPER_ARGS_H_
