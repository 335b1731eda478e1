// The fault suite. Two berth-scheduler replicas (leader election on one Lease) reach the apiserver
// through an in-repo TCP proxy and schedule waves of pods onto simulated nodes while, one after
// the other: the proxy cuts every connection every few seconds (and keeps doing so to the end),
// the apiserver is SIGKILLed and restarted, the leader is SIGKILLed mid-binding with the standby
// waiting (the test, as the leader's supervisor, starts it again), and etcd is compacted under a
// fresh watch cache so every watch resumes from a revision that no longer exists (410 Gone, and
// the informers relist). Each fault lands while a wave is being bound, and the time from the
// fault until the cluster converged again is reported.
//
// Converged: every pod that fits is bound, and every pod still Pending has a FailedScheduling
// event. The pods that fit fill the nodes exactly, so a binding Berth forgets shows as a node
// over-committed, and one it thinks it made but did not shows as a pod that never binds. At the
// end: no node over-committed, no pod reported bound twice (log or Scheduled event) or onto
// another node than its own, every replica alive.
//
// `make test` runs the short form (300 pods, the faults once); `make chaos` runs the full one
// (BERTH_CHAOS_PODS, thousands; the faults twice, or BERTH_CHAOS_ROUNDS times).

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "e2e/harness.h"
#include "pkg/api/quantity.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"
#include "test/testing/tcp_proxy.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The short form's size and every knob the full form changes.
struct ChaosOptions {
  int pods = 300;           // Pods that fit, over all waves; rounded up to fill whole nodes.
  int slots_per_node = 15;  // Pods one node holds.
  int unfit_per_wave = 3;   // Pods per wave that fit on no node and stay Pending.
  std::chrono::milliseconds cut_period = 3s;
  int rounds = 1;  // How many times the sequence of faults runs.
  // How long one fault may take to converge before the suite fails: generous, it is a hang
  // detector, not a performance bound.
  std::chrono::seconds deadline = 300s;

  static ChaosOptions FromEnvironment() {
    ChaosOptions options;
    if (const char* pods = std::getenv("BERTH_CHAOS_PODS"); pods != nullptr && *pods != '\0') {
      options.pods = std::max(1, std::atoi(pods));
      options.slots_per_node = 30;
      options.unfit_per_wave = 10;
      options.rounds = 2;
    }
    if (const char* rounds = std::getenv("BERTH_CHAOS_ROUNDS");
        rounds != nullptr && *rounds != '\0') {
      options.rounds = std::max(1, std::atoi(rounds));
    }
    return options;
  }
};

constexpr const char* kPodCpu = "100m";
constexpr const char* kPodMemory = "64Mi";
constexpr int64_t kPodMilliCpu = 100;
constexpr const char* kUnfitCpu = "1000";

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The admin kubeconfig with its server replaced by the proxy's address.
std::string ProxiedKubeconfig(uint16_t proxy_port) {
  std::ifstream in(testing::ClusterDir() + "/kubeconfig");
  std::stringstream text;
  std::string line;
  while (std::getline(in, line)) {
    if (const size_t at = line.find("server: "); at != std::string::npos) {
      line = line.substr(0, at) + "server: https://127.0.0.1:" + std::to_string(proxy_port);
    }
    text << line << "\n";
  }
  return testing::WriteTempFile("kubeconfig-proxied", text.str());
}

uint16_t ApiserverPort() {
  const std::string server = testing::AdminConfig().server;
  return static_cast<uint16_t>(std::stoi(server.substr(server.rfind(':') + 1)));
}

bool Leading(const BerthProcess& p) {
  return p.Log().find("leading: scheduling starts") != std::string::npos;
}

// The JSON log lines of one replica, whatever its state (a killed one's last line may be cut).
std::vector<json> LogRecords(const BerthProcess& p) {
  std::vector<json> out;
  std::istringstream in(p.Log());
  std::string line;
  while (std::getline(in, line)) {
    auto record = json::parse(line, nullptr, false);
    if (!record.is_discarded() && record.is_object()) out.push_back(std::move(record));
  }
  return out;
}

