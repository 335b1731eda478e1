#ifndef BERTH_E2E_DIFF_H_
#define BERTH_E2E_DIFF_H_

// What the differential tests against kube-scheduler share: a pod that has settled (bound, or
// told why not), the PodScheduled message of a pending one, the nodes outside a test (which the
// messages count too), and kube-scheduler's configuration for them.

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "pkg/client/client.h"

namespace berth::e2e {

// $BERTH_DIFF_SEED, else `seed`; printed with `what`, so that a failure can be replayed.
unsigned DiffSeed(unsigned seed, const std::string& what);

// Bound, or given a PodScheduled=False condition by its scheduler.
bool Settled(const nlohmann::json& pod);

// The message of the pod's PodScheduled condition: its scheduler's last FailedScheduling message
// for a pending pod. "(no PodScheduled condition)" when there is none.
std::string PodScheduledMessage(const nlohmann::json& pod);

// The names of the nodes not labelled berth-it=<run>.
std::set<std::string> ForeignNodes(client::Client& client, const std::string& run);

// Deletes every pod of `ns` at once and waits until they are gone (a test failure otherwise).
void DeletePods(client::Client& client, const std::string& ns);

// Removes `dir` (kube-scheduler's configuration and log) after a success; after a failure keeps it
// and says where.
void KeepLogsIfFailed(const std::string& dir, bool failed, const std::string& what);

// kube-scheduler with one profile named `scheduler_name` and its default plugins, preemption
// included.
std::string KubeSchedulerDiffConfig(const std::string& scheduler_name);

}  // namespace berth::e2e

#endif  // BERTH_E2E_DIFF_H_
