#ifndef BERTH_E2E_HARNESS_H_
#define BERTH_E2E_HARNESS_H_

// Whole-system pieces for e2e tests: berth-scheduler as a real process with its secure port, a
// ServiceAccount whose token may read its metrics, and a real Prometheus server (the Debian
// package) scraping it over HTTPS with that token. Processes run on loopback ports picked at start
// and are stopped when the objects go away.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth::e2e {

struct HttpReply {
  int status = 0;  // 0: no connection.
  std::string body;
};

// GET with a short timeout, sending "Authorization: Bearer <token>" when a token is given and
// presenting the client certificate of those PEM files when they are given. The server's
// certificate is not verified: berth-scheduler's is self-signed, made at its start. Never throws.
HttpReply HttpGet(const std::string& url, const std::string& token = "",
                  const std::string& cert_file = "", const std::string& key_file = "");

// What the chart's metrics-reader ClusterRole grants: get on /metrics.
nlohmann::json MetricsReaderRules();

// The token of a ServiceAccount (in "default") bound to MetricsReaderRules, made on first use and
// removed when the test process exits: what BerthProcess::Metric and Prometheus scrape with.
const std::string& ScraperToken();

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

  // "https://127.0.0.1:<secure port>".
  const std::string& url() const { return url_; }
  const std::string& address() const { return address_; }  // host:port for scrape configs.
  testing::ChildProcess& process() { return *process_; }
  std::string Log() const { return process_->Log(); }
  // The value of one sample line in /metrics ("name{labels}" as printed) read with
  // ScraperToken(), or nullopt.
  std::optional<double> Metric(const std::string& series);

 private:
  std::string address_;
  std::string url_;
  std::unique_ptr<testing::ChildProcess> process_;
};

// How Prometheus scrapes: what a ServiceMonitor endpoint would say.
struct ScrapeOptions {
  std::string metrics_path = "/metrics";
  std::string scheme = "https";
  // The token Prometheus sends, read from this file (a ServiceMonitor's bearerTokenFile); empty:
  // none.
  std::string bearer_token_file;
  bool insecure_skip_verify = true;
};

// A Prometheus server scraping `targets` (host:port) every second.
class Prometheus {
 public:
  Prometheus(const std::vector<std::string>& targets, const ScrapeOptions& options);
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
