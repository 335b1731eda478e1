// The hostile-object suite. A real berth-scheduler process keeps binding a steady stream of
// ordinary pods while objects with extreme values arrive through the real apiserver: requests and
// node allocatable near 2^63 and 1e18 (cpu, memory, an extended resource), pods with thousands of
// tolerations, node-affinity terms or pod anti-affinity terms, a node with a hundred thousand
// labels, huge label selectors, a thousand topology spread constraints, PodGroups with minMember
// 2147483647, with minResources, scheduleTimeoutSeconds or exponents at their limits, and groups
// that name each other where an API lets them. `berth-scheduler explain` is asked about every
// hostile pod while the stream runs.
//
// Passes when: the scheduler stays up; its peak RSS (VmHWM) stays under kRssBoundMiB; every
// ordinary pod is bound; no node is over-committed (the sum of the requests of the pods bound to
// it, in exact integer arithmetic, is at most its allocatable); every hostile pod is bound where
// it fits or Pending with a message that says why (a FailedScheduling event or a PodScheduled=False
// condition). Each size the apiserver refuses is searched down to the largest it accepts, and the
// report names the limit that refused it. Peak RSS and the ordinary pods' scheduling latency
// (creation to bound) are printed beside a baseline run without the hostile objects, in the same
// invocation; nothing asserts on time.
//
// `make test` runs the short form (sizes a tenth of the full ones, about 40 s); `make hostile`
// runs the full one (BERTH_HOSTILE_FULL=1). BERTH_HOSTILE_NO_EXPLAIN=1 leaves the explain calls
// out, to see the other cases when explain is what fails.

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
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "e2e/harness.h"
#include "e2e/quantity_sum.h"
#include "test/integration/gang_fixture.h"
#include "test/testing/cluster.h"
#include "test/testing/failure_recap.h"
#include "test/testing/process.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The bound on the scheduler's peak RSS. The baseline run (the ordinary stream alone) peaks at
// about 28 MiB and the hostile run, explain calls aside, at about 39 MiB (short form), so 512 MiB
// leaves room for every per-object copy a cycle makes while still catching a size-proportional
// blow-up (a gang of 2^31 members, a label set copied per node per cycle).
constexpr int64_t kRssBoundMiB = 512;
// Past this the sampler SIGKILLs the scheduler: the machine is shared, and the suite has failed
// anyway.
constexpr int64_t kRssKillMiB = 2048;

constexpr char kExtended[] = "example.com/widget";
constexpr char kMaxInt64[] = "9223372036854775807";  // 2^63 - 1
constexpr char kTwoTo62[] = "4611686018427387904";   // 2^62: two of them are 2^63

struct HostileOptions {
  bool full = false;
  int ordinary_pods = 150;
  std::chrono::milliseconds ordinary_period = 100ms;  // One ordinary pod created per period.
  int tolerations = 1000;
  int affinity_terms = 1000;
  int node_labels = 10000;
  int selector_expressions = 100;
  int selector_values = 20;
  int spread_constraints = 1000;
  // How long the end state may take to settle before the suite fails: a hang detector.
  std::chrono::seconds deadline = 120s;

  static HostileOptions FromEnvironment() {
    HostileOptions o;
    if (const char* full = std::getenv("BERTH_HOSTILE_FULL"); full != nullptr && *full == '1') {
      o.full = true;
      o.ordinary_pods = 1000;
      o.ordinary_period = 60ms;
      o.tolerations = 10000;
      o.affinity_terms = 10000;
      o.node_labels = 100000;
      o.selector_expressions = 1000;
      o.selector_values = 100;
      o.deadline = 300s;
    }
    if (const char* pods = std::getenv("BERTH_HOSTILE_ORDINARY_PODS");
        pods != nullptr && *pods != '\0') {
      o.ordinary_pods = std::max(1, std::atoi(pods));
    }
    return o;
  }
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Tail(const std::string& s, size_t n) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

std::string OneLine(std::string s, size_t n = 160) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.size() > n ? s.substr(0, n) + "..." : s;
}

// --- RSS
// ------------------------------------------------------------------------------------------

// The "<key>: <n> kB" value of /proc/<pid>/status, or -1.
int64_t StatusKiB(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1);
  }
  return -1;
}

// Samples the process's VmRSS and VmHWM every 100 ms; kills it past kRssKillMiB.
class RssSampler {
 public:
  explicit RssSampler(pid_t pid)
      : pid_(pid), thread_([this](std::stop_token stop) {
          while (!stop.stop_requested()) {
            Sample();
            std::this_thread::sleep_for(100ms);
          }
        }) {}

  int64_t peak_kib() {
    Sample();
    return peak_kib_;
  }
  bool killed() const { return killed_; }

 private:
  void Sample() {
    std::lock_guard lock(mu_);
    const int64_t hwm = StatusKiB(pid_, "VmHWM");
    const int64_t rss = StatusKiB(pid_, "VmRSS");
    peak_kib_ = std::max({peak_kib_.load(), hwm, rss});
    if (rss > kRssKillMiB * 1024 && !killed_) {
      killed_ = true;
      ::kill(pid_, SIGKILL);
    }
  }

  const pid_t pid_;
  std::mutex mu_;
  std::atomic<int64_t> peak_kib_{0};
  std::atomic<bool> killed_{false};
  std::jthread thread_;
};

// --- the explain CLI
// --------------------------------------------------------------------------------

