#include "e2e/harness.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "test/testing/http_call.h"

namespace berth::e2e {

HttpReply HttpGet(const std::string& url, const std::string& token, const std::string& cert_file,
                  const std::string& key_file) {
  testing::HttpCallOptions options;
  options.token = token;
  options.insecure = true;
  options.cert_file = cert_file;
  options.key_file = key_file;
  options.timeout = std::chrono::seconds(5);
  try {
    const testing::HttpResult result = testing::HttpCall(url, options);
    return {result.status, result.body};
  } catch (const std::exception&) {
    return {};
  }
}

nlohmann::json MetricsReaderRules() {
  return nlohmann::json::parse(R"([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])");
}

const std::string& ScraperToken() {
  struct Scraper {
    explicit Scraper(const std::string& name)
        : account(testing::AdminClient(), "default", name),
          grant(testing::AdminClient(), name, MetricsReaderRules(), account.Subject()) {
      if (!testing::WaitUntilAllowed(*testing::AdminClient(), account.UserName(), "get", "/metrics",
                                     true)) {
        throw std::runtime_error("RBAC never allowed " + account.UserName() + " to get /metrics");
      }
    }
    testing::ServiceAccountToken account;
    testing::ClusterRoleGrant grant;
  };
  static const Scraper scraper("berth-e2e-scraper-" + testing::UniqueSuffix());
  return scraper.account.token();
}

std::string SchedulerConfig(const std::string& scheduler_name, bool leader_elect,
                            const std::string& lease_name) {
  return "apiVersion: kubescheduler.config.k8s.io/v1\n"
         "kind: KubeSchedulerConfiguration\n"
         "leaderElection:\n"
         "  leaderElect: " +
         std::string(leader_elect ? "true" : "false") +
         "\n"
         "  resourceNamespace: kube-system\n"
         "  resourceName: " +
         lease_name +
         "\n"
         "profiles:\n"
         "- schedulerName: " +
         scheduler_name + "\n";
}

BerthProcess::BerthProcess(const std::string& name, const std::string& config_yaml,
                           const std::string& kubeconfig, const std::vector<std::string>& extra,
                           const std::string& binary) {
  const std::string port = std::to_string(testing::FreePort());
  address_ = "127.0.0.1:" + port;
  url_ = "https://" + address_;
  auto config_path = testing::WriteTempFile(name + ".yaml", config_yaml);
  std::vector<std::string> argv = {
      testing::BinaryPath(binary),
      "--config",
      config_path,
      "--kubeconfig",
      kubeconfig.empty() ? testing::ClusterDir() + "/kubeconfig" : kubeconfig,
      "--secure-port",
      port,
      "--bind-address",
      "127.0.0.1",
      "--v",
      "2"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  process_ = std::make_unique<testing::ChildProcess>();
  process_->Start(argv, config_path + ".log");
  // The endpoint comes up before the first connection to the apiserver.
  for (int i = 0; i < 100 && HttpGet(url_ + "/livez").status != 200; i++) {
    if (!process_->Running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

BerthProcess::~BerthProcess() {
  if (process_ && process_->Running()) process_->Stop(SIGTERM, std::chrono::seconds(20));
}

std::optional<double> BerthProcess::Metric(const std::string& series) {
  HttpReply reply = HttpGet(url_ + "/metrics", ScraperToken());
  std::istringstream in(reply.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

Prometheus::Prometheus(const std::vector<std::string>& targets, const ScrapeOptions& options) {
  if (!std::filesystem::exists("/usr/bin/prometheus")) {
    throw std::runtime_error("/usr/bin/prometheus is missing: run deploy/install-deps.sh");
  }
  dir_ = std::filesystem::temp_directory_path() / ("berth-prometheus-" + testing::UniqueSuffix());
  std::filesystem::create_directories(dir_ + "/data");
  std::string target_list;
  for (const auto& t : targets) target_list += (target_list.empty() ? "'" : ", '") + t + "'";
  std::ofstream config(dir_ + "/prometheus.yml");
  config << "global:\n"
            "  scrape_interval: 1s\n"
            "  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            "- job_name: berth-scheduler\n"
            "  metrics_path: "
         << options.metrics_path << "\n  scheme: " << options.scheme << "\n";
  if (!options.bearer_token_file.empty()) {
    config << "  authorization:\n    type: Bearer\n    credentials_file: "
           << options.bearer_token_file << "\n";
  }
  config << "  tls_config:\n    insecure_skip_verify: "
         << (options.insecure_skip_verify ? "true" : "false")
         << "\n"
            "  static_configs:\n"
            "  - targets: ["
         << target_list << "]\n";
  config.close();
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  url_ = "http://" + address;
  process_ = std::make_unique<testing::ChildProcess>();
  process_->Start({"/usr/bin/prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                   "--storage.tsdb.path=" + dir_ + "/data", "--web.listen-address=" + address,
                   "--log.level=warn"},
                  dir_ + "/prometheus.log");
  for (int i = 0; i < 200 && HttpGet(url_ + "/-/ready").status != 200; i++) {
    if (!process_->Running()) throw std::runtime_error("prometheus exited: " + Log());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Prometheus::~Prometheus() {
  if (process_ && process_->Running()) process_->Stop(SIGTERM, std::chrono::seconds(10));
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::optional<double> Prometheus::Query(const std::string& promql) {
  HttpReply reply = HttpGet(url_ + "/api/v1/query?query=" + testing::PercentEncode(promql));
  if (reply.status != 200) return std::nullopt;
  auto body = nlohmann::json::parse(reply.body, nullptr, false);
  if (body.is_discarded() || body.value("status", "") != "success") return std::nullopt;
  const auto& result = body["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

}  // namespace berth::e2e
