#ifndef BERTH_CMD_BERTH_SCHEDULER_TOOLS_H_
#define BERTH_CMD_BERTH_SCHEDULER_TOOLS_H_

// berth-scheduler's commands for people, besides running the scheduler:
//
//   berth-scheduler explain NAMESPACE/NAME [--server URL]
//       why the pod is Pending and what would make it fit (GET /debug/pods/...)
//   berth-scheduler simulate -f pod.yaml [--server URL]
//       a dry run of the pod on the running scheduler's cluster (POST /debug/simulate)
//   berth-scheduler simulate --cluster dump.json -f pods.yaml [--config FILE]
//       offline: the pods scheduled one after the other onto the nodes and pods of a
//       `kubectl get nodes,pods -A -o json` dump, without an apiserver
//
// The first two ask the scheduler's secure port with a bearer token whose user may get
// /debug/pods/* (and post /debug/simulate).

namespace berth::cmd {

// Whether argv names one of the commands above.
bool IsTool(int argc, char** argv);
// Runs it; returns the exit code (0 done, 1 failed, 2 bad usage).
int RunTool(int argc, char** argv);

}  // namespace berth::cmd

#endif  // BERTH_CMD_BERTH_SCHEDULER_TOOLS_H_
