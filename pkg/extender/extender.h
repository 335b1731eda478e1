#ifndef BERTH_PKG_EXTENDER_EXTENDER_H_
#define BERTH_PKG_EXTENDER_EXTENDER_H_

// kube-scheduler's HTTP extenders (KubeSchedulerConfiguration's `extenders`), as kube-scheduler
// v1.37 calls them: POST <urlPrefix>/<verb> with the v1 extender JSON (pkg/extender/wire.h) for
// filter, prioritize, preempt and bind, over pkg/client's libcurl transport (HTTP/2 where offered,
// connections kept alive, a bounded response, the httpTimeout for the whole exchange). The
// scheduler and DefaultPreemption call them through framework::Extender; this layer's contract is
// Build.
//
// Where Berth differs from upstream, on purpose:
// - TLS is verified unless tlsConfig.insecure says otherwise. Upstream skips verification when
//   enableHTTPS is set without a CA; Berth verifies against the system's roots then.
// - A non-nodeCacheCapable extender's filter answer is matched to the nodes it was sent by name.
//   Upstream scores the Node objects the extender returns as nodes without pods; a node that was
//   not sent is an error, as it is upstream for nodeCacheCapable extenders.
// - A response over 64 MiB, or nested deeper than 512 levels, is an error on that pod.

#include <memory>
#include <string>
#include <vector>

#include "pkg/config/config.h"
#include "pkg/framework/interface.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace berth::extender {

// The extenders of `extenders`, ignorable ones moved last (upstream's order). TLS files are read
// here. Throws config::ConfigError (source `source`, fields "extenders[i]....") for a managed
// resource that is not an extended resource name, an unreadable file or TLS material libcurl
// refuses. With `registry`, each extender's calls are counted and timed there:
// berth_extender_request_duration_seconds{extender, verb, result} and
// berth_extender_request_errors_total{extender, verb, reason}.
std::vector<std::shared_ptr<framework::Extender>> Build(
    const std::vector<config::Extender>& extenders, const std::string& source,
    prometheus::Registry* registry);

}  // namespace berth::extender

#endif  // BERTH_PKG_EXTENDER_EXTENDER_H_
