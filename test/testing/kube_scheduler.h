#ifndef BERTH_TEST_TESTING_KUBE_SCHEDULER_H_
#define BERTH_TEST_TESTING_KUBE_SCHEDULER_H_

// kube-scheduler built from the pinned Kubernetes release (deploy/build-tools.sh kube-scheduler),
// run as a child process against the local control plane: the reference Berth's behaviour and
// speed are compared with, by the e2e differential test and by bench_e2e.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "test/testing/process.h"

namespace berth::testing {

// _output/tools/kube-scheduler; throws std::runtime_error naming the command that builds it when
// it is missing.
std::string KubeSchedulerBinary();

// The head of a KubeSchedulerConfiguration shared by every use here: the client connects through
// `kubeconfig` with `qps` (and the same burst), and there is no leader election, so a start is
// ready as soon as its informers sync. A "profiles:" list follows it.
std::string KubeSchedulerConfigHead(const std::string& kubeconfig, double qps);

// GET `url` with a 2 s timeout, not validating the certificate (kube-scheduler serves its probes
// with a self-signed one); the HTTP status, or 0 when there was no reply. Never throws.
int HttpStatus(const std::string& url);

// The feature gates the local control plane's apiserver was started with for upstream's workload
// API (BERTH_WORKLOAD_FEATURE_GATES in its env file: GenericWorkload and
// TopologyAwareWorkloadScheduling with BERTH_GENERIC_WORKLOAD=1), as --feature-gates takes them;
// empty without them or for a cluster whose env file predates the setting.
std::string ClusterWorkloadFeatureGates();

// One kube-scheduler process with `config_yaml` written to `dir`/kube-scheduler.yaml, serving on a
// free loopback port with its self-signed certificate in `dir`/certs and its log in
// `dir`/kube-scheduler.log. Authentication and authorization of its endpoint go through the
// cluster's admin kubeconfig. It gets the cluster's workload feature gates
// (ClusterWorkloadFeatureGates), so it serves upstream's PodGroups as the apiserver does, with
// upstream's gang plugins in its default profile; `extra_args` are appended to its command line
// (a further --feature-gates=... adds to those). Stopped (SIGTERM) when the object goes away.
class KubeSchedulerProcess {
 public:
  KubeSchedulerProcess(const std::string& config_yaml, const std::string& dir,
                       const std::vector<std::string>& extra_args = {});
  ~KubeSchedulerProcess();
  KubeSchedulerProcess(const KubeSchedulerProcess&) = delete;
  KubeSchedulerProcess& operator=(const KubeSchedulerProcess&) = delete;

  bool Ready() { return HttpStatus(ready_url_) == 200; }
  const std::string& ready_url() const { return ready_url_; }
  // Waits until /readyz answers 200; false when the process exits or `timeout` passes first.
  bool WaitReady(std::chrono::milliseconds timeout);
  ChildProcess& process() { return *process_; }

 private:
  std::string ready_url_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_KUBE_SCHEDULER_H_