// One phase of the run: the wave of pods it creates and the fault injected while they bind.
struct Phase {
  std::string name;
  // Runs once the first pod of the wave is bound; empty: the fault is the phase's start.
  std::function<void()> fault;
  // Seconds from the fault until the cluster converged again.
  double converge_seconds = -1;
  // The pod informer's relists (each one a 410 Gone answered) and reopened watches over the
  // phase, summed over the replicas, and the connections the proxy cut meanwhile.
  double relists = 0;
  double watch_restarts = 0;
  uint64_t connections_cut = 0;
  // The fault exists to make the informers relist: a phase without one did not test it.
  bool expect_relists = false;
  // A replica killed between a binding's answer and its log line binds a pod silently.
  bool kills_leader = false;
};

class ChaosRun {
 public:
  explicit ChaosRun(ChaosOptions options)
      : options_(options),
        client_(testing::AdminClient()),
        ns_(client_, "chaos"),
        nodes_(client_),
        proxy_(ApiserverPort()),
        scheduler_("berth-chaos-" + testing::UniqueSuffix()),
        config_(SchedulerConfig(scheduler_, true, scheduler_)),
        kubeconfig_(ProxiedKubeconfig(proxy_.port())) {
    node_count_ = (options_.pods + options_.slots_per_node - 1) / options_.slots_per_node;
    fit_total_ = node_count_ * options_.slots_per_node;
    const std::string cpu = std::to_string(options_.slots_per_node * kPodMilliCpu) + "m";
    for (int i = 0; i < node_count_; i++) nodes_.Add(std::to_string(i), cpu, "64Gi");
  }

