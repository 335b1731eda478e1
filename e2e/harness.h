#ifndef BERTH_E2E_HARNESS_H_
#define BERTH_E2E_HARNESS_H_

// Whole-system pieces for e2e tests: berth-scheduler as a real process with its HTTP endpoint, and
// a real Prometheus server (the Debian package) scraping it. Both run on loopback ports picked at
// start and are stopped when the objects go away.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test/testing/process.h"

namespace berth::e2e {

struct HttpReply {
  int status = 0;  // 0: no connection.
  std::string body;
};

// GET with a short timeout; never throws.
HttpReply HttpGet(const std::string& url);

// A KubeSchedulerConfiguration with one profile named `scheduler_name` (default plugins) and
// leader election as given (lease kube-system/`lease_name`, upstream default timings).
std::string SchedulerConfig(const std::string& scheduler_name, bool leader_elect,
                            const std::string& lease_name = "berth-scheduler");

// berth-scheduler running against the local control plane.
class BerthProcess {
 public:
  // `kubeconfig` empty: the admin kubeconfig. Extra flags are appended. `binary` is a target in
  // _output/bin: berth-scheduler, or one built with berth_scheduler_binary() and more plugins.
  BerthProcess(const std::string& name, const std::string& config_yaml,
               const std::string& kubeconfig = "", const std::vector<std::string>& extra = {},
               const std::string& binary = "berth-scheduler");
  ~BerthProcess();

  const std::string& url() const { return url_; }
  const std::string& address() const { return address_; }  // host:port for scrape configs.
  testing::ChildProcess& process() { return *process_; }
  std::string Log() const { return process_->Log(); }
  // The value of one sample line in /metrics ("name{labels}" as printed), or nullopt.
  std::optional<double> Metric(const std::string& series);

 private:
  std::string address_;
  std::string url_;
  std::unique_ptr<testing::ChildProcess> process_;
};

// A Prometheus server scraping `metrics_path` on `targets` (host:port) every second.
class Prometheus {
 public:
  explicit Prometheus(const std::vector<std::string>& targets,
                      const std::string& metrics_path = "/metrics");
  ~Prometheus();

  // The single value of an instant query, or nullopt when it returned no series (or failed).
  std::optional<double> Query(const std::string& promql);
  std::string Log() const { return process_->Log(); }

 private:
  std::string dir_;
  std::string url_;
  std::unique_ptr<testing::ChildProcess> process_;
};

}  // namespace berth::e2e

#endif  // BERTH_E2E_HARNESS_H_
