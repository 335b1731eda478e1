#ifndef BERTH_PKG_CONFIG_VALIDATE_H_
#define BERTH_PKG_CONFIG_VALIDATE_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "pkg/config/config.h"

namespace berth::config {

// Checks one plugin's pluginConfig args and returns every problem, each issue's field being its
// path inside the args ("" for the args themselves). Whoever knows the plugins provides it
// (plugins::registry::ValidateArgs); this package knows none.
using ArgsValidator =
    std::function<std::vector<ConfigIssue>(const std::string& plugin, const nlohmann::json& args)>;

// Every problem in a defaulted Configuration (profiles' plugins already merged with the
// defaults), following upstream's ValidateKubeSchedulerConfiguration plus the checks upstream
// leaves to framework construction that can be decided from the configuration alone: plugin
// names must be in `known_plugins`, and each profile must be able to sort its queue and bind.
// Empty when valid. Field paths refer to the merged configuration. With `validate_args`, every
// pluginConfig entry of a known plugin has its args checked too, as upstream does whether or not
// the plugin is enabled, each problem named by its full path
// (profiles[0].pluginConfig[2].args.scoringStrategy.resources[1].weight).
std::vector<ConfigIssue> Validate(const Configuration& config,
                                  const std::set<std::string>& known_plugins,
                                  const ArgsValidator& validate_args = {});

// "unknown plugin \"<name>\"; known plugins: A, B, C" (sorted).
std::string UnknownPluginProblem(const std::string& name,
                                 const std::set<std::string>& known_plugins);

}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_VALIDATE_H_