  ~ChaosRun() {
    proxy_.StopCutting();
    try {
      client_->Delete("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + scheduler_);
    } catch (const std::exception&) {
      // The lease is unique to this run; a leftover harms nothing.
    }
  }

  // Starts the two replicas: the first leads, the second waits as a ready standby.
  void StartReplicas() {
    replicas_.push_back(Start("chaos-a"));
    ASSERT_TRUE(testing::Eventually([&] { return Leading(*replicas_[0]); }, 60s))
        << replicas_[0]->Log();
    replicas_.push_back(Start("chaos-b"));
    ASSERT_TRUE(testing::Eventually(
        [&] { return HttpGet(replicas_[1]->url() + "/readyz").status == 200; }, 60s))
        << replicas_[1]->Log();
  }

  // Creates the wave while the fault lands: the fault is injected as soon as the first of the
  // wave's pods is bound, so bindings (and creations) are in flight when it strikes.
  void Run(Phase& phase, int wave, int fit_pods) {
    const auto start = Clock::now();
    std::jthread creator([this, wave, fit_pods] { CreateWave(wave, fit_pods); });
    auto fault_at = start;
    const Counters before = Read();
    const uint64_t cut_before = proxy_.connections_cut();
    if (phase.fault) {
      ASSERT_TRUE(WaitFirstBound(wave)) << "no pod of wave " << wave << " was ever bound\n"
                                        << Logs();
      fault_at = Clock::now();
      ASSERT_NO_FATAL_FAILURE(phase.fault());
    }
    creator.join();
    ASSERT_FALSE(::testing::Test::HasFailure()) << phase.name;
    ASSERT_TRUE(WaitFor([&] { return Converged(); }, options_.deadline))
        << phase.name << ": not converged after " << options_.deadline.count() << "s\n"
        << Unconverged() << Logs();
    phase.converge_seconds = Seconds(Clock::now() - fault_at);
    if (phase.expect_relists) {
      // Binding needs no watch, so convergence may come before the informer re-watched.
      EXPECT_TRUE(WaitFor([&] { return Since(before, Read()).first >= 1; }, options_.deadline))
          << phase.name << ": no pod informer relisted, so no 410 was forced\n"
          << Logs();
    }
    std::tie(phase.relists, phase.watch_restarts) = Since(before, Read());
    phase.connections_cut = proxy_.connections_cut() - cut_before;
    std::printf("chaos: %-46s converged %6.2fs after the fault\n", phase.name.c_str(),
                phase.converge_seconds);
    std::fflush(stdout);
  }

  // --- faults ---------------------------------------------------------------------------------

  void CutAll() { proxy_.CutAll(); }

  // One cut now, mid-binding, then one every cut_period until the end of the run.
  void StartCutting() {
    proxy_.CutAll();
    proxy_.CutEvery(options_.cut_period);
  }

  void KillLeader() {
    for (auto& replica : replicas_) {
      if (!Leading(*replica)) continue;
      ASSERT_NE(replica->process().Stop(SIGKILL, 10s), -1);
      // The supervisor (a kubelet, here this test) starts the killed replica again; it comes back
      // as a standby while the other one takes the lease over once it expires.
      retired_.push_back(std::move(replica));
      replica = Start("chaos-restarted-" + std::to_string(retired_.size()));
      return;
    }
    FAIL() << "no replica was leading\n" << Logs();
  }

  // --- checks ---------------------------------------------------------------------------------

  // Every pod that fits is bound and every Pending pod has a FailedScheduling event.
  bool Converged() {
    try {
      const json pending = client_->Get(PodsPath() + "?fieldSelector=spec.nodeName%3D");
      std::set<std::string> unexplained;
      for (const auto& pod : pending["items"]) {
        if (pod["metadata"]["labels"].value("fits", "") == "true") return false;
        unexplained.insert(pod["metadata"]["name"].get<std::string>());
      }
      if (static_cast<int>(pending["items"].size()) != unfit_created_) return false;
      for (const auto& name : FailedSchedulingPods()) unexplained.erase(name);
      return unexplained.empty();
    } catch (const client::ApiError&) {
      return false;  // The apiserver is down: not converged yet.
    }
  }

  // Pods (by name) that have a FailedScheduling event.
  std::set<std::string> FailedSchedulingPods() {
    std::set<std::string> out;
    const json events = client_->Get("/api/v1/namespaces/" + ns_.name() +
                                     "/events?fieldSelector=reason%3DFailedScheduling");
    for (const auto& e : events["items"]) {
      out.insert(e["involvedObject"].value("name", ""));
    }
    return out;
  }

  // The end state: nothing over-committed, nothing bound twice or elsewhere than reported,
  // every replica alive and exactly one leading.
  void Verify(const std::set<int>& leader_kill_waves) {
    const json pods = client_->Get(PodsPath());
    std::map<std::string, std::string> node_of;  // pod -> node ("" pending)
    std::map<std::string, int> wave_of;
    std::map<std::string, std::pair<int64_t, int64_t>> used;  // node -> milli cpu, pods
    for (const auto& pod : pods["items"]) {
      const std::string name = pod["metadata"]["name"];
      const std::string node = pod["spec"].value("nodeName", "");
      node_of[name] = node;
      wave_of[name] = std::stoi(pod["metadata"]["labels"].value("wave", "0"));
      if (node.empty()) continue;
      auto& [cpu, count] = used[node];
      for (const auto& c : pod["spec"]["containers"]) {
        cpu += api::Quantity::Parse(c["resources"]["requests"].value("cpu", "0")).MilliValue();
      }
      count++;
    }
    EXPECT_EQ(static_cast<int>(node_of.size()), fit_created_ + unfit_created_);

    // No node over-committed.
    const json nodes = client_->Get("/api/v1/nodes?labelSelector=berth-it%3D" + nodes_.id());
    int full = 0;
    for (const auto& node : nodes["items"]) {
      const std::string name = node["metadata"]["name"];
      const auto& allocatable = node["status"]["allocatable"];
      const int64_t cpu = api::Quantity::Parse(allocatable.value("cpu", "0")).MilliValue();
      const int64_t max_pods = api::Quantity::Parse(allocatable.value("pods", "0")).Value();
      const auto [cpu_used, pods_used] = used[name];
      EXPECT_LE(cpu_used, cpu) << name << " is over-committed: " << pods_used << " pods";
      EXPECT_LE(pods_used, max_pods) << name;
      if (cpu_used == cpu) full++;
    }
    EXPECT_EQ(full, node_count_) << "the pods that fit fill every node exactly";

    // Reported bound at most once, and onto the node the pod is on. The log of every replica
    // that ever ran counts, the killed ones' included.
    std::map<std::string, std::vector<std::string>> logged;  // pod -> nodes "pod bound" named
    conflicts_ = 0;
    settled_ = 0;
    auto scan = [&](const BerthProcess& p) {
      for (const auto& record : LogRecords(p)) {
        const std::string msg = record.value("msg", "");
        if (msg == "pod bound") {
          const std::string key = record.value("pod", "");
          if (key.rfind(ns_.name() + "/", 0) == 0) {
            logged[key.substr(ns_.name().size() + 1)].push_back(record.value("node", ""));
          }
        } else if (msg == "binding applied after its outcome was unknown" ||
                   msg == "binding confirmed after its outcome was unknown") {
          settled_++;
        } else if (record.dump().find("already assigned") != std::string::npos) {
          conflicts_++;
        }
      }
    };
    for (const auto& p : replicas_) scan(*p);
    for (const auto& p : retired_) scan(*p);
    for (const auto& [pod, bound_to] : logged) {
      EXPECT_EQ(bound_to.size(), 1u) << pod << " reported bound " << bound_to.size() << " times";
      EXPECT_EQ(bound_to.front(), node_of[pod]) << pod << " reported bound elsewhere";
    }
    unlogged_ = 0;
    for (const auto& [pod, node] : node_of) {
      if (node.empty() || logged.count(pod) != 0) continue;
      // Only a replica killed between the binding's response and its log line binds silently.
      EXPECT_EQ(leader_kill_waves.count(wave_of[pod]), 1u)
          << pod << " is bound but no replica logged it";
      unlogged_++;
    }

    // Scheduled events: at most one per pod (a repeat would be a series), naming its node.
    const json events = client_->Get("/apis/events.k8s.io/v1/namespaces/" + ns_.name() +
                                     "/events?fieldSelector=reason%3DScheduled");
    std::map<std::string, int> scheduled;
    for (const auto& e : events["items"]) {
      const std::string pod = e["regarding"].value("name", "");
      int count = 1;
      if (e.contains("series") && e["series"].is_object()) count = e["series"].value("count", 1);
      scheduled[pod] += count;
      const std::string note = e.value("note", "");
      EXPECT_NE(note.find(" to " + node_of[pod]), std::string::npos)
          << pod << ": \"" << note << "\" but the pod is on " << node_of[pod];
    }
    for (const auto& [pod, count] : scheduled) {
      EXPECT_EQ(count, 1) << pod << " has " << count << " Scheduled events";
    }
    scheduled_events_ = static_cast<int>(scheduled.size());

    // Every Pending pod says why.
    const auto explained = FailedSchedulingPods();
    for (const auto& [pod, node] : node_of) {
      if (node.empty()) {
        EXPECT_EQ(explained.count(pod), 1u) << pod << " Pending without an event";
      }
    }

    int leaders = 0;
    for (auto& replica : replicas_) {
      EXPECT_TRUE(replica->process().Running()) << replica->Log();
      if (Leading(*replica)) leaders++;
    }
    EXPECT_EQ(leaders, 1);
  }

  void Report(const std::vector<Phase>& phases) const {
    std::printf(
        "\nchaos: %d pods that fit on %d nodes (%d each, filled exactly) + %d that fit nowhere; "
        "two replicas through the proxy\n",
        fit_created_, node_count_, options_.slots_per_node, unfit_created_);
    // A wave converges in the time its pods take to bind; what a fault adds is the difference
    // to the baseline wave (the first, of the same size).
    const double baseline = phases.front().converge_seconds;
    std::printf("  %-46s %10s %10s %12s %15s %16s\n", "fault", "converged", "over base",
                "pod relists", "watch restarts", "connections cut");
    for (const auto& phase : phases) {
      std::printf("  %-46s %9.2fs %+9.2fs %12.0f %15.0f %16llu\n", phase.name.c_str(),
                  phase.converge_seconds, phase.converge_seconds - baseline, phase.relists,
                  phase.watch_restarts, static_cast<unsigned long long>(phase.connections_cut));
    }
    std::printf(
        "  proxy: %llu connections forwarded, %llu refused (apiserver down), %llu cut in %llu "
        "cuts\n",
        static_cast<unsigned long long>(proxy_.forwarded()),
        static_cast<unsigned long long>(proxy_.refused()),
        static_cast<unsigned long long>(proxy_.connections_cut()),
        static_cast<unsigned long long>(proxy_.cuts()));
    std::printf(
        "  bindings whose answer was lost, settled by sending them again: %d; refused as bound "
        "elsewhere: %d\n  bound pods whose replica was killed before it logged them: %d; "
        "Scheduled events written so far: %d of %d\n",
        settled_, conflicts_, unlogged_, scheduled_events_, fit_created_);
    std::fflush(stdout);
  }

  int fit_total() const { return fit_total_; }

 private:
  std::unique_ptr<BerthProcess> Start(const std::string& name) {
    return std::make_unique<BerthProcess>(name, config_, kubeconfig_,
                                          std::vector<std::string>{"--logging-format", "json"});
  }

  std::string PodsPath() const { return "/api/v1/namespaces/" + ns_.name() + "/pods"; }

  // Creates the wave's pods from eight threads, each pod retried until the apiserver took it,
  // as a controller would through an apiserver outage (AlreadyExists: an earlier try got through).
  void CreateWave(int wave, int fit_pods) {
    const std::string prefix = "w" + std::to_string(wave);
    auto pod = [&](int i) {
      const bool fits = i < fit_pods;
      const std::string name = fits ? prefix + "-" + std::to_string(i)
                                    : prefix + "-unfit-" + std::to_string(i - fit_pods);
      json p = testing::PodManifest(ns_.name(), name, scheduler_, fits ? kPodCpu : kUnfitCpu,
                                    kPodMemory);
      p["metadata"]["labels"]["wave"] = std::to_string(wave);
      p["metadata"]["labels"]["fits"] = fits ? "true" : "false";
      p["spec"]["nodeSelector"]["berth-it"] = nodes_.id();
      return p;
    };
    const int count = fit_pods + options_.unfit_per_wave;
    const auto deadline = Clock::now() + options_.deadline;
    std::atomic<int> next{0};
    std::atomic<bool> gave_up{false};
    {
      constexpr int kWorkers = 8;
      std::vector<std::jthread> workers;
      workers.reserve(kWorkers);
      for (int w = 0; w < kWorkers; w++) {
        workers.emplace_back([&] {
          for (int i = next++; i < count && !gave_up; i = next++) {
            const json body = pod(i);
            for (;;) {
              try {
                client_->Post(PodsPath(), body);
                break;
              } catch (const client::ApiError& e) {
                if (e.reason() == client::ErrorReason::kAlreadyExists) break;
                if (Clock::now() >= deadline) {
                  gave_up = true;
                  ADD_FAILURE() << "could not create " << body["metadata"]["name"] << ": "
                                << e.what();
                  return;
                }
                std::this_thread::sleep_for(200ms);
              }
            }
          }
        });
      }
    }
    fit_created_ += fit_pods;
    unfit_created_ += options_.unfit_per_wave;
  }

  // Watches the wave's pods until one has a node; false when none had by the deadline.
  bool WaitFirstBound(int wave) {
    const auto deadline = Clock::now() + options_.deadline;
    client::WatchOptions watch;
    watch.label_selector = "wave=" + std::to_string(wave);
    watch.timeout_seconds = 30;
    while (Clock::now() < deadline) {
      try {
        // From "" the watch starts with every existing pod, so one bound already is seen.
        auto stream = client_->Watch(PodsPath(), watch);
        client::WatchEvent event;
        while (stream->Next(&event)) {
          if (event.type != client::WatchEventType::kAdded &&
              event.type != client::WatchEventType::kModified) {
            continue;
          }
          if (!event.object["spec"].value("nodeName", "").empty()) return true;
        }
      } catch (const client::ApiError&) {
        std::this_thread::sleep_for(200ms);
      }
    }
    return false;
  }

  // Polls every half second: listing thousands of pods is not free on a loaded machine. A
  // replica that exits on its own ends the wait (and fails the suite): only the leader kill may
  // stop one.
  bool WaitFor(const std::function<bool()>& condition, std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      for (auto& replica : replicas_) {
        if (!replica->process().Running()) {
          ADD_FAILURE() << "berth-scheduler exited on its own\n" << replica->Log();
          return false;
        }
      }
      if (condition()) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(500ms);
    }
  }

