#ifndef BERTH_PKG_PLUGINS_REGISTRY_REGISTRY_H_
#define BERTH_PKG_PLUGINS_REGISTRY_REGISTRY_H_

// Plugin name -> factory. The scheduler knows plugins only through this map and the config.
//
// Out-of-tree plugins (the KEP's "custom scheduler plugins") register themselves with a static
// Registration object in their own .cc and are compiled into a scheduler binary with the CMake
// function berth_scheduler_binary() (see README "Writing a plugin"), which links them whole so
// the registration runs.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/config/config.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/runtime/framework.h"

namespace berth::plugins::registry {

// The plugins that ship with Berth.
framework::runtime::Registry InTree();

// InTree() plus every out-of-tree plugin linked into this binary. Throws std::logic_error when an
// out-of-tree plugin reuses an in-tree name.
framework::runtime::Registry Registry();

// Checks `plugin`'s pluginConfig args with the plugin's own parser (what its factory would run)
// without building it: every problem, each issue's field its path inside the args. A
// config::ArgsValidator for config::LoadFile. Plugins it does not know (out-of-tree ones) pass
// here; their factories still check their args when the framework builds them.
std::vector<config::ConfigIssue> ValidateArgs(const std::string& plugin,
                                              const nlohmann::json& args);

// Registers an out-of-tree plugin at static-initialization time:
//   static const berth::plugins::registry::Registration kRegistration("MyPlugin", &New);
class Registration {
 public:
  Registration(std::string name, framework::PluginFactory factory);
};

}  // namespace berth::plugins::registry

#endif  // BERTH_PKG_PLUGINS_REGISTRY_REGISTRY_H_