// A ServiceAccount allowed what the chart's debug-reader ClusterRole grants, its token in a file.
struct DebugReader {
  explicit DebugReader(const std::shared_ptr<client::Client>& admin)
      : account(admin, "default", "berth-hostile-explainer-" + testing::UniqueSuffix()),
        grant(admin, "berth-hostile-debug-" + testing::UniqueSuffix(),
              json::parse(R"([{"nonResourceURLs": ["/debug/pods", "/debug/pods/*"],
                               "verbs": ["get"]}])"),
              account.Subject()),
        token_file(testing::WriteTempFile("hostile-explainer.token", account.token())) {
    testing::WaitUntilAllowed(*admin, account.UserName(), "get", "/debug/pods/x/y");
  }
  testing::ServiceAccountToken account;
  testing::ClusterRoleGrant grant;
  std::string token_file;
};

struct ExplainRun {
  int exit_code = -1;  // -1: did not exit within the hang detector's minute.
  size_t output_bytes = 0;
  std::string first_line;
  // When it hung: what the scheduler logged meanwhile and whether it answers a probe afterwards,
  // which tells a stuck CLI from a stuck request or a stuck server.
  std::string hang_report;
};

ExplainRun Explain(const BerthProcess& berth, const DebugReader& reader, const std::string& pod) {
  testing::ChildProcess cli;
  const std::string log = testing::WriteTempFile("hostile-explain.log", "");
  const size_t scheduler_log_at = berth.Log().size();
  cli.Start({testing::BinaryPath("berth-scheduler"), "explain", pod, "--server", berth.url(),
             "--token-file", reader.token_file, "--insecure-skip-tls-verify"},
            log);
  ExplainRun run;
  run.exit_code = cli.WaitExit(60s);
  if (run.exit_code == -1) {
    const std::string scheduler_log = berth.Log();
    const auto probe_start = Clock::now();
    const HttpReply probe = HttpGet(berth.url() + "/readyz?verbose", reader.account.token());
    const auto probe_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - probe_start).count();
    run.hang_report =
        "/readyz?verbose with the same token after the hang: " + std::to_string(probe.status) +
        " in " + std::to_string(probe_ms) + " ms; the CLI's output so far: \"" +
        OneLine(Tail(cli.Log(), 300)) + "\"; the scheduler's log meanwhile (its end):\n" +
        Tail(scheduler_log.substr(std::min(scheduler_log_at, scheduler_log.size())), 4000);
    cli.Stop(SIGKILL, 10s);
  }
  const std::string output = cli.Log();
  run.output_bytes = output.size();
  run.first_line = output.substr(0, output.find('\n'));
  if (run.exit_code != 0) run.first_line = OneLine(Tail(output, 300));
  return run;
}

// --- one run
// ----------------------------------------------------------------------------------------

// One hostile object: what was asked, what the apiserver accepted, and what became of it.
struct HostileCase {
  using Placement =
      std::function<std::string(const nlohmann::json& pod, const nlohmann::json& node)>;
  HostileCase(std::string name_, std::string what_, std::string path_, json object_, bool is_pod_,
              Placement placement_ = nullptr)
      : name(std::move(name_)),
        what(std::move(what_)),
        path(std::move(path_)),
        object(std::move(object_)),
        is_pod(is_pod_),
        placement(std::move(placement_)) {}

  std::string name;
  std::string what;
  std::string path;  // Where it is POSTed.
  json object;
  bool is_pod = false;
  // For a pod: "" when the node it was bound to is a correct place for it, else why not.
  Placement placement;
  // Filled in as the run goes.
  bool created = false;
  std::string refusal;  // The apiserver's answer when it refused the object.
  std::string outcome;
  std::optional<ExplainRun> explain;
};

struct RunReport {
  std::string label;
  int64_t peak_rss_kib = 0;
  int ordinary_created = 0;
  int ordinary_bound = 0;
  std::vector<double> latencies;  // Seconds from the POST to the binding seen by a watch.
  bool scheduler_alive = false;
  bool rss_killed = false;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

class HostileRun {
 public:
  HostileRun(const std::string& label, const HostileOptions& options)
      : options_(options),
        client_(testing::AdminClient()),
        ns_(client_, "hostile"),
        nodes_(client_),
        scheduler_("berth-hostile-" + testing::UniqueSuffix()) {
    report_.label = label;
  }

  ~HostileRun() {
    stop_ = true;
    if (watch_stream_) watch_stream_->Stop();
  }

  void StartScheduler() {
    // Ordinary nodes: room for every ordinary pod twice over, whatever the hostile nodes take.
    const int nodes = std::max(2, options_.ordinary_pods / 20 + 1);
    for (int i = 0; i < nodes; i++) nodes_.Add("n" + std::to_string(i), "4", "16Gi");
    // The CRD first: Berth reads the PodGroup API only when discovery at its start finds it.
    ASSERT_NO_FATAL_FAILURE(testing::InstallPodGroupCrd(*client_));
    berth_ = std::make_unique<BerthProcess>(scheduler_, SchedulerConfig(scheduler_, false));
    ASSERT_TRUE(
        testing::Eventually([&] { return HttpGet(berth_->url() + "/readyz").status == 200; }, 60s))
        << berth_->Log();
    rss_ = std::make_unique<RssSampler>(berth_->process().pid());
    watcher_ = std::jthread([this] { WatchBindings(); });
  }

  // Creates the ordinary pods, one per period, from a thread of their own.
  void StartOrdinaryStream() {
    creator_ = std::jthread([this] {
      auto next = Clock::now();
      for (int i = 0; i < options_.ordinary_pods && !stop_; i++) {
        json pod =
            testing::PodManifest(ns_.name(), "o-" + std::to_string(i), scheduler_, "100m", "64Mi");
        pod["metadata"]["labels"]["berth-hostile"] = "ordinary";
        pod["spec"]["nodeSelector"]["berth-it"] = nodes_.id();
        const auto at = Clock::now();
        try {
          client_->Post(PodsPath(), pod);
          std::lock_guard lock(mu_);
          created_at_["o-" + std::to_string(i)] = at;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "could not create ordinary pod " << i << ": " << e.what();
        }
        next += options_.ordinary_period;
        std::this_thread::sleep_until(next);
      }
    });
  }

  void JoinOrdinaryStream() {
    if (creator_.joinable()) creator_.join();
  }

  // Waits until every ordinary pod is bound and `settled` holds, the scheduler exits, or the
  // deadline passes.
  void Settle(const std::function<bool()>& settled) {
    const auto deadline = Clock::now() + options_.deadline;
    while (Clock::now() < deadline && berth_->process().Running()) {
      if (OrdinaryBound() == options_.ordinary_pods && (!settled || settled())) return;
      std::this_thread::sleep_for(500ms);
    }
  }

  int OrdinaryBound() {
    std::lock_guard lock(mu_);
    return static_cast<int>(bound_at_.size());
  }

  // The end-state checks every run makes.
  RunReport Finish() {
    report_.peak_rss_kib = rss_->peak_kib();
    report_.rss_killed = rss_->killed();
    report_.scheduler_alive = berth_->process().Running();
    {
      std::lock_guard lock(mu_);
      report_.ordinary_created = static_cast<int>(created_at_.size());
      for (const auto& [pod, at] : bound_at_) {
        if (auto c = created_at_.find(pod); c != created_at_.end()) {
          report_.latencies.push_back(Seconds(at - c->second));
        }
      }
      report_.ordinary_bound = static_cast<int>(bound_at_.size());
    }
    EXPECT_TRUE(report_.scheduler_alive) << report_.label << ": berth-scheduler exited\n"
                                         << LogTail();
    EXPECT_FALSE(report_.rss_killed)
        << report_.label << ": killed past " << kRssKillMiB << " MiB RSS";
    EXPECT_LE(report_.peak_rss_kib, kRssBoundMiB * 1024)
        << report_.label << ": peak RSS " << report_.peak_rss_kib / 1024 << " MiB";
    EXPECT_EQ(report_.ordinary_created, options_.ordinary_pods) << report_.label;
    EXPECT_EQ(CountBound("berth-hostile=ordinary"), report_.ordinary_created)
        << report_.label << ": ordinary pods left Pending\n"
        << LogTail();
    CheckNoNodeOverCommitted();
    return report_;
  }

  // --- hostile objects ---------------------------------------------------------------------------

  std::string PodsPath() const { return "/api/v1/namespaces/" + ns_.name() + "/pods"; }
  const std::string& ns() const { return ns_.name(); }
  const std::string& scheduler() const { return scheduler_; }
  const std::string& node_id() const { return nodes_.id(); }
  client::Client& client() { return *client_; }
  BerthProcess& berth() { return *berth_; }

  json Pod(const std::string& name, const json& requests = json::object()) {
    json pod = testing::PodManifest(ns_.name(), name, scheduler_, "", "");
    pod["metadata"]["labels"]["berth-hostile"] = "hostile";
    pod["spec"]["nodeSelector"]["berth-it"] = nodes_.id();
    auto& resources = pod["spec"]["containers"][0]["resources"];
    resources["requests"] = requests;
    // An extended resource may not be overcommitted: its limit must equal its request.
    if (requests.contains(kExtended)) resources["limits"][kExtended] = requests[kExtended];
    return pod;
  }

  // A node of this run with `allocatable` (cpu, memory, pods, extended) as given.
  void AddNode(const std::string& suffix, const json& allocatable,
               const std::function<void(json&)>& customize = nullptr) {
    nodes_.Add(suffix, "1", "1Gi", [&](json& node) {
      for (const auto& [k, v] : allocatable.items()) {
        node["status"]["capacity"][k] = v;
        node["status"]["allocatable"][k] = v;
      }
      if (customize) customize(node);
    });
  }

  // Creates the case's object; a refusal is recorded, not a failure: what the apiserver accepts
  // is what a user can send.
  void Create(HostileCase& c) {
    try {
      client_->Post(c.path, c.object);
      c.created = true;
    } catch (const client::ApiError& e) {
      c.refusal = OneLine(e.what(), 240);
      c.outcome = "refused by the apiserver";
    }
  }

  // The largest n <= want for which the apiserver accepts make(n), found by creating and
  // deleting probes under the name `probe` at `path`; *limit gets the refusal of the smallest
  // size refused ("" when `want` was accepted).
  int LargestAccepted(int want, const std::string& path, const std::string& probe,
                      const std::function<json(int)>& make, std::string* limit) {
    auto accepted = [&](int n) {
      json o = make(n);
      o["metadata"]["name"] = probe;
      // Probes are for the apiserver alone: no scheduler's.
      if (o["kind"] == "Pod") o["spec"]["schedulerName"] = "berth-hostile-probe";
      try {
        client_->Post(path, o);
      } catch (const client::ApiError& e) {
        *limit = OneLine(e.what(), 240);
        return false;
      }
      client_->Delete(path + "/" + probe + "?gracePeriodSeconds=0");
      // A probe whose deletion is still in flight would refuse the next one as AlreadyExists.
      testing::Eventually(
          [&] {
            try {
              client_->Get(path + "/" + probe);
              return false;
            } catch (const client::ApiError&) {
              return true;
            }
          },
          30s);
      return true;
    };
    limit->clear();
    if (accepted(want)) return want;
    std::string refused_at = *limit;
    int lo = 0;
    int hi = want;  // Refused.
    while (hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      if (accepted(mid)) {
        lo = mid;
      } else {
        hi = mid;
        refused_at = *limit;
      }
    }
    *limit = refused_at + " (first refused at " + std::to_string(hi) + ")";
    return lo;
  }

  // Whether every given hostile pod is bound or Pending with a message.
  bool HostilePodsSettled(const std::vector<HostileCase>& cases) {
    try {
      const auto events = FailedSchedulingMessages();
      for (const auto& c : cases) {
        if (!c.is_pod || !c.created) continue;
        const json pod =
            client_->Get(PodsPath() + "/" + c.object["metadata"]["name"].get<std::string>());
        if (!pod["spec"].value("nodeName", "").empty()) continue;
        if (PendingMessage(pod, events).empty()) return false;
      }
      return true;
    } catch (const client::ApiError&) {
      return false;
    }
  }

  // Fills in each pod case's outcome and checks it.
  void CheckHostilePods(std::vector<HostileCase>& cases) {
    const auto events = FailedSchedulingMessages();
    for (auto& c : cases) {
      if (!c.is_pod || !c.created) continue;
      const std::string name = c.object["metadata"]["name"];
      const json pod = client_->Get(PodsPath() + "/" + name);
      const std::string node_name = pod["spec"].value("nodeName", "");
      if (!node_name.empty()) {
        c.outcome = "bound to " + node_name.substr(nodes_.id().size() + 1);
        const json node = client_->Get("/api/v1/nodes/" + node_name);
        std::string wrong = PlacementError(pod, node);
        if (wrong.empty() && c.placement) wrong = c.placement(pod, node);
        EXPECT_EQ(wrong, "") << c.name << " bound to " << node_name;
        if (!wrong.empty()) c.outcome += " WRONGLY: " + wrong;
        continue;
      }
      const std::string message = PendingMessage(pod, events);
      c.outcome = "Pending: " + (message.empty() ? "(no message)" : OneLine(message));
      EXPECT_NE(message, "") << c.name << " is Pending without a FailedScheduling event or a "
                             << "PodScheduled=False message";
    }
  }

  // The scheduler's warnings and errors (the first 60), then the end of its log.
  std::string LogExcerpt() const {
    if (!berth_) return "";
    std::istringstream in(berth_->Log());
    std::string line;
    std::string out;
    int shown = 0;
    while (std::getline(in, line) && shown < 60) {
      if (line.find("Z E ") != std::string::npos || line.find("Z W ") != std::string::npos) {
        out += OneLine(line, 400) + "\n";
        shown++;
      }
    }
    return out + "...\n" + LogTail();
  }
  std::string LogTail() const { return berth_ ? Tail(berth_->Log(), 3000) : ""; }

 private:
  // What every placement must satisfy: the pod's nodeSelector.
  static std::string PlacementError(const json& pod, const json& node) {
    const json labels = node["metadata"].value("labels", json::object());
    const json selector = pod["spec"].value("nodeSelector", json::object());
    for (const auto& [k, v] : selector.items()) {
      if (labels.value(k, std::string("\x01")) != v.get<std::string>()) {
        return "nodeSelector " + k + "=" + v.get<std::string>() + " not met";
      }
    }
    return "";
  }

  // The pod's PodScheduled=False message, else the note of a FailedScheduling event on it.
  static std::string PendingMessage(const json& pod,
                                    const std::map<std::string, std::string>& events) {
    for (const auto& c : pod["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
          !c.value("message", "").empty()) {
        return c["message"];
      }
    }
    const auto it = events.find(pod["metadata"]["name"]);
    return it != events.end() ? it->second : "";
  }

  // Pod name -> the message of a FailedScheduling event on it (non-empty ones only).
  std::map<std::string, std::string> FailedSchedulingMessages() {
    std::map<std::string, std::string> out;
    const json events = client_->Get("/api/v1/namespaces/" + ns_.name() +
                                     "/events?fieldSelector=reason%3DFailedScheduling");
    for (const auto& e : events["items"]) {
      const std::string message = e.value("message", "");
      if (!message.empty()) out[e["involvedObject"].value("name", "")] = message;
    }
    return out;
  }

  int CountBound(const std::string& selector) {
    const json pods = client_->Get(PodsPath() + "?labelSelector=" + selector);
    int n = 0;
    for (const auto& p : pods["items"]) n += p["spec"].value("nodeName", "").empty() ? 0 : 1;
    return n;
  }

  // Per node of this run and per resource: the requests of the pods bound to it, summed
  // exactly, at most its allocatable; and no more pods than its "pods".
  void CheckNoNodeOverCommitted() {
    const json pods = client_->Get(PodsPath());
    std::map<std::string, ResourceSum> used;
    std::map<std::string, int64_t> count;
    for (const auto& p : pods["items"]) {
      const std::string node = p["spec"].value("nodeName", "");
      if (node.empty()) continue;
      std::string error;
      ASSERT_TRUE(AddPodRequests(p["spec"], &used[node], &error))
          << p["metadata"]["name"] << ": " << error;
      count[node]++;
    }
    for (const auto& [node_name, sum] : used) {
      const json node = client_->Get("/api/v1/nodes/" + node_name);
      ResourceSum allocatable;
      std::string error;
      ASSERT_TRUE(ParseResourceList(node["status"]["allocatable"], &allocatable, &error))
          << node_name << ": " << error;
      for (const auto& [resource, amount] : sum) {
        const auto it = allocatable.find(resource);
        const Nanos have = it != allocatable.end() ? it->second : 0;
        EXPECT_LE(amount, have) << node_name << " over-committed in " << resource << ": "
                                << FormatNanos(amount) << " requested by its pods, "
                                << FormatNanos(have) << " allocatable";
        if (amount > have) overcommitted_ = true;
      }
      const auto pods_it = allocatable.find("pods");
      if (pods_it != allocatable.end()) {
        EXPECT_LE(static_cast<Nanos>(count[node_name]) * kNanosPerUnit, pods_it->second)
            << node_name << " holds " << count[node_name] << " pods";
      }
    }
  }

  // Records the time each ordinary pod is first seen bound.
  void WatchBindings() {
    client::WatchOptions options;
    options.label_selector = "berth-hostile=ordinary";
    options.timeout_seconds = 60;
    while (!stop_) {
      try {
        auto stream = client_->Watch(PodsPath(), options);
        {
          std::lock_guard lock(mu_);
          if (stop_) return;
          watch_stream_ = stream.get();
        }
        client::WatchEvent event;
        while (stream->Next(&event)) {
          const auto now = Clock::now();
          if (event.type == client::WatchEventType::kBookmark ||
              event.type == client::WatchEventType::kError) {
            continue;
          }
          options.resource_version = event.object["metadata"].value("resourceVersion", "");
          if (event.object["spec"].value("nodeName", "").empty()) continue;
          std::lock_guard lock(mu_);
          bound_at_.emplace(event.object["metadata"]["name"].get<std::string>(), now);
        }
        std::lock_guard lock(mu_);
        watch_stream_ = nullptr;
      } catch (const client::ApiError&) {
        std::lock_guard lock(mu_);
        watch_stream_ = nullptr;
        options.resource_version.clear();  // Relist (a 410 or a lost connection).
        std::this_thread::sleep_for(200ms);
      }
    }
  }

  const HostileOptions options_;
  std::shared_ptr<client::Client> client_;
  testing::TestNamespace ns_;
  testing::TestNodes nodes_;
  const std::string scheduler_;
  std::unique_ptr<BerthProcess> berth_;
  std::unique_ptr<RssSampler> rss_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, Clock::time_point> created_at_;  // Guarded by mu_.
  std::map<std::string, Clock::time_point> bound_at_;    // Guarded by mu_.
  client::WatchStream* watch_stream_ = nullptr;          // Guarded by mu_.
  RunReport report_;
  bool overcommitted_ = false;
  std::jthread creator_;
  std::jthread watcher_;
};

// --- the hostile objects ------------------------------------------------------------------------

std::string Key(const char* prefix, int i) { return prefix + std::to_string(i); }

// Everything the hostile run creates, in order; sizes the apiserver refuses are searched down.
std::vector<HostileCase> CreateHostileObjects(HostileRun& run, const HostileOptions& o,
                                              std::vector<std::string>* notes) {
  std::vector<HostileCase> cases;
  const std::string pods = run.PodsPath();
  auto pod_case = [&](const std::string& name, const std::string& what, json pod,
                      HostileCase::Placement placement = nullptr) {
    pod["metadata"]["name"] = name;
    HostileCase c(name, what, pods, std::move(pod), true, std::move(placement));
    run.Create(c);
    cases.push_back(std::move(c));
  };

  // Nodes with allocatable near 2^63 and 1e18, and pods that fit one of them exactly or not at
  // all. Of five pods of 2^62 each (created first, so they find the nodes empty), at most one
  // fits the 2^63-1 node and two the 2^63 one: in millicores or in bytes those sums pass int64,
  // so arithmetic that saturates instead of refusing lets more bind, and the exact sums catch
  // the over-commit.
  run.AddNode(
      "max",
      {{"cpu", kMaxInt64}, {"memory", kMaxInt64}, {kExtended, kMaxInt64}, {"pods", kMaxInt64}});
  run.AddNode("exa", {{"cpu", "1E"}, {"memory", "1E"}, {kExtended, "1E"}, {"pods", "110"}});
  run.AddNode("two63", {{"cpu", "9223372036854775808"}, {"memory", "8Ei"}, {"pods", "110"}});
  notes->push_back("nodes: allocatable cpu/memory/" + std::string(kExtended) + "/pods 2^63-1; " +
                   "cpu/memory/" + kExtended + " 1E (1e18); cpu 2^63 and memory 8Ei (2^63)");

  for (int i = 0; i < 5; i++) {
    const std::string n = std::to_string(i);
    pod_case("q-cpu-half-" + n, "cpu 2^62 (#" + n + ")", run.Pod("", {{"cpu", kTwoTo62}}));
    pod_case("q-mem-half-" + n, "memory 2^62 (#" + n + ")", run.Pod("", {{"memory", kTwoTo62}}));
    pod_case("q-ext-half-" + n, "widget 2^62 (#" + n + ")", run.Pod("", {{kExtended, kTwoTo62}}));
  }
  pod_case("q-cpu-max", "cpu 2^63-1", run.Pod("", {{"cpu", kMaxInt64}}));
  pod_case("q-cpu-max-milli", "cpu 2^63-1 m", run.Pod("", {{"cpu", std::string(kMaxInt64) + "m"}}));
  pod_case("q-cpu-1e18", "cpu 1e18", run.Pod("", {{"cpu", "1e18"}}));
  pod_case("q-cpu-two63", "cpu 2^63", run.Pod("", {{"cpu", "9223372036854775808"}}));
  pod_case("q-mem-max", "memory 2^63-1", run.Pod("", {{"memory", kMaxInt64}}));
  pod_case("q-mem-8ei", "memory 8Ei (2^63)", run.Pod("", {{"memory", "8Ei"}}));
  pod_case("q-mem-1e18", "memory 1e18", run.Pod("", {{"memory", "1e18"}}));
  pod_case("q-ext-max", "widget 2^63-1", run.Pod("", {{kExtended, kMaxInt64}}));
  pod_case("q-ext-1e18", "widget 1E", run.Pod("", {{kExtended, "1E"}}));
  pod_case("q-all-max", "cpu+memory+widget 2^63-1",
           run.Pod("", {{"cpu", kMaxInt64}, {"memory", kMaxInt64}, {kExtended, kMaxInt64}}));

  pod_case("q-cpu-1e19", "cpu 1e19 (past int64 in units)", run.Pod("", {{"cpu", "1e19"}}));

  // The pod `make(n)` for the largest n <= want the apiserver accepts (probed as `probe`),
  // described as "<n> <what>" with the refusal that bounded n, if one did.
  auto largest_pod_case = [&](const std::string& name, const std::string& probe, int want,
                              const std::string& what, const std::function<json(int)>& make) {
    std::string refusal;
    const int n = run.LargestAccepted(want, pods, probe, make, &refusal);
    pod_case(name, std::to_string(n) + " " + what + (refusal.empty() ? "" : " [" + refusal + "]"),
             make(n));
  };
  // make(n) for the probes: a run's pod with item(0) .. item(n-1) in the array at `at`.
  auto pod_with_items = [&run](const char* at, std::function<json(int)> item) {
    return [&run, at = json::json_pointer(at), item = std::move(item)](int n) {
      json pod = run.Pod("");
      json& list = pod[at];
      list = json::array();
      for (int i = 0; i < n; i++) list.push_back(item(i));
      return pod;
    };
  };

  // Tolerations, each of its own key.
  largest_pod_case(
      "tolerations", "probe-tolerations", o.tolerations, "tolerations",
      pod_with_items("/spec/tolerations", [](int i) {
        return json{{"key", Key("t", i)}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
      }));

  // Required node affinity: n terms, ORed, only the last of which the run's nodes meet.
  auto node_affinity = [&](int n) {
    json pod = run.Pod("");
    json terms = json::array();
    for (int i = 0; i + 1 < n; i++) {
      terms.push_back(
          {{"matchExpressions", {{{"key", Key("a", i)}, {"operator", "In"}, {"values", {"x"}}}}}});
    }
    terms.push_back({{"matchExpressions",
                      {{{"key", "berth-it"}, {"operator", "In"}, {"values", {run.node_id()}}}}}});
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
       ["nodeSelectorTerms"] = std::move(terms);
    return pod;
  };
  largest_pod_case("node-affinity", "probe-node-affinity", o.affinity_terms,
                   "required node-affinity terms", node_affinity);

  largest_pod_case(
      "node-preferred", "probe-preferred", o.affinity_terms,
      "preferred node-affinity terms (weight 100)",
      pod_with_items(
          "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution", [](int i) {
            return json{{"weight", 100},
                        {"preference",
                         {{"matchExpressions", {{{"key", Key("p", i)}, {"operator", "Exists"}}}}}}};
          }));

  // Required pod anti-affinity: n terms whose selectors match no pod, so every node passes,
  // each checked against every pod on every node.
  largest_pod_case(
      "pod-anti-affinity", "probe-anti-affinity", o.affinity_terms,
      "required pod anti-affinity terms",
      pod_with_items(
          "/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution",
          [](int i) {
            return json{{"labelSelector", {{"matchLabels", {{Key("s", i), "x"}}}}},
                        {"topologyKey", "kubernetes.io/hostname"}};
          }));

  // One huge selector: E expressions of V values each, in a preferred pod-affinity term and in
  // a required anti-affinity term (which, NotIn on keys no pod has, selects every pod).
  const int e = o.selector_expressions;
  const int v = o.selector_values;
  auto huge_selector = [&](const char* op) {
    json expressions = json::array();
    for (int i = 0; i < e; i++) {
      json values = json::array();
      for (int j = 0; j < v; j++) values.push_back(Key("v", j));
      expressions.push_back({{"key", Key("k", i)}, {"operator", op}, {"values", values}});
    }
    return json{{"matchExpressions", expressions}};
  };
  {
    json pod = run.Pod("");
    pod["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = {
        {{"weight", 100},
         {"podAffinityTerm",
          {{"labelSelector", huge_selector("In")},
           {"namespaceSelector", huge_selector("NotIn")},
           {"topologyKey", "kubernetes.io/hostname"}}}}};
    pod_case("selector-preferred",
             "preferred pod affinity, label and namespace selectors of " + std::to_string(e) +
                 " expressions x " + std::to_string(v) + " values",
             pod);
    json anti = run.Pod("");
    // Kept off the labels node, the one place the spread pod below can go.
    anti["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"] = {
            {{"matchExpressions",
              {{{"key", "berth-hostile-labels"}, {"operator", "DoesNotExist"}}}}}};
    anti["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
        {{{"labelSelector", huge_selector("NotIn")},
          {"namespaceSelector", json::object()},
          {"topologyKey", "kubernetes.io/hostname"}}};
    pod_case("selector-anti-all",
             "required anti-affinity, NotIn selector of " + std::to_string(e) + " x " +
                 std::to_string(v) + " selecting every pod in every namespace",
             anti);
  }
  // Label selectors do not nest; the one deep structure a user can send is an unknown field,
  // which the apiserver prunes or refuses.
  {
    json deep = json::array();
    for (int i = 0; i < 5000; i++) deep = json::array({std::move(deep)});
    json pod = run.Pod("");
    pod["spec"]["affinity"]["nodeAffinity"]["hostileNesting"] = std::move(deep);
    pod_case("nested-unknown-field", "an unknown field nested 5000 arrays deep in the affinity",
             pod);
  }

  // Topology spread: 1,000 constraints, two per key (DoNotSchedule, ScheduleAnyway); only the
  // labels node has the keys, so the pod can go there or nowhere.
  const int keys = o.spread_constraints / 2;
  {
    json pod = run.Pod("");
    pod["metadata"]["labels"]["spread"] = "me";
    json constraints = json::array();
    for (int i = 0; i < keys; i++) {
      for (const char* when : {"DoNotSchedule", "ScheduleAnyway"}) {
        constraints.push_back({{"maxSkew", 1},
                               {"topologyKey", Key("z", i)},
                               {"whenUnsatisfiable", when},
                               {"labelSelector", {{"matchLabels", {{"spread", "me"}}}}}});
      }
    }
    pod["spec"]["topologySpreadConstraints"] = std::move(constraints);
    pod["metadata"]["name"] = "spread";
    HostileCase c{"spread",
                  std::to_string(keys * 2) + " topology spread constraints",
                  pods,
                  pod,
                  true,
                  [keys](const json&, const json& node) -> std::string {
                    const json labels = node["metadata"].value("labels", json::object());
                    for (int i = 0; i < keys; i++) {
                      if (!labels.contains(Key("z", i))) return "node lacks " + Key("z", i);
                    }
                    return "";
                  }};
    // Created after the labels node, below.
    cases.push_back(std::move(c));
  }

  // The labels node: as many labels as the apiserver takes, and the spread keys.
  auto labelled = [&](int n) {
    json node = testing::NodeManifest("probe", "4", "16Gi");
    for (int i = 0; i < n; i++) node["metadata"]["labels"][Key("h", i)] = "v";
    for (int i = 0; i < keys; i++) node["metadata"]["labels"][Key("z", i)] = "z";
    return node;
  };
  const std::string probe_node = run.node_id() + "-probe-labels";
  std::string limit;
  const int n = run.LargestAccepted(o.node_labels, "/api/v1/nodes", probe_node, labelled, &limit);
  run.AddNode("labels", {{"cpu", "4"}, {"memory", "16Gi"}}, [&](json& node) {
    json labels = labelled(n)["metadata"]["labels"];
    labels.erase("kubernetes.io/hostname");
    labels["berth-hostile-labels"] = "true";
    for (const auto& [k, value] : labels.items()) node["metadata"]["labels"][k] = value;
  });
  notes->push_back("node labels: " + std::to_string(n) + " of " + std::to_string(o.node_labels) +
                   " asked (+" + std::to_string(keys) + " spread keys)" +
                   (limit.empty() ? "" : "; limit: " + limit));
  for (auto& c : cases) {
    if (c.name == "spread") run.Create(c);
  }

  // PodGroups, in each API the cluster serves.
  client::Client& client = run.client();
  const std::string groups = client::PodGroupsResource().Path(run.ns());
  // A PodGroup of `api_version` named `name` at `path`, reported as `prefix` + name; `created`
  // gives the outcome when the apiserver takes it.
  auto podgroup_case = [&](const std::string& prefix, const std::string& path,
                           const char* api_version, const std::string& name,
                           const std::string& what, json spec,
                           const std::function<std::string()>& created) {
    HostileCase c{prefix + name,
                  what,
                  path,
                  {{"apiVersion", api_version},
                   {"kind", "PodGroup"},
                   {"metadata", {{"name", name}}},
                   {"spec", std::move(spec)}},
                  false,
                  nullptr};
    run.Create(c);
    if (c.created) c.outcome = created();
    cases.push_back(std::move(c));
  };
  auto group_case = [&](const std::string& name, const std::string& what, json spec) {
    podgroup_case("pg/", groups, "scheduling.x-k8s.io/v1alpha1", name, what, std::move(spec),
                  [] { return "created"; });
  };
  auto member = [&](const std::string& name, const std::string& group, json requests,
                    const std::string& workload_group = "",
                    HostileCase::Placement placement = nullptr) {
    json pod = run.Pod("", std::move(requests));
    if (!group.empty()) pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group;
    if (!workload_group.empty())
      pod["spec"]["schedulingGroup"] = {{"podGroupName", workload_group}};
    pod_case(name, "member of " + (group.empty() ? workload_group : group), pod,
             std::move(placement));
  };
  group_case("max-member", "minMember 2147483647", {{"minMember", 2147483647}});
  member("g-max-0", "max-member", {{"cpu", "100m"}});
  member("g-max-1", "max-member", {{"cpu", "100m"}});
  group_case("over-int32", "minMember 2^63-1 (int32 format)",
             {{"minMember", 9223372036854775807LL}});
  member("g-over-0", "over-int32", {{"cpu", "100m"}});
  group_case(
      "max-resources", "minMember 1, minResources cpu/memory/widget 2^63-1",
      {{"minMember", 1},
       {"minResources", {{"cpu", kMaxInt64}, {"memory", kMaxInt64}, {kExtended, kMaxInt64}}}});
  member("g-res-0", "max-resources", {{"cpu", "100m"}});
  group_case("huge-exponent", "minMember 1, minResources cpu 1e2147483648",
             {{"minMember", 1}, {"minResources", {{"cpu", "1e2147483648"}}}});
  // No cluster ever has that much free: a pod of these groups that binds was let through by a
  // sum that saturated to the same value as the minimum.
  const HostileCase::Placement never = [](const json&, const json&) -> std::string {
    return "its group's minResources exceed what any cluster has, yet it was tried";
  };
  member("g-exp-0", "huge-exponent", {{"cpu", "100m"}}, "", never);
  group_case("long-digits", "minMember 1, minResources memory of 100,000 digits",
             {{"minMember", 1}, {"minResources", {{"memory", std::string(100000, '9')}}}});
  member("g-digits-0", "long-digits", {{"cpu", "100m"}}, "", never);
  group_case("negative", "minMember 1, minResources cpu -9223372036854775808",
             {{"minMember", 1}, {"minResources", {{"cpu", "-9223372036854775808"}}}});
  member("g-neg-0", "negative", {{"cpu", "100m"}});
  group_case("max-timeout", "minMember 2, scheduleTimeoutSeconds 2147483647",
             {{"minMember", 2}, {"scheduleTimeoutSeconds", 2147483647}});
  member("g-timeout-0", "max-timeout", {{"cpu", "100m"}});
  member("g-timeout-1", "max-timeout", {{"cpu", "100m"}});

  if (testing::ApiServed(client, "/apis/scheduling.k8s.io/v1beta1", "podgroups")) {
    const std::string workload = client::WorkloadPodGroupsResource().Path(run.ns());
    auto workload_case = [&](const std::string& name, const std::string& what, json spec) {
      podgroup_case("wpg/", workload, "scheduling.k8s.io/v1beta1", name, what, std::move(spec),
                    [&] {
                      // A field behind a feature gate that is off is dropped, not refused: say
                      // what was kept.
                      const json stored = run.client().Get(workload + "/" + name);
                      return "created; spec as stored: " + stored["spec"].dump();
                    });
    };
    workload_case("max-count", "gang minCount 2147483647",
                  {{"schedulingPolicy", {{"gang", {{"minCount", 2147483647}}}}}});
    member("w-max-0", "", {{"cpu", "100m"}}, "max-count");
    member("w-max-1", "", {{"cpu", "100m"}}, "max-count");
    // Groups that name each other: a composite parent loop, where the apiserver lets one say it.
    workload_case("loop-a", "parentCompositePodGroupName loop-b",
                  {{"schedulingPolicy", {{"gang", {{"minCount", 1}}}}},
                   {"parentCompositePodGroupName", "loop-b"}});
    workload_case("loop-b", "parentCompositePodGroupName loop-a",
                  {{"schedulingPolicy", {{"gang", {{"minCount", 1}}}}},
                   {"parentCompositePodGroupName", "loop-a"}});
    member("w-loop-0", "", {{"cpu", "100m"}}, "loop-a");
    // One pod in two groups, one of each API, each waiting on the other's minimum.
    workload_case("cross", "gang minCount 2",
                  {{"schedulingPolicy", {{"gang", {{"minCount", 2}}}}}});
    group_case("cross", "minMember 3", {{"minMember", 3}});
    member("w-cross-0", "cross", {{"cpu", "100m"}}, "cross");
    member("w-cross-1", "cross", {{"cpu", "100m"}}, "cross");
  } else {
    notes->push_back("scheduling.k8s.io/v1beta1 PodGroups are not served: their cases skipped");
  }
  return cases;
}

void PrintCases(const std::vector<HostileCase>& cases) {
  std::printf("\nhostile objects:\n  %-22s %-70s\n", "case", "what");
  for (const auto& c : cases) {
    std::printf("  %-22s %s\n", c.name.c_str(), OneLine(c.what, 200).c_str());
    if (!c.refusal.empty()) std::printf("  %22s refused: %s\n", "", c.refusal.c_str());
    if (!c.outcome.empty() && c.refusal.empty()) {
      std::printf("  %22s -> %s\n", "", c.outcome.c_str());
    }
    if (c.explain) {
      std::printf("  %22s explain: exit %d, %zu bytes: %s\n", "", c.explain->exit_code,
                  c.explain->output_bytes, OneLine(c.explain->first_line, 120).c_str());
    }
  }
}

void PrintComparison(const RunReport& baseline, const RunReport& hostile) {
  std::printf("\nhostile: RSS bound %lld MiB (peak = VmHWM of /proc/<pid>/status)\n",
              static_cast<long long>(kRssBoundMiB));
  std::printf("  %-10s %10s %8s %12s %12s %12s %6s\n", "run", "peak RSS", "bound", "p50 latency",
              "p99 latency", "max latency", "alive");
  for (const RunReport* r : {&baseline, &hostile}) {
    std::printf("  %-10s %6.1f MiB %4d/%-4d %11.3fs %11.3fs %11.3fs %6s\n", r->label.c_str(),
                static_cast<double>(r->peak_rss_kib) / 1024.0, r->ordinary_bound,
                r->ordinary_created, Percentile(r->latencies, 0.50), Percentile(r->latencies, 0.99),
                Percentile(r->latencies, 1.0), r->scheduler_alive ? "yes" : "NO");
  }
  std::fflush(stdout);
}

TEST(HostileE2E, HostileObjectsNeitherStopNorOverCommitNorStarveOrdinaryPods) {
  const HostileOptions options = HostileOptions::FromEnvironment();
  std::printf("hostile: %s form, %d ordinary pods per run\n", options.full ? "full" : "short",
              options.ordinary_pods);

  // The baseline: the same stream of ordinary pods with nothing hostile about.
  RunReport baseline;
  {
    HostileRun run("baseline", options);
    ASSERT_NO_FATAL_FAILURE(run.StartScheduler());
    run.StartOrdinaryStream();
    run.JoinOrdinaryStream();
    run.Settle(nullptr);
    baseline = run.Finish();
  }

  HostileRun run("hostile", options);
  ASSERT_NO_FATAL_FAILURE(run.StartScheduler());
  DebugReader reader(testing::AdminClient());
  run.StartOrdinaryStream();
  std::vector<std::string> notes;
  std::vector<HostileCase> cases;
  ASSERT_NO_FATAL_FAILURE(cases = CreateHostileObjects(run, options, &notes));
  // Explain every hostile pod while the stream runs, then once more when it settled.
  auto explain_all = [&] {
    for (auto& c : cases) {
      if (!c.is_pod || !c.created || !run.berth().process().Running()) continue;
      c.explain = Explain(run.berth(), reader, run.ns() + "/" + c.name);
    }
  };
  const char* no_explain = std::getenv("BERTH_HOSTILE_NO_EXPLAIN");
  const bool explain = no_explain == nullptr || std::string(no_explain) != "1";
  if (explain) explain_all();
  run.JoinOrdinaryStream();
  run.Settle([&] { return run.HostilePodsSettled(cases); });
  if (explain) explain_all();
  run.CheckHostilePods(cases);
  const RunReport hostile = run.Finish();

  for (const auto& note : notes) std::printf("hostile: %s\n", note.c_str());
  PrintCases(cases);
  PrintComparison(baseline, hostile);
  for (const auto& c : cases) {
    if (c.explain && run.berth().process().Running()) {
      EXPECT_NE(c.explain->exit_code, -1)
          << "explain " << c.name << " hung; " << c.explain->hang_report;
    }
  }
  if (::testing::Test::HasFailure()) {
    std::printf("\n--- berth-scheduler log: warnings and errors, then its tail ---\n%s\n",
                run.LogExcerpt().c_str());
  }
  // Last, so that a log cut in the middle still shows what failed.
  testing::PrintFailureRecap();
  RecordProperty("baseline_peak_rss_kib", std::to_string(baseline.peak_rss_kib));
  RecordProperty("hostile_peak_rss_kib", std::to_string(hostile.peak_rss_kib));
  RecordProperty("baseline_p99_seconds", std::to_string(Percentile(baseline.latencies, 0.99)));
  RecordProperty("hostile_p99_seconds", std::to_string(Percentile(hostile.latencies, 0.99)));
}

}  // namespace
}  // namespace berth::e2e
