#ifndef BERTH_PKG_PLUGINS_REGISTRY_REGISTRY_H_
#define BERTH_PKG_PLUGINS_REGISTRY_REGISTRY_H_

// Plugin name -> factory. The scheduler knows plugins only through this map and the config.
//
// Out-of-tree plugins (the KEP's "custom scheduler plugins") register themselves with a static
// Registration object in their own .cc and are compiled into a scheduler binary with the CMake
// function berth_scheduler_binary() (see README "Writing a plugin"), which links them whole so
// the registration runs.

#include <string>

#include "pkg/framework/interface.h"
#include "pkg/framework/runtime/framework.h"

namespace berth::plugins::registry {

// The plugins that ship with Berth.
framework::runtime::Registry InTree();

// InTree() plus every out-of-tree plugin linked into this binary. Throws std::logic_error when an
// out-of-tree plugin reuses an in-tree name.
framework::runtime::Registry Registry();

// Registers an out-of-tree plugin at static-initialization time:
//   static const berth::plugins::registry::Registration kRegistration("MyPlugin", &New);
class Registration {
 public:
  Registration(std::string name, framework::PluginFactory factory);
};

}  // namespace berth::plugins::registry

#endif  // BERTH_PKG_PLUGINS_REGISTRY_REGISTRY_H_
