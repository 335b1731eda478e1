// berth-scheduler: a Kubernetes secondary scheduler. Pods opt in with
// `spec.schedulerName: berth-scheduler` (or another profile's schedulerName).
//
// Start-up order matters: flags and the config file are validated and every plugin is built
// before the first connection to the cluster, so a bad config exits non-zero having touched
// nothing.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/config/config.h"
#include "pkg/config/load.h"
#include "pkg/events/recorder.h"
#include "pkg/informer/factory.h"
#include "pkg/leaderelection/leader_elector.h"
#include "pkg/log/log.h"
#include "pkg/metrics/metrics.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/server/server.h"

namespace {

using namespace berth;
using Clock = std::chrono::steady_clock;

// Threads answering /healthz, /readyz, /metrics and /configz: enough that a probe never waits
// behind more than a few scrapes at once.
constexpr size_t kServerThreads = 4;

struct Flags {
  std::string config;
  std::string kubeconfig;
  int verbosity = 0;
  std::string logging_format = "text";
  bool leader_elect_set = false;
  bool leader_elect = false;
  bool version = false;
  int sync_timeout_seconds = 300;
  std::string bind_address = "0.0.0.0:10251";
  std::string tls_cert_file;
  std::string tls_private_key_file;
  // How long SIGTERM waits for in-flight binding cycles before giving up on them.
  int shutdown_grace_seconds = 10;
};

void Usage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: berth-scheduler [flags]\n"
      "  --config FILE             KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1,"
      " YAML or JSON)\n"
      "  --kubeconfig FILE         kubeconfig; default: clientConnection.kubeconfig, then "
      "in-cluster, $KUBECONFIG, ~/.kube/config\n"
      "  --bind-address HOST:PORT  serves /metrics /healthz /livez /readyz /configz "
      "(default 0.0.0.0:10251)\n"
      "  --tls-cert-file FILE      serve HTTPS with this certificate chain (PEM)...\n"
      "  --tls-private-key-file F  ...and this key (PEM)\n"
      "  --leader-elect BOOL       overrides leaderElection.leaderElect (default true)\n"
      "  -v, --v N                 log verbosity: 0 lifecycle, 2 every scheduling decision, "
      "4 per-plugin detail\n"
      "  --logging-format F        text (default) or json\n"
      "  --shutdown-grace-seconds N  on SIGTERM, wait up to N s for in-flight bindings "
      "(default 10)\n"
      "  --version                 print the version and exit\n");
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "berth-scheduler: %s\n", message.c_str());
  std::exit(1);
}

bool ParseBool(const std::string& flag, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  Fail("flag " + flag + ": expected true or false, got \"" + value + "\"");
}

int ParseInt(const std::string& flag, const std::string& value, int min, int max) {
  char* end = nullptr;
  long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < min || n > max) {
    Fail("flag " + flag + ": expected an integer " + std::to_string(min) + ".." +
         std::to_string(max) + ", got \"" + value + "\"");
  }
  return static_cast<int>(n);
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) Fail("flag " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--config") {
      flags.config = take();
    } else if (arg == "--kubeconfig") {
      flags.kubeconfig = take();
    } else if (arg == "-v" || arg == "--v") {
      flags.verbosity = ParseInt(arg, take(), 0, 10);
    } else if (arg == "--logging-format") {
      flags.logging_format = take();
      if (flags.logging_format != "text" && flags.logging_format != "json") {
        Fail("flag --logging-format: expected text or json, got \"" + flags.logging_format + "\"");
      }
    } else if (arg == "--leader-elect") {
      flags.leader_elect_set = true;
      flags.leader_elect = has_value ? ParseBool(arg, value) : true;
    } else if (arg == "--bind-address") {
      flags.bind_address = take();
    } else if (arg == "--tls-cert-file") {
      flags.tls_cert_file = take();
    } else if (arg == "--tls-private-key-file") {
      flags.tls_private_key_file = take();
    } else if (arg == "--shutdown-grace-seconds") {
      flags.shutdown_grace_seconds = ParseInt(arg, take(), 0, 3600);
    } else if (arg == "--version") {
      flags.version = true;
    } else if (arg == "-h" || arg == "--help") {
      Usage(stdout);
      std::exit(0);
    } else {
      Usage(stderr);
      Fail("unknown flag " + arg);
    }
  }
  return flags;
}

// "127.0.0.1:6443" from "https://127.0.0.1:6443", the rest_client_* "host" label.
std::string HostOf(const std::string& server) {
  std::string host = server;
  if (auto scheme = host.find("://"); scheme != std::string::npos) host = host.substr(scheme + 3);
  if (auto slash = host.find('/'); slash != std::string::npos) host = host.substr(0, slash);
  return host;
}

