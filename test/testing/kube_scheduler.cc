#include "test/testing/kube_scheduler.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "test/testing/cluster.h"
#include "test/testing/http_call.h"

namespace berth::testing {

std::string KubeSchedulerBinary() {
  std::string path = RepoRoot() + "/_output/tools/kube-scheduler";
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error(path +
                             " is missing: build it with `deploy/build-tools.sh kube-scheduler` "
                             "(`make test` and `make bench-e2e` do)");
  }
  return path;
}

std::string KubeSchedulerConfigHead(const std::string& kubeconfig, double qps) {
  std::ostringstream out;
  out << "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
      << "clientConnection:\n  kubeconfig: " << kubeconfig << "\n  qps: " << qps
      << "\n  burst: " << static_cast<int>(qps) << "\nleaderElection:\n  leaderElect: false\n";
  return out.str();
}

std::string ClusterWorkloadFeatureGates() {
  constexpr std::string_view kPrefix = "export BERTH_WORKLOAD_FEATURE_GATES=";
  std::ifstream env(ClusterDir() + "/env");
  for (std::string line; std::getline(env, line);) {
    if (line.starts_with(kPrefix)) return line.substr(kPrefix.size());
  }
  return "";
}

int HttpStatus(const std::string& url) {
  try {
    HttpCallOptions options;
    options.insecure = true;
    options.timeout = std::chrono::seconds(2);
    return HttpCall(url, options).status;
  } catch (const std::exception&) {
    return 0;
  }
}

KubeSchedulerProcess::KubeSchedulerProcess(const std::string& config_yaml, const std::string& dir,
                                           const std::vector<std::string>& extra_args) {
  const std::string binary = KubeSchedulerBinary();
  const std::string kubeconfig = ClusterDir() + "/kubeconfig";
  const std::string port = std::to_string(FreePort());
  std::filesystem::create_directories(dir + "/certs");
  std::ofstream(dir + "/kube-scheduler.yaml") << config_yaml;
  ready_url_ = "https://127.0.0.1:" + port + "/readyz";
  process_ = std::make_unique<ChildProcess>();
  std::vector<std::string> args = {binary,
                                   "--config=" + dir + "/kube-scheduler.yaml",
                                   "--secure-port=" + port,
                                   "--bind-address=127.0.0.1",
                                   "--cert-dir=" + dir + "/certs",
                                   "--authentication-kubeconfig=" + kubeconfig,
                                   "--authorization-kubeconfig=" + kubeconfig,
                                   "--v=0"};
  // kube-scheduler adds up repeated --feature-gates flags.
  if (const std::string gates = ClusterWorkloadFeatureGates(); !gates.empty()) {
    args.push_back("--feature-gates=" + gates);
  }
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  process_->Start(args, dir + "/kube-scheduler.log");
}

KubeSchedulerProcess::~KubeSchedulerProcess() {
  if (process_->Running()) process_->Stop(SIGTERM, std::chrono::seconds(30));
}

bool KubeSchedulerProcess::WaitReady(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Ready()) {
    if (!process_->Running() || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace berth::testing