  // The pod informer's relists and reopened watches, per replica process.
  using Counters = std::map<const BerthProcess*, std::pair<double, double>>;

  Counters Read() {
    Counters out;
    for (auto& replica : replicas_) {
      out[replica.get()] = {
          replica->Metric("berth_informer_relists_total{resource=\"pods\"}").value_or(0),
          replica->Metric("berth_informer_watch_restarts_total{resource=\"pods\"}").value_or(0)};
    }
    return out;
  }

  // What the replicas running now counted since `before`; a replica started in between counts
  // from zero, and one killed in between takes its counts with it.
  static std::pair<double, double> Since(const Counters& before, const Counters& after) {
    std::pair<double, double> sum;
    for (const auto& [replica, counts] : after) {
      const auto it = before.find(replica);
      const auto base = it != before.end() ? it->second : std::pair<double, double>{};
      sum.first += counts.first - base.first;
      sum.second += counts.second - base.second;
    }
    return sum;
  }

  std::string Unconverged() {
    std::ostringstream out;
    try {
      const json pending = client_->Get(PodsPath() + "?fieldSelector=spec.nodeName%3D");
      const auto explained = FailedSchedulingPods();
      out << pending["items"].size() << " pods Pending (" << unfit_created_ << " never fit):";
      int shown = 0;
      for (const auto& pod : pending["items"]) {
        const std::string name = pod["metadata"]["name"];
        if (shown++ < 20) {
          out << " " << name << (explained.count(name) != 0 ? "" : "(no event)");
        }
      }
      out << "\n";
    } catch (const std::exception& e) {
      out << "could not list pods: " << e.what() << "\n";
    }
    return out.str();
  }

