// The chart's RBAC, config and arguments are enough to run Berth, and not an inch more: helm
// installs charts/berth into the local apiserver; berth-scheduler then runs as a process with the
// chart's identity (a TokenRequest token for its ServiceAccount in a directory laid out like the
// mounted service-account volume, KUBERNETES_SERVICE_HOST/PORT set), the chart's ConfigMap and
// the Deployment's arguments. It binds pods, records events and holds its Lease; Prometheus
// scrapes its secure port as the chart's ServiceMonitor says, with the token of a ServiceAccount
// the chart bound to its metrics-reader ClusterRole (so the scheduler's own identity must be able
// to review tokens and access). With one needed rule removed it reports the Forbidden error and
// stays not-ready instead of stalling silently.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "e2e/harness.h"
#include "e2e/pods.h"
#include "test/packaging/chart.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// `helm install` on construction, `helm uninstall` (which removes the cluster-scoped RBAC) on
// destruction.
class HelmRelease {
 public:
  HelmRelease(std::string name, std::string ns, const std::vector<std::string>& sets)
      : name_(std::move(name)), ns_(std::move(ns)) {
    std::vector<std::string> argv = {packaging::ToolPath("helm"),
                                     "install",
                                     name_,
                                     packaging::ChartDir(),
                                     "--namespace",
                                     ns_,
                                     "--kubeconfig",
                                     testing::ClusterDir() + "/kubeconfig"};
    for (const auto& s : sets) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    auto result = packaging::RunCommand(argv);
    if (result.exit_code != 0) {
      throw std::runtime_error("helm install failed: " + result.err + result.out);
    }
  }
  ~HelmRelease() {
    packaging::RunCommand({packaging::ToolPath("helm"), "uninstall", name_, "--namespace", ns_,
                           "--kubeconfig", testing::ClusterDir() + "/kubeconfig"});
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::string ns_;
};

// The installed Deployment's pod spec, and what berth-scheduler needs from it to run here.
struct Installed {
  std::string service_account;
  std::string config_yaml;         // The ConfigMap's config file.
  std::vector<std::string> args;   // Container args, paths and address rewritten for here.
  int port = 0;                    // The secure port here (a free one, on loopback).
  ScrapeOptions scrape;            // From the chart's ServiceMonitor, but the token file.
  bool scrape_with_token = false;  // The ServiceMonitor sends Prometheus's own token.
  std::string lease_namespace, lease_name;
};

Installed ReadInstalled(client::Client& admin, const std::string& ns, const std::string& dir,
                        const std::string& release) {
  Installed out;
  auto deployments = admin.Get("/apis/apps/v1/namespaces/" + ns + "/deployments")["items"];
  if (deployments.size() != 1) throw std::runtime_error("expected one Deployment");
  const auto& pod = deployments[0]["spec"]["template"]["spec"];
  out.service_account = pod["serviceAccountName"];
  std::string config_map;
  for (const auto& v : pod["volumes"]) {
    if (v.contains("configMap")) config_map = v["configMap"]["name"];
  }
  auto cm = admin.Get("/api/v1/namespaces/" + ns + "/configmaps/" + config_map);
  auto services = admin.Get("/api/v1/namespaces/" + ns + "/services")["items"];
  if (services.size() != 1) throw std::runtime_error("expected one Service");
  if (services[0]["spec"]["ports"][0]["targetPort"] != pod["containers"][0]["ports"][0]["name"]) {
    throw std::runtime_error("the Service does not point at the container's port");
  }
  // The chart's port (10259) may be taken on this machine; the scheduler listens where told.
  out.port = testing::FreePort();

  const auto& container = pod["containers"][0];
  for (const auto& a : container["args"]) {
    std::string arg = a;
    if (arg.rfind("--config=", 0) == 0) {
      // The file the Deployment mounts from the ConfigMap, written here under the same name.
      const std::string file = fs::path(arg.substr(9)).filename();
      const std::string here = (fs::path(dir) / file).string();
      out.config_yaml = cm["data"][file];
      std::ofstream(here) << out.config_yaml;
      arg = "--config=" + here;
    } else if (arg.rfind("--secure-port=", 0) == 0) {
      arg = "--secure-port=" + std::to_string(out.port);
    } else if (arg.rfind("--bind-address=", 0) == 0) {
      arg = "--bind-address=127.0.0.1";
    }
    out.args.push_back(arg);
  }
  auto config = packaging::ParseYamlDocuments(out.config_yaml).at(0);
  out.lease_namespace = config["leaderElection"].value("resourceNamespace", "");
  out.lease_name = config["leaderElection"].value("resourceName", "");

  auto rendered = packaging::ParseYamlDocuments(
      packaging::HelmTemplate(release, ns, {}, {"serviceMonitor.enabled=true"}));
  const auto endpoint = packaging::OnlyOfKind(rendered, "ServiceMonitor")["spec"]["endpoints"][0];
  out.scrape.metrics_path = endpoint.value("path", "/metrics");
  out.scrape.scheme = endpoint.value("scheme", "http");
  out.scrape_with_token = endpoint.contains("bearerTokenFile");
  out.scrape.insecure_skip_verify =
      endpoint.contains("tlsConfig") && endpoint["tlsConfig"].value("insecureSkipVerify", false);
  return out;
}

// A directory laid out like /var/run/secrets/kubernetes.io/serviceaccount for `sa`.
std::string ServiceAccountVolume(client::Client& admin, const std::string& ns,
                                 const std::string& sa, const std::string& dir) {
  auto request = admin.Post("/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token",
                            {{"apiVersion", "authentication.k8s.io/v1"},
                             {"kind", "TokenRequest"},
                             {"spec", {{"expirationSeconds", 3600}}}});
  fs::create_directories(dir);
  std::ofstream(dir + "/token") << request["status"]["token"].get<std::string>();
  fs::copy_file(testing::ClusterDir() + "/pki/ca.crt", dir + "/ca.crt",
                fs::copy_options::overwrite_existing);
  std::ofstream(dir + "/namespace") << ns;
  return dir;
}

std::unique_ptr<testing::ChildProcess> RunAsChart(const Installed& installed,
                                                  const std::string& sa_dir,
                                                  const std::string& log) {
  const std::string server = testing::AdminConfig().server;  // https://127.0.0.1:PORT
  const std::string host_port = server.substr(server.find("://") + 3);
  const auto colon = host_port.rfind(':');
  std::vector<std::string> argv = {testing::BinaryPath("berth-scheduler")};
  argv.insert(argv.end(), installed.args.begin(), installed.args.end());
  auto proc = std::make_unique<testing::ChildProcess>();
  proc->Start(argv, log,
              {"KUBERNETES_SERVICE_HOST=" + host_port.substr(0, colon),
               "KUBERNETES_SERVICE_PORT=" + host_port.substr(colon + 1),
               "BERTH_SERVICE_ACCOUNT_DIR=" + sa_dir, "KUBECONFIG="});
  return proc;
}

TEST(ChartE2E, ChartIdentitySchedulesAndAMissingRuleIsReportedNotReady) {
  auto admin = testing::AdminClient();
  testing::TestNamespace ns(admin, "e2e-chart");
  testing::TestNodes nodes(admin);
  for (int i = 0; i < 2; i++) nodes.Add(std::to_string(i), "8", "16Gi");
  const std::string suffix = testing::UniqueSuffix();
  const std::string scheduler = "berth-chart-" + suffix;
  HelmRelease release(
      "berth-" + suffix, ns.name(),
      {"profiles[0].schedulerName=" + scheduler, "leaderElection.enabled=true",
       "logging.verbosity=2", "rbac.metricsReader.serviceAccounts[0].name=prometheus",
       "rbac.metricsReader.serviceAccounts[0].namespace=" + ns.name()});
  const std::string dir = fs::temp_directory_path() / ("berth-chart-e2e-" + suffix);
  fs::create_directories(dir);
  Installed installed = ReadInstalled(*admin, ns.name(), dir, release.name());
  ASSERT_EQ(installed.lease_namespace, ns.name()) << installed.config_yaml;
  const std::string sa_dir =
      ServiceAccountVolume(*admin, ns.name(), installed.service_account, dir + "/serviceaccount");
  const std::string url = "https://127.0.0.1:" + std::to_string(installed.port);
  // Prometheus's ServiceAccount, which the release bound to its metrics-reader ClusterRole.
  testing::ServiceAccountToken prometheus_account(admin, ns.name(), "prometheus");
  ASSERT_TRUE(installed.scrape_with_token);
  ASSERT_TRUE(testing::WaitUntilAllowed(*admin, prometheus_account.UserName(), "get", "/metrics"));
  installed.scrape.bearer_token_file = dir + "/prometheus-token";
  std::ofstream(installed.scrape.bearer_token_file) << prometheus_account.token();

  {
    auto berth = RunAsChart(installed, sa_dir, dir + "/berth.log");
    ASSERT_TRUE(testing::Eventually([&] { return HttpGet(url + "/readyz").status == 200; }, 30s))
        << HttpGet(url + "/readyz").body << berth->Log();
    Prometheus prometheus({"127.0.0.1:" + std::to_string(installed.port)}, installed.scrape);

    constexpr int kPods = 12;
    CreatePods(*admin, ns.name(), "p", kPods, scheduler, nodes);
    ASSERT_TRUE(testing::Eventually([&] { return AllBound(*admin, ns.name(), "p", kPods); }, 60s))
        << berth->Log();
    EXPECT_TRUE(testing::Eventually(
        [&] { return ScheduledEvents(*admin, ns.name()).size() == kPods; }, 20s))
        << berth->Log();
    auto lease = admin->Get("/apis/coordination.k8s.io/v1/namespaces/" + installed.lease_namespace +
                            "/leases/" + installed.lease_name);
    EXPECT_FALSE(lease["spec"].value("holderIdentity", "").empty());
    std::optional<double> scheduled;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          scheduled = prometheus.Query(
              "scheduler_schedule_attempts_total{result=\"scheduled\","
              "profile=\"" +
              scheduler + "\"}");
          return scheduled && *scheduled == kPods;
        },
        30s))
        << prometheus.Log();
    // The chart's identity may preempt (rbac.preemption, on by default): a pod of a higher
    // PriorityClass evicts the one that fills the node it selects.
    testing::PriorityClasses classes(admin);
    const std::string node = nodes.id() + "-0";
    auto filler = testing::PodManifest(ns.name(), "filler", scheduler, "7", "64Mi");
    filler["spec"]["priorityClassName"] = classes.Add("chart-low", 10);
    filler["spec"]["nodeName"] = node;
    admin->Post(client::PodsResource().Path(ns.name()), filler);
    auto urgent = testing::PodManifest(ns.name(), "urgent", scheduler, "7", "64Mi");
    urgent["spec"]["priorityClassName"] = classes.Add("chart-high", 1000);
    urgent["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
    admin->Post(client::PodsResource().Path(ns.name()), urgent);
    EXPECT_TRUE(testing::Eventually(
        [&] {
          const auto placed = PodNodes(*admin, ns.name());
          return placed.count("filler") == 0 && placed.count("urgent") == 1 &&
                 placed.at("urgent") == node;
        },
        60s))
        << berth->Log();
    EXPECT_EQ(berth->Stop(SIGTERM, 30s), 0) << berth->Log();
    EXPECT_EQ(berth->Log().find("orbidden"), std::string::npos) << berth->Log();
    // The lease Role also covers the release watch a standby keeps (no fallback to polling).
    EXPECT_EQ(berth->Log().find("cannot watch it"), std::string::npos) << berth->Log();
  }

  // Take away one rule the scheduler needs (listing nodes) and start it again.
  auto role = admin->Get("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + release.name());
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& rule : role["rules"]) {
    bool nodes_rule = false;
    for (const auto& r : rule["resources"]) nodes_rule |= r == "nodes";
    if (!nodes_rule) kept.push_back(rule);
  }
  ASSERT_LT(kept.size(), role["rules"].size()) << role.dump();
  role["rules"] = kept;
  admin->Put("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + release.name(), role);

  auto berth = RunAsChart(installed, sa_dir, dir + "/berth-forbidden.log");
  HttpReply ready;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        // The reasons are told to an authenticated caller only.
        ready = HttpGet(url + "/readyz", prometheus_account.token());
        return ready.body.find("cannot list resource \"nodes\"") != std::string::npos;
      },
      30s))
      << ready.status << " " << ready.body << berth->Log();
  EXPECT_EQ(ready.status, 500);
  EXPECT_NE(ready.body.find("[-]informer-nodes failed"), std::string::npos) << ready.body;
  EXPECT_EQ(HttpGet(url + "/livez").status, 200);
  EXPECT_TRUE(testing::Eventually(
      [&] {
        std::string log = berth->Log();
        return log.find("forbidden") != std::string::npos &&
               log.find("cannot list resource \\\"nodes\\\"") != std::string::npos;
      },
      15s))
      << berth->Log();
  EXPECT_TRUE(berth->Running()) << "the scheduler must keep retrying, not crash";
  berth->Stop(SIGTERM, 30s);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace berth::e2e