// What /readyz reports about leader election, and what SIGTERM and a lost lease do.
struct Lifecycle {
  std::atomic<bool> terminating{false};
  std::atomic<bool> leading{false};
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);
  if (flags.version) {
    std::printf("berth-scheduler %s (%s)\n", client::BerthVersion(), BERTH_GIT_COMMIT);
    return 0;
  }
  log::Setup(flags.logging_format == "json" ? log::Format::kJson : log::Format::kText,
             flags.verbosity);

  // Signals are taken by sigtimedwait() on the main thread only: block them before any thread
  // starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // ---- Everything that can be wrong with the invocation fails here, before any connection ----
  const auto registry = plugins::registry::Registry();
  std::set<std::string> known;
  for (const auto& [name, factory] : registry) known.insert(name);
  const std::string config_source =
      flags.config.empty() ? std::string("default configuration") : flags.config;

  config::Configuration cfg;
  try {
    cfg = flags.config.empty() ? config::DefaultConfiguration()
                               : config::LoadFile(flags.config, known);
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  if (flags.leader_elect_set) cfg.leader_election.leader_elect = flags.leader_elect;

  leaderelection::LeaderElectionConfig le_config;
  if (cfg.leader_election.leader_elect) {
    le_config.lease_namespace = cfg.leader_election.resource_namespace;
    le_config.lease_name = cfg.leader_election.resource_name;
    le_config.identity = leaderelection::DefaultIdentity();
    le_config.lease_duration = cfg.leader_election.lease_duration;
    le_config.renew_deadline = cfg.leader_election.renew_deadline;
    le_config.retry_period = cfg.leader_election.retry_period;
    if (cfg.leader_election.resource_lock != "leases") {
      Fail(config_source + ": leaderElection.resourceLock: expected \"leases\", got \"" +
           cfg.leader_election.resource_lock + "\"");
    }
    try {
      leaderelection::ValidateConfig(le_config);
    } catch (const std::exception& e) {
      Fail(config_source + ": " + e.what());
    }
  }

  server::Options server_options{flags.bind_address, flags.tls_cert_file,
                                 flags.tls_private_key_file};
  try {
    server::ParseBindAddress(flags.bind_address);
    if (flags.tls_cert_file.empty() != flags.tls_private_key_file.empty()) {
      throw server::ServerError(
          "--tls-cert-file and --tls-private-key-file must be given together");
    }
  } catch (const std::exception& e) {
    Fail(e.what());
  }

  client::Config client_config;
  try {
    std::string kubeconfig =
        flags.kubeconfig.empty() ? cfg.client_connection.kubeconfig : flags.kubeconfig;
    client_config = client::LoadConfig(kubeconfig);
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  client_config.qps = cfg.client_connection.qps;
  client_config.burst = cfg.client_connection.burst;

  metrics::SchedulerMetrics scheduler_metrics({client::BerthVersion(), BERTH_GIT_COMMIT});
  auto client = client::NewClient(client_config);
  client->SetRequestObserver(scheduler_metrics.RequestObserver(HostOf(client_config.server)));
  informer::SharedInformerFactory informers(
      client, cfg.client_connection.content_type == config::kContentTypeProtobuf);
  events::ApiEventRecorder recorder(client, "berth-scheduler", events::DefaultReportingInstance());
  scheduler::ApiPodStatusWriter status_writer(client);

  std::unique_ptr<scheduler::Scheduler> sched;
  try {
    scheduler::SchedulerDeps deps;
    deps.client = client;
    deps.informers = &informers;
    deps.recorder = &recorder;
    deps.status_writer = &status_writer;
    deps.metrics = &scheduler_metrics;
    sched = std::make_unique<scheduler::Scheduler>(cfg, registry, deps);
  } catch (const std::exception& e) {
    Fail(config_source + ": " + e.what());
  }

  Lifecycle lifecycle;
  std::unique_ptr<leaderelection::LeaderElector> elector;
  if (cfg.leader_election.leader_elect) {
    leaderelection::LeaderCallbacks callbacks;
    callbacks.on_started_leading = [&] {
      lifecycle.leading = true;
      log::Info("leading: scheduling starts", {{"identity", le_config.identity}});
      sched->Run();
    };
    callbacks.on_stopped_leading = [&] {
      lifecycle.leading = false;
      if (lifecycle.terminating) return;
      // Another replica may already be scheduling: stop at once and let the pod restart clean,
      // as kube-scheduler does.
      log::Error("leader election lost: exiting so no two replicas schedule at once",
                 {{"lease", le_config.lease_namespace + "/" + le_config.lease_name}});
      spdlog::default_logger()->flush();
      std::_Exit(1);
    };
    callbacks.on_new_leader = [&](const std::string& leader) {
      if (leader != le_config.identity) log::Info("new leader observed", {{"leader", leader}});
    };
    elector = std::make_unique<leaderelection::LeaderElector>(client, le_config, callbacks);
  }

  server::Handlers handlers;
  handlers.metrics = [&] { return scheduler_metrics.Scrape(); };
  const std::string configz = nlohmann::json{{"componentconfig", config::ToJson(cfg)}}.dump(2);
  handlers.configz = [configz] { return std::string(configz); };
  auto ping = server::HealthCheck{"ping", [] { return std::optional<std::string>(); }};
  handlers.livez = {ping};
  handlers.readyz = {ping,
                     {"informer-sync",
                      [&]() -> std::optional<std::string> {
                        if (informers.HasSynced()) return std::nullopt;
                        std::string error = informers.Pods().reflector().last_error();
                        if (error.empty()) error = informers.Nodes().reflector().last_error();
                        return "pods and nodes not listed yet" +
                               (error.empty() ? "" : ": " + error);
                      }},
                     {"leader-election",
                      [&]() -> std::optional<std::string> {
                        if (!elector) return std::nullopt;
                        if (elector->IsLeader() || elector->Healthy()) return std::nullopt;
                        return "lease " + le_config.lease_namespace + "/" + le_config.lease_name +
                               " neither held nor observed within leaseDuration";
                      }},
                     {"shutdown", [&]() -> std::optional<std::string> {
                        if (lifecycle.terminating) return "shutting down";
                        return std::nullopt;
                      }}};
  server::HttpServer http(server_options, handlers);
  try {
    server::SetServerThreads(kServerThreads);
    http.Start();
  } catch (const std::exception& e) {
    Fail(e.what());
  }

  std::string profiles;
  for (const auto& p : cfg.profiles) profiles += (profiles.empty() ? "" : ",") + p.scheduler_name;
  log::Info("berth-scheduler starting",
            {{"version", client::BerthVersion()},
             {"profiles", profiles},
             {"apiserver", client_config.Describe()},
             {"serving", http.url()},
             {"leaderElect", cfg.leader_election.leader_elect ? "true" : "false"}});

  sched->AddAllEventHandlers();
  informers.Start();
  const auto sync_start = Clock::now();
  auto last_warning = sync_start;
  bool started = false;
  int signal = 0;
  const timespec tick{0, 100L * 1000 * 1000};
  while (true) {
    signal = sigtimedwait(&signals, nullptr, &tick);
    if (signal > 0) break;
    if (started) continue;
    if (informers.HasSynced()) {
      started = true;
      log::Info("informers synced",
                {{"seconds",
                  std::to_string(std::chrono::duration<double>(Clock::now() - sync_start).count())},
                 {"nodes", std::to_string(informers.Nodes().store().Size())},
                 {"pods", std::to_string(informers.Pods().store().Size())}});
      if (elector) {
        log::Info("waiting to acquire the leader lease",
                  {{"lease", le_config.lease_namespace + "/" + le_config.lease_name},
                   {"identity", le_config.identity}});
        elector->Run();
      } else {
        sched->Run();
      }
      continue;
    }
    if (Clock::now() - last_warning >= std::chrono::seconds(5)) {
      last_warning = Clock::now();
      std::string error = informers.Pods().reflector().last_error();
      if (error.empty()) error = informers.Nodes().reflector().last_error();
      log::Warn("waiting for pod and node informers to sync", {{"lastError", error}});
      if (Clock::now() - sync_start > std::chrono::seconds(flags.sync_timeout_seconds)) {
        Fail("informers did not sync within " + std::to_string(flags.sync_timeout_seconds) +
             "s; last error: " + error);
      }
    }
  }

  lifecycle.terminating = true;
  log::Info("stopping: no new pods are taken; in-flight bindings finish",
            {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
             {"graceSeconds", std::to_string(flags.shutdown_grace_seconds)}});
  sched->Stop(std::chrono::seconds(flags.shutdown_grace_seconds));
  if (sched->InFlightBindings() > 0) {
    log::Warn("binding cycles still in flight at the end of the grace period",
              {{"count", std::to_string(sched->InFlightBindings())}});
  }
  if (elector) {
    // Only now: another replica must not start while our bindings are still landing.
    elector->Release();
    elector->Stop();
  }
  informers.Stop();
  if (!recorder.Flush(std::chrono::seconds(5)))
    log::Warn("some events were not written before exit");
  http.Stop();
  log::Info("stopped",
            {{"scheduled", std::to_string(sched->stats().scheduled.load())},
             {"unschedulableAttempts", std::to_string(sched->stats().unschedulable.load())},
             {"errors", std::to_string(sched->stats().errors.load())}});
  spdlog::default_logger()->flush();
  return 0;
}
