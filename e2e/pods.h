#ifndef BERTH_E2E_PODS_H_
#define BERTH_E2E_PODS_H_

// Pod workloads shared by the e2e scenarios.

#include <map>
#include <string>

#include "pkg/client/client.h"
#include "test/testing/cluster.h"

namespace berth::e2e {

// Creates `count` pods "<prefix>-<i>" for `scheduler_name` in `ns`, restricted to `nodes`.
void CreatePods(client::Client& client, const std::string& ns, const std::string& prefix, int count,
                const std::string& scheduler_name, const testing::TestNodes& nodes);

// Pod name -> spec.nodeName ("" while pending) for every pod in `ns`.
std::map<std::string, std::string> PodNodes(client::Client& client, const std::string& ns);

// Whether every pod whose name starts with `prefix` in `ns` is bound (and there are `count`).
bool AllBound(client::Client& client, const std::string& ns, const std::string& prefix, int count);

// Pod name -> how many times a "Scheduled" event reports it (series counts included).
std::map<std::string, int> ScheduledEvents(client::Client& client, const std::string& ns);

}  // namespace berth::e2e

#endif  // BERTH_E2E_PODS_H_
