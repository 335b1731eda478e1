// berth-scheduler: a Kubernetes secondary scheduler. Pods opt in with
// `spec.schedulerName: berth-scheduler` (or another profile's schedulerName).
//
// Start-up order matters: flags and the config file are validated and every plugin is built
// before the first connection to the cluster, so a bad config exits non-zero having touched
// nothing.

#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/config/config.h"
#include "pkg/config/load.h"
#include "pkg/events/recorder.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"

namespace {

struct Flags {
  std::string config;
  std::string kubeconfig;
  int verbosity = 0;
  std::string logging_format = "text";
  bool leader_elect_set = false;
  bool leader_elect = false;
  bool version = false;
  int sync_timeout_seconds = 300;
};

void Usage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: berth-scheduler [flags]\n"
      "  --config FILE          KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1,"
      " YAML or JSON)\n"
      "  --kubeconfig FILE      kubeconfig; default: clientConnection.kubeconfig, then "
      "in-cluster, $KUBECONFIG, ~/.kube/config\n"
      "  -v, --v N              log verbosity: 0 lifecycle, 2 every scheduling decision, "
      "4 per-plugin detail\n"
      "  --logging-format F     text (default) or json\n"
      "  --leader-elect BOOL    overrides leaderElection.leaderElect\n"
      "  --version              print the version and exit\n");
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
      std::string v = take();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0 || n > 10) {
        Fail("flag " + arg + ": expected an integer 0..10, got \"" + v + "\"");
      }
      flags.verbosity = static_cast<int>(n);
    } else if (arg == "--logging-format") {
      flags.logging_format = take();
      if (flags.logging_format != "text" && flags.logging_format != "json") {
        Fail("flag --logging-format: expected text or json, got \"" + flags.logging_format + "\"");
      }
    } else if (arg == "--leader-elect") {
      flags.leader_elect_set = true;
      flags.leader_elect = has_value ? ParseBool(arg, value) : true;
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

void SetUpLogging(const Flags& flags) {
  auto logger = spdlog::stderr_color_mt("berth");
  spdlog::set_default_logger(logger);
  if (flags.logging_format == "json") {
    spdlog::set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%v"})",
                        spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %L %v", spdlog::pattern_time_type::utc);
  }
  if (flags.verbosity >= 4) {
    spdlog::set_level(spdlog::level::trace);
  } else if (flags.verbosity >= 2) {
    spdlog::set_level(spdlog::level::debug);
  } else {
    spdlog::set_level(spdlog::level::info);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace berth;
  Flags flags = ParseFlags(argc, argv);
  if (flags.version) {
    std::printf("berth-scheduler %s (%s)\n", client::BerthVersion(), BERTH_GIT_COMMIT);
    return 0;
  }
  SetUpLogging(flags);

  // Signals are taken by sigwait() on the main thread only: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const auto registry = plugins::registry::Registry();
  std::set<std::string> known;
  for (const auto& [name, factory] : registry) known.insert(name);

  config::Configuration cfg;
  try {
    cfg = flags.config.empty() ? config::DefaultConfiguration()
                               : config::LoadFile(flags.config, known);
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  if (flags.leader_elect_set) cfg.leader_election.leader_elect = flags.leader_elect;
  if (cfg.leader_election.leader_elect) {
    Fail((flags.config.empty() ? std::string("--leader-elect") : flags.config) +
         ": leaderElection.leaderElect: leader election is not available in this version of "
         "berth-scheduler; run a single replica with leaderElect: false (or --leader-elect=false)");
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

  auto client = client::NewClient(client_config);
  informer::SharedInformerFactory informers(client);
  events::ApiEventRecorder recorder(client, "berth-scheduler", events::DefaultReportingInstance());
  scheduler::ApiPodStatusWriter status_writer(client);

  std::unique_ptr<scheduler::Scheduler> sched;
  try {
    scheduler::SchedulerDeps deps;
    deps.client = client;
    deps.informers = &informers;
    deps.recorder = &recorder;
    deps.status_writer = &status_writer;
    sched = std::make_unique<scheduler::Scheduler>(cfg, registry, deps);
  } catch (const std::exception& e) {
    Fail((flags.config.empty() ? std::string("default configuration") : flags.config) + ": " +
         e.what());
  }

  std::string profiles;
  for (const auto& p : cfg.profiles) profiles += (profiles.empty() ? "" : ", ") + p.scheduler_name;
  spdlog::info("berth-scheduler {} starting: profiles [{}], {}", client::BerthVersion(), profiles,
               client_config.Describe());

  sched->AddAllEventHandlers();
  informers.Start();
  const auto sync_start = std::chrono::steady_clock::now();
  while (!informers.WaitForCacheSync(std::chrono::seconds(5))) {
    spdlog::warn("waiting for pod and node informers to sync; last error: {}",
                 informers.Pods().reflector().last_error().empty()
                     ? informers.Nodes().reflector().last_error()
                     : informers.Pods().reflector().last_error());
    if (std::chrono::steady_clock::now() - sync_start >
        std::chrono::seconds(flags.sync_timeout_seconds)) {
      Fail("informers did not sync within " + std::to_string(flags.sync_timeout_seconds) + "s");
    }
  }
  spdlog::info("informers synced in {:.2f}s: {} nodes, {} pods",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - sync_start).count(),
               informers.Nodes().store().Size(), informers.Pods().store().Size());
  sched->Run();

  int signal = 0;
  sigwait(&signals, &signal);
  spdlog::info("received {}; stopping: no new pods are taken, in-flight bindings finish",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
  sched->Stop(std::chrono::seconds(30));
  informers.Stop();
  recorder.Flush();
  spdlog::info("stopped: {} pods scheduled, {} unschedulable attempts, {} errors",
               sched->stats().scheduled.load(), sched->stats().unschedulable.load(),
               sched->stats().errors.load());
  return 0;
}
