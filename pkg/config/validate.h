#ifndef BERTH_PKG_CONFIG_VALIDATE_H_
#define BERTH_PKG_CONFIG_VALIDATE_H_

#include <set>
#include <string>
#include <vector>

#include "pkg/config/config.h"

namespace berth::config {

// Every problem in a defaulted Configuration (profiles' plugins already merged with the
// defaults), following upstream's ValidateKubeSchedulerConfiguration plus the checks upstream
// leaves to framework construction that can be decided from the configuration alone: plugin
// names must be in `known_plugins`, and each profile must be able to sort its queue and bind.
// Empty when valid. Field paths refer to the merged configuration.
std::vector<ConfigIssue> Validate(const Configuration& config,
                                  const std::set<std::string>& known_plugins);

// "unknown plugin \"<name>\"; known plugins: A, B, C" (sorted).
std::string UnknownPluginProblem(const std::string& name,
                                 const std::set<std::string>& known_plugins);

}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_VALIDATE_H_