  std::string Logs() const {
    std::string out;
    auto tail = [](const BerthProcess& p) {
      const std::string log = p.Log();
      return log.size() > 6000 ? log.substr(log.size() - 6000) : log;
    };
    for (const auto& p : replicas_) out += "--- replica log tail ---\n" + tail(*p);
    return out;
  }

  const ChaosOptions options_;
  std::shared_ptr<client::Client> client_;
  testing::TestNamespace ns_;
  testing::TestNodes nodes_;
  testing::TcpProxy proxy_;
  const std::string scheduler_;
  const std::string config_;
  const std::string kubeconfig_;
  int node_count_ = 0;
  int fit_total_ = 0;
  int fit_created_ = 0;
  int unfit_created_ = 0;
  std::vector<std::unique_ptr<BerthProcess>> replicas_;
  // Replicas killed by the test; kept for their logs.
  std::vector<std::unique_ptr<BerthProcess>> retired_;
  int conflicts_ = 0;
  int settled_ = 0;
  int unlogged_ = 0;
  int scheduled_events_ = 0;
};

TEST(ChaosE2E, EveryPodBoundOnceThroughConnectionCutsRestartsCompactionAndLeaderKill) {
  const ChaosOptions options = ChaosOptions::FromEnvironment();
  ChaosRun run(options);
  ASSERT_NO_FATAL_FAILURE(run.StartReplicas());

  std::vector<Phase> phases;
  phases.push_back({"baseline (no fault)", nullptr});
  for (int round = 1; round <= options.rounds; round++) {
    const std::string suffix = options.rounds > 1 ? " #" + std::to_string(round) : "";
    if (round == 1) {
      phases.push_back({"connections cut every " +
                            std::to_string(options.cut_period.count() / 1000) + "s from here on",
                        [&] { run.StartCutting(); }});
    } else {
      phases.push_back({"every connection cut mid-binding" + suffix, [&] { run.CutAll(); }});
    }
    phases.push_back({"apiserver SIGKILL + restart" + suffix,
                      [&] { testing::RunClusterScript("restart-apiserver"); }});
    Phase leader_kill{"leader SIGKILL mid-binding" + suffix, [&] { run.KillLeader(); }};
    leader_kill.kills_leader = true;
    phases.push_back(leader_kill);
    // A compaction alone is invisible to watches served from the apiserver's watch cache, which
    // still holds the revisions etcd dropped; done while the apiserver is down, the new
    // apiserver's cache starts after it and etcd has nothing older, so every watch resumes into a
    // 410 Gone.
    Phase compaction{"etcd compaction under a fresh watch cache" + suffix, [&] {
                       testing::RunClusterScript("stop-apiserver --kill");
                       testing::RunClusterScript("compact");
                       testing::RunClusterScript("start-apiserver");
                     }};
    compaction.expect_relists = true;
    phases.push_back(compaction);
  }

  const int waves = static_cast<int>(phases.size());
  std::set<int> leader_kill_waves;
  int assigned = 0;
  for (int wave = 0; wave < waves; wave++) {
    Phase& phase = phases[static_cast<size_t>(wave)];
    const int fit = (run.fit_total() - assigned) / (waves - wave);
    assigned += fit;
    if (phase.kills_leader) leader_kill_waves.insert(wave);
    ASSERT_NO_FATAL_FAILURE(run.Run(phase, wave, fit)) << phase.name;
  }
  run.Verify(leader_kill_waves);
  run.Report(phases);
  for (const auto& phase : phases) {
    RecordProperty("converge_seconds_" + std::to_string(&phase - phases.data()),
                   std::to_string(phase.converge_seconds));
  }
}

}  // namespace
}  // namespace berth::e2e
