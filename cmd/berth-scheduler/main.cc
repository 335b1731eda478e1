// berth-scheduler: a Kubernetes secondary scheduler. Pods opt in with
// `spec.schedulerName: berth-scheduler` (or another profile's schedulerName).
//
// Start-up order matters: flags and the config file are validated and every plugin is built
// before the first connection to the cluster, so a bad config exits non-zero having touched
// nothing.

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cmd/berth-scheduler/options.h"
#include "cmd/berth-scheduler/tools.h"
#include "pkg/client/client.h"
#include "pkg/config/config.h"
#include "pkg/config/load.h"
#include "pkg/events/recorder.h"
#include "pkg/extender/extender.h"
#include "pkg/informer/factory.h"
#include "pkg/leaderelection/leader_elector.h"
#include "pkg/log/log.h"
#include "pkg/metrics/metrics.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/debug_endpoints.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/server/auth/delegating.h"
#include "pkg/server/auth/filter.h"
#include "pkg/server/certificate.h"
#include "pkg/server/server.h"
#include "pkg/util/clock.h"
#include "pkg/util/url.h"

namespace {

using namespace berth;
using cmd::Fail;
using Clock = std::chrono::steady_clock;

// Threads answering /healthz, /readyz, /metrics and /configz: enough that a probe never waits
// behind more than a few scrapes at once.
constexpr size_t kServerThreads = 4;

// "127.0.0.1:6443" from "https://127.0.0.1:6443", the rest_client_* "host" label (client-go's
// URL.Host). The client has already refused a server that is not a URL.
std::string HostOf(const std::string& server) {
  const util::UrlResult url = util::ParseUrl(server);
  return url ? url.url->Authority() : util::RedactUrl(server);
}

// What /readyz reports about leader election, and what SIGTERM and a lost lease do.
struct Lifecycle {
  std::atomic<bool> terminating{false};
  std::atomic<bool> leading{false};
};

// Configuration from --config (or the defaults) and the flags that override it. Exits on any
// problem, naming the file and field; `source` names where it came from for later messages.
config::Configuration LoadConfiguration(const cmd::Flags& flags,
                                        const framework::runtime::Registry& registry,
                                        std::string* source) {
  std::set<std::string> known;
  for (const auto& [name, factory] : registry) known.insert(name);
  *source = flags.config.empty() ? std::string("default configuration") : flags.config;
  config::Configuration cfg;
  try {
    cfg = flags.config.empty()
              ? config::DefaultConfiguration()
              : config::LoadFile(flags.config, known, plugins::registry::ValidateArgs);
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  if (flags.leader_elect_set) cfg.leader_election.leader_elect = flags.leader_elect;
  return cfg;
}

leaderelection::LeaderElectionConfig LeaderElectionFor(const config::Configuration& cfg,
                                                       const std::string& source) {
  leaderelection::LeaderElectionConfig le_config;
  if (!cfg.leader_election.leader_elect) return le_config;
  le_config.lease_namespace = cfg.leader_election.resource_namespace;
  le_config.lease_name = cfg.leader_election.resource_name;
  le_config.identity = leaderelection::DefaultIdentity();
  le_config.lease_duration = cfg.leader_election.lease_duration;
  le_config.renew_deadline = cfg.leader_election.renew_deadline;
  le_config.retry_period = cfg.leader_election.retry_period;
  if (cfg.leader_election.resource_lock != "leases") {
    Fail(source + ": leaderElection.resourceLock: expected \"leases\", got \"" +
         cfg.leader_election.resource_lock + "\"");
  }
  try {
    leaderelection::ValidateConfig(le_config);
  } catch (const std::exception& e) {
    Fail(source + ": " + e.what());
  }
  return le_config;
}

// What the two listeners serve with, checked before any connection. The secure port's filter is
// added once there is a client to ask the apiserver with.
struct Serving {
  std::optional<server::Options> secure;
  std::optional<server::Options> insecure;
  std::optional<server::auth::PathMatcher> always_allow;
  bool self_signed = false;
};

// Reads only the flags, so it runs on a thread of its own (see main). Throws std::runtime_error
// with the message start-up fails with.
Serving ServingOptions(const cmd::Flags& flags) {
  Serving serving;
  if (flags.secure_port != 0) {
    if (flags.tls_cert_file.empty() != flags.tls_private_key_file.empty()) {
      throw std::runtime_error("--tls-cert-file and --tls-private-key-file must be given together");
    }
    try {
      serving.always_allow.emplace(flags.authorization_always_allow_paths);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("flag --authorization-always-allow-paths: ") + e.what());
    }
    server::Options secure;
    secure.bind_address = cmd::HostPort(flags.bind_address, flags.secure_port);
    secure.flag = "--secure-port";
    server::Certificate certificate{flags.tls_cert_file, flags.tls_private_key_file, "", ""};
    if (flags.tls_cert_file.empty()) {
      // The names a client in the pod (or on the host) reaches it by; kube-scheduler uses the same.
      std::array<char, 256> host{};
      gethostname(host.data(), host.size() - 1);
      server::CertificateKeyPair pair =
          server::GenerateSelfSigned(host.data(), {"localhost"}, {"127.0.0.1"});
      certificate.cert_pem = std::move(pair.cert_pem);
      certificate.key_pem = std::move(pair.key_pem);
      serving.self_signed = true;
    }
    secure.tls = std::move(certificate);
    secure.client_ca = flags.client_ca_file;
    secure.loaded_tls = server::LoadTls(secure);
    serving.secure = std::move(secure);
  }
  if (flags.port != 0) {
    server::Options insecure;
    insecure.bind_address = cmd::HostPort(flags.address, flags.port);
    insecure.flag = "--port";
    serving.insecure = std::move(insecure);
  }
  return serving;
}

// The secure port's authenticator and authorizer: kube-apiserver through clients of their own,
// so scrapes never spend the scheduler's QPS, with the limits and timeout kube-scheduler gives
// its delegated clients. `authentication` and `authorization` are the connections the reviews go
// through (--authentication-kubeconfig, --authorization-kubeconfig, else the scheduler's own).
std::shared_ptr<server::auth::Filter> DelegatedFilter(const cmd::Flags& flags,
                                                      const client::Config& authentication,
                                                      const client::Config& authorization,
                                                      metrics::SchedulerMetrics& scheduler_metrics,
                                                      server::auth::PathMatcher always_allow) {
  static const util::RealClock clock;
  auto delegated_client = [&](const std::string& flag, const std::string& kubeconfig,
                              client::Config config) {
    config.qps = 200;
    config.burst = 400;
    config.timeout = std::chrono::seconds(10);
    std::shared_ptr<client::Client> client;
    try {
      client = client::NewClient(config);
    } catch (const std::exception& e) {
      // A kubeconfig that loads can still hold what no client can use (a CA that is not PEM).
      if (kubeconfig.empty()) throw;
      Fail("flag " + flag + ": kubeconfig " + kubeconfig + ": " + e.what());
    }
    client->SetRequestObserver(scheduler_metrics.RequestObserver(HostOf(config.server)));
    return client;
  };
  server::auth::DelegatingOptions options;
  options.token_review_client = delegated_client("--authentication-kubeconfig",
                                                 flags.authentication_kubeconfig, authentication);
  // One client for both while they share a connection, as before the flags existed.
  options.subject_access_review_client =
      flags.authentication_kubeconfig == flags.authorization_kubeconfig
          ? options.token_review_client
          : delegated_client("--authorization-kubeconfig", flags.authorization_kubeconfig,
                             authorization);
  options.token_ttl = flags.authentication_token_webhook_cache_ttl;
  options.authorized_ttl = flags.authorization_webhook_cache_authorized_ttl;
  options.unauthorized_ttl = flags.authorization_webhook_cache_unauthorized_ttl;
  return server::auth::NewDelegatingFilter(options, std::move(always_allow), clock);
}

// "pods: <error>; nodes: not listed yet" for the informers that have not synced.
std::string UnsyncedInformers(informer::SharedInformerFactory& informers) {
  std::string out;
  for (const auto& state : informers.States()) {
    if (state.synced) continue;
    if (!out.empty()) out += "; ";
    out += state.resource + ": " + (state.last_error.empty() ? "not listed yet" : state.last_error);
  }
  return out;
}

// One check per informer ("informer-pods", "informer-poddisruptionbudgets.policy", ...), so
// /readyz?verbose shows a caller allowed to get /readyz which list is missing and why (a 403 names
// the RBAC rule to add). Every informer exists by now: plugins ask for theirs in their factories,
// the scheduler in AddAllEventHandlers.
std::vector<server::HealthCheck> InformerChecks(informer::SharedInformerFactory& informers) {
  std::vector<server::HealthCheck> checks;
  informers.ForEach([&](informer::InformerBase& informer) {
    checks.push_back(
        {"informer-" + informer.ResourceName(), [&informer]() -> std::optional<std::string> {
           if (informer.HasSynced()) return std::nullopt;
           const std::string error = informer.reflector().last_error();
           return error.empty() ? std::string("not listed yet") : error;
         }});
  });
  return checks;
}

// Waits for SIGTERM or SIGINT; meanwhile, once every informer has synced, starts scheduling (or
// campaigning for the lease). Exits when they do not sync within --sync-timeout-seconds.
int RunUntilSignal(const sigset_t& signals, const cmd::Flags& flags,
                   informer::SharedInformerFactory& informers, scheduler::Scheduler& sched,
                   leaderelection::LeaderElector* elector,
                   const leaderelection::LeaderElectionConfig& le_config) {
  const auto sync_start = Clock::now();
  auto last_warning = sync_start;
  bool started = false;
  // Until the informers sync, a short tick: scheduling starts within 5 ms of it (readiness does
  // not wait for this loop, so pods may already be arriving). Afterwards only signals matter.
  const timespec syncing_tick{0, 5L * 1000 * 1000};
  const timespec started_tick{0, 100L * 1000 * 1000};
  while (true) {
    const int signal = sigtimedwait(&signals, nullptr, started ? &started_tick : &syncing_tick);
    if (signal > 0) return signal;
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
        sched.Run();
      }
      continue;
    }
    if (Clock::now() - last_warning >= std::chrono::seconds(5)) {
      last_warning = Clock::now();
      const std::string unsynced = UnsyncedInformers(informers);
      log::Warn("waiting for informers to sync", {{"unsynced", unsynced}});
      if (Clock::now() - sync_start > std::chrono::seconds(flags.sync_timeout_seconds)) {
        Fail("informers did not sync within " + std::to_string(flags.sync_timeout_seconds) +
             "s: " + unsynced);
      }
    }
  }
}

