#ifndef BERTH_PKG_SCHEDULER_DEBUG_ENDPOINTS_H_
#define BERTH_PKG_SCHEDULER_DEBUG_ENDPOINTS_H_

// The /debug/ endpoints of the serving port. They are on by default and reveal pod and node names:
// on the secure port to whoever is authorized for GET (POST for simulate) on the /debug/ paths,
// on the insecure --port to anyone who reaches it. --enable-debug-endpoints=false turns them off
// (the chart's server.debugEndpoints=false), and their paths are then 404 like any unknown one.
//
//   GET  /debug/pods/{namespace}/{name}  the pod's last attempt and what would make it fit
//   GET  /debug/pods?pending=true        every pending pod with its one-line reason, newest first
//   GET  /debug/pods                     the same, then the recent binding decisions
//   POST /debug/simulate                 a dry run of the Pod in the body (YAML or JSON)
//
// Each answers JSON, or with ?format=text the table berth-scheduler explain prints. Bad input
// gets 400 with a message that names the field.

#include <string>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/config/load.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/server/server.h"

namespace berth::scheduler {

server::DebugResponse ServeDebug(Scheduler& scheduler, const server::DebugRequest& request);

// Pods a person wrote (YAML documents, a JSON object, or a v1 List of Pods), decoded as the
// informer decodes the apiserver's: untrusted input, so nesting and size are bounded and every
// problem throws std::invalid_argument naming `source` and the field. A pod without a namespace
// is in "default"; without spec.schedulerName it gets `default_profile`; without a uid, a made-up
// one. /debug/simulate passes Aliases::kRefuse for its request bodies; a file named on the command
// line may use aliases, within the bound on their expansion (config::YamlDocumentsToJson).
std::vector<api::Pod> PodsFromText(const std::string& text, const std::string& source,
                                   const std::string& default_profile,
                                   config::Aliases aliases = config::Aliases::kAllow);

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_DEBUG_ENDPOINTS_H_
