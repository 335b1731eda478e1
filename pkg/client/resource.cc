#include "pkg/client/client.h"

namespace berth::client {

std::string Resource::Path(const std::string& ns, const std::string& name,
                           const std::string& subresource) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  // A namespace on a cluster-scoped resource is ignored rather than producing a path the
  // apiserver would 404 on.
  if (namespaced && !ns.empty()) path += "/namespaces/" + ns;
  path += "/" + plural;
  if (!name.empty()) {
    path += "/" + name;
    if (!subresource.empty()) path += "/" + subresource;
  }
  return path;
}

Resource PodsResource() { return Resource{"", "v1", "pods", true}; }
Resource NodesResource() { return Resource{"", "v1", "nodes", false}; }
Resource EventsResource() { return Resource{"events.k8s.io", "v1", "events", true}; }
Resource LeasesResource() { return Resource{"coordination.k8s.io", "v1", "leases", true}; }

const char* BerthVersion() { return BERTH_VERSION; }

}  // namespace berth::client