// Caps glibc's malloc arenas at one per core, from two to eight, unless MALLOC_ARENA_MAX says
// otherwise. By default every thread that allocates gets an arena of its own, up to eight per
// core, and memory freed in one arena is never reused by another; most of berth-scheduler's
// threads (one per informer) are idle after their list, yet each kept an arena with its list's
// leftovers. In bench_e2e (2 cores, 1,000 nodes, 5,000 pods) this lowers peak RSS by about 1 MiB
// (41 against 42). The upper bound keeps the cap below the thread count on a large node, where
// hardware_concurrency() counts the node's cores rather than the container's CPU limit; each
// thread's own cache of small blocks (tcache) keeps the shared arenas' locks off the hot paths.
void CapMallocArenas() {
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  mallopt(M_ARENA_MAX, std::clamp(cores, 2, 8));
}

}  // namespace

int main(int argc, char** argv) {
  CapMallocArenas();  // First: it only takes effect for threads started after it.
  if (cmd::IsTool(argc, argv)) return cmd::RunTool(argc, argv);
  const cmd::Flags flags = cmd::ParseFlags(argc, argv);
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
  // The secure port's TLS (a key generated, a certificate signed, a context built: some 6 ms of
  // OpenSSL, the costliest step before the first request) needs only the flags. It runs on a
  // thread of its own while this one reads the configuration and kubeconfig and builds the
  // client and plugins; its errors are reported once those have passed, still before any
  // connection. Fail() exits at once (_Exit), so an error here never waits for that thread.
  std::future<Serving> serving_options =
      std::async(std::launch::async, [&flags] { return ServingOptions(flags); });
  const auto registry = plugins::registry::Registry();
  std::string config_source;
  const config::Configuration cfg = LoadConfiguration(flags, registry, &config_source);
  const leaderelection::LeaderElectionConfig le_config = LeaderElectionFor(cfg, config_source);

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
  // As kube-scheduler, the delegated kubeconfigs are read only when there is a secure port.
  client::Config authentication_config;
  client::Config authorization_config;
  if (flags.secure_port != 0) {
    authentication_config = cmd::DelegatedConfig("--authentication-kubeconfig",
                                                 flags.authentication_kubeconfig, client_config);
    authorization_config = cmd::DelegatedConfig("--authorization-kubeconfig",
                                                flags.authorization_kubeconfig, client_config);
  }

  metrics::SchedulerMetrics scheduler_metrics({client::BerthVersion(), BERTH_GIT_COMMIT});
  auto client = client::NewClient(client_config);
  const client::RequestObserver observer =
      scheduler_metrics.RequestObserver(HostOf(client_config.server));
  client->SetRequestObserver(observer);
  informer::SharedInformerFactory informers(
      client, cfg.client_connection.content_type == config::kContentTypeProtobuf);
  events::ApiEventRecorder recorder(client, "berth-scheduler", events::DefaultReportingInstance());
  scheduler::ApiPodStatusWriter status_writer(client);

  // Extenders are checked (and their TLS files read) before any request reaches the cluster.
  std::vector<std::shared_ptr<framework::Extender>> extenders;
  try {
    extenders = extender::Build(cfg.extenders, config_source, &scheduler_metrics.registry());
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  std::unique_ptr<scheduler::Scheduler> sched;
  try {
    scheduler::SchedulerDeps deps;
    deps.extenders = std::move(extenders);
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
  // Handlers first: they create the informers of every resource a plugin registered events for,
  // and the readiness checks list every informer.
  sched->AddAllEventHandlers();
  handlers.readyz = {ping};
  for (auto& check : InformerChecks(informers)) handlers.readyz.push_back(std::move(check));
  handlers.readyz.push_back({"leader-election", [&]() -> std::optional<std::string> {
                               if (!elector) return std::nullopt;
                               if (elector->IsLeader() || elector->Healthy()) return std::nullopt;
                               return "lease " + le_config.lease_namespace + "/" +
                                      le_config.lease_name +
                                      " neither held nor observed within leaseDuration";
                             }});
  handlers.readyz.push_back({"shutdown", [&]() -> std::optional<std::string> {
                               if (lifecycle.terminating) return "shutting down";
                               return std::nullopt;
                             }});
  if (flags.enable_debug_endpoints) {
    handlers.debug = [&sched](const server::DebugRequest& request) {
      return scheduler::ServeDebug(*sched, request);
    };
  }
  Serving serving;
  try {
    serving = serving_options.get();
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  if (serving.secure) {
    serving.secure->filter = DelegatedFilter(flags, authentication_config, authorization_config,
                                             scheduler_metrics, *serving.always_allow);
  }
  std::vector<std::unique_ptr<server::HttpServer>> servers;
  try {
    server::SetServerThreads(kServerThreads);
    for (auto* options : {&serving.secure, &serving.insecure}) {
      if (!*options) continue;
      servers.push_back(std::make_unique<server::HttpServer>(**options, handlers));
      servers.back()->Start();
    }
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  std::string serving_urls;
  for (const auto& s : servers) serving_urls += (serving_urls.empty() ? "" : ",") + s->url();
  if (serving.self_signed) {
    log::Info("serving a self-signed certificate generated at start (held in memory only)",
              {{"sha256", server::Sha256Fingerprint(serving.secure->tls->cert_pem)}});
  }
  if (serving.insecure) {
    log::Warn("serving plain HTTP without authentication or authorization (--port)",
              {{"address", serving.insecure->bind_address}});
  }

  std::string profiles;
  for (const auto& p : cfg.profiles) profiles += (profiles.empty() ? "" : ",") + p.scheduler_name;
  log::Info("berth-scheduler starting",
            {{"version", client::BerthVersion()},
             {"profiles", profiles},
             {"apiserver", client_config.Describe()},
             {"serving", serving_urls.empty() ? std::string("nothing") : serving_urls},
             {"debugEndpoints", flags.enable_debug_endpoints ? "on" : "off"},
             {"leaderElect", cfg.leader_election.leader_elect ? "true" : "false"}});

  informers.Start();
  const int signal = RunUntilSignal(signals, flags, informers, *sched, elector.get(), le_config);

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
  for (auto& s : servers) s->Stop();
  log::Info("stopped",
            {{"scheduled", std::to_string(sched->stats().scheduled.load())},
             {"unschedulableAttempts", std::to_string(sched->stats().unschedulable.load())},
             {"errors", std::to_string(sched->stats().errors.load())}});
  spdlog::default_logger()->flush();
  return 0;
}
