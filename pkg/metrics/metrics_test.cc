#include "pkg/metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace berth::metrics {
namespace {

namespace ep = framework::runtime::extension_point;
using framework::Code;
using framework::Status;

// One parsed sample line: name{labels} value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> types;  // family -> counter/gauge/histogram
  std::vector<Sample> samples;

  std::vector<Sample> Find(const std::string& name,
                           const std::map<std::string, std::string>& match = {}) const {
    std::vector<Sample> out;
    for (const auto& s : samples) {
      if (s.name != name) continue;
      bool ok = true;
      for (const auto& [k, v] : match) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) ok = false;
      }
      if (ok) out.push_back(s);
    }
    return out;
  }
  double Value(const std::string& name, const std::map<std::string, std::string>& match) const {
    auto found = Find(name, match);
    EXPECT_EQ(found.size(), 1u) << name;
    return found.empty() ? -1 : found[0].value;
  }
  // Label keys of the family's samples (without "le"), which must be the same on every sample.
  std::set<std::string> LabelKeys(const std::string& family) const {
    std::set<std::set<std::string>> seen;
    for (const auto& s : samples) {
      if (s.name != family && s.name != family + "_bucket" && s.name != family + "_sum" &&
          s.name != family + "_count") {
        continue;
      }
      std::set<std::string> keys;
      for (const auto& [k, v] : s.labels) {
        if (k != "le") keys.insert(k);
      }
      seen.insert(keys);
    }
    EXPECT_EQ(seen.size(), 1u) << family << " has samples with different label sets";
    return seen.empty() ? std::set<std::string>{} : *seen.begin();
  }
  // Finite "le" bounds of the family's first series.
  std::vector<double> Buckets(const std::string& family) const {
    std::vector<double> out;
    std::map<std::string, std::string> first;
    for (const auto& s : samples) {
      if (s.name != family + "_bucket") continue;
      auto labels = s.labels;
      std::string le = labels["le"];
      labels.erase("le");
      if (out.empty() && first.empty()) first = labels;
      if (labels != first) continue;
      if (le != "+Inf") out.push_back(std::stod(le));
    }
    return out;
  }
};

Exposition Parse(const std::string& text) {
  Exposition out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      out.types[name] = type;
      continue;
    }
    if (line[0] == '#') continue;
    Sample s;
    size_t brace = line.find('{');
    size_t space = line.rfind(' ');
    if (brace != std::string::npos && brace < space) {
      s.name = line.substr(0, brace);
      size_t close = line.rfind('}');
      std::string labels = line.substr(brace + 1, close - brace - 1);
      size_t pos = 0;
      while (pos < labels.size()) {
        size_t eq = labels.find('=', pos);
        size_t q1 = labels.find('"', eq);
        size_t q2 = q1 + 1;
        while (labels[q2] != '"' || labels[q2 - 1] == '\\') q2++;
        s.labels[labels.substr(pos, eq - pos)] = labels.substr(q1 + 1, q2 - q1 - 1);
        pos = q2 + 1;
        if (pos < labels.size() && labels[pos] == ',') pos++;
      }
    } else {
      s.name = line.substr(0, space);
    }
    s.value = std::stod(line.substr(space + 1));
    out.samples.push_back(std::move(s));
  }
  return out;
}

void ExpectBuckets(const Exposition& e, const std::string& family, double start, double factor,
                   int count) {
  auto buckets = e.Buckets(family);
  ASSERT_EQ(buckets.size(), static_cast<size_t>(count)) << family;
  double expected = start;
  for (int i = 0; i < count; i++) {
    EXPECT_NEAR(buckets[i], expected, expected * 1e-9) << family << " bucket " << i;
    expected *= factor;
  }
}

// Feeds every metric once so each family has a series.
Exposition ScrapeAfterEveryKindOfObservation(SchedulerMetrics& m) {
  m.ForExtensionPoint(ep::kFilter, "berth-scheduler")->Observe(Status(), 0.002);
  m.ForExtensionPoint(ep::kBind, "berth-scheduler")->Observe(Status(Code::kError, "boom"), 0.01);
  auto* fit = m.ForPlugin("NodeResourcesFit", ep::kFilter, "berth-scheduler");
  fit->ObserveDuration(Status(), 0.00002);
  fit->AddEvaluations(500);
  m.ForPlugin("DefaultBinder", ep::kBind, "berth-scheduler")->AddEvaluations(7);
  m.ObservePermitWait(Status(), 0.5);
  const auto& profile = m.ForProfile("berth-scheduler");
  profile.attempts[static_cast<int>(AttemptResult::kScheduled)]->Increment();
  profile.attempt_duration[static_cast<int>(AttemptResult::kScheduled)]->Observe(0.004);
  m.ObserveSchedulingAlgorithm(0.001);
  m.ObservePodScheduled(1, 0.2);
  m.ObservePodScheduled(40, 9.0);
  m.ObserveEventHandling(HandledEvent::kNodeAdd, 0.0001);
  m.IncomingPod("active", "UnscheduledPodAdd");
  m.IncomingPod("active", "UnscheduledPodAdd");
  m.IncomingPod("backoff", "ScheduleAttemptFailure");
  m.SetPendingPods({3, 2, 1, 4});
  m.SetUnschedulablePods({{{"NodeResourcesFit", "berth-scheduler"}, 5}});
  m.SetCacheSize(10, 20, 2);
  m.SetReflectorCounts("pods", 1, 1);
  m.PreemptionAttempts().Increment(0);
  auto observer = m.RequestObserver("127.0.0.1:6443");
  observer("POST", 201, std::chrono::milliseconds(3));
  observer("LIST", 200, std::chrono::milliseconds(30));
  observer("GET", 0, std::chrono::milliseconds(1));
  return Parse(m.Scrape());
}

TEST(SchedulerMetricsTest, NamesTypesLabelsAndBucketsMatchKubeScheduler) {
  SchedulerMetrics m({"0.1.0", "abc123"});
  Exposition e = ScrapeAfterEveryKindOfObservation(m);

  struct Family {
    std::string name;
    std::string type;
    std::set<std::string> labels;
  };
  const std::vector<Family> families = {
      {"scheduler_framework_extension_point_duration_seconds",
       "histogram",
       {"extension_point", "status", "profile"}},
      {"scheduler_plugin_execution_duration_seconds",
       "histogram",
       {"plugin", "extension_point", "status"}},
      {"scheduler_plugin_evaluation_total", "counter", {"plugin", "extension_point", "profile"}},
      {"scheduler_schedule_attempts_total", "counter", {"result", "profile"}},
      {"scheduler_scheduling_attempt_duration_seconds", "histogram", {"result", "profile"}},
      {"scheduler_scheduling_algorithm_duration_seconds", "histogram", {}},
      {"scheduler_pod_scheduling_sli_duration_seconds", "histogram", {"attempts"}},
      {"scheduler_pod_scheduling_attempts", "histogram", {}},
      {"scheduler_pending_pods", "gauge", {"queue"}},
      {"scheduler_queue_incoming_pods_total", "counter", {"queue", "event"}},
      {"scheduler_unschedulable_pods", "gauge", {"plugin", "profile"}},
      {"scheduler_permit_wait_duration_seconds", "histogram", {"result"}},
      {"scheduler_event_handling_duration_seconds", "histogram", {"event"}},
      {"scheduler_cache_size", "gauge", {"type"}},
      {"scheduler_preemption_attempts_total", "counter", {}},
      {"scheduler_preemption_victims", "histogram", {}},
      {"rest_client_requests_total", "counter", {"code", "method", "host"}},
      {"rest_client_request_duration_seconds", "histogram", {"verb", "host"}},
      {"berth_build_info", "gauge", {"version", "git_commit"}},
      {"berth_informer_relists_total", "counter", {"resource"}},
      {"berth_informer_watch_restarts_total", "counter", {"resource"}},
  };
  for (const auto& f : families) {
    SCOPED_TRACE(f.name);
    ASSERT_TRUE(e.types.count(f.name)) << "not registered";
    EXPECT_EQ(e.types[f.name], f.type);
    EXPECT_EQ(e.LabelKeys(f.name), f.labels);
  }

  ExpectBuckets(e, "scheduler_framework_extension_point_duration_seconds", 0.0001, 2, 12);
  ExpectBuckets(e, "scheduler_plugin_execution_duration_seconds", 0.00001, 1.5, 20);
  ExpectBuckets(e, "scheduler_scheduling_attempt_duration_seconds", 0.001, 2, 15);
  ExpectBuckets(e, "scheduler_scheduling_algorithm_duration_seconds", 0.001, 2, 15);
  ExpectBuckets(e, "scheduler_pod_scheduling_sli_duration_seconds", 0.01, 2, 20);
  ExpectBuckets(e, "scheduler_pod_scheduling_attempts", 1, 2, 5);
  ExpectBuckets(e, "scheduler_permit_wait_duration_seconds", 0.001, 2, 15);
  ExpectBuckets(e, "scheduler_event_handling_duration_seconds", 0.0001, 2, 12);
  ExpectBuckets(e, "scheduler_preemption_victims", 1, 2, 7);
  std::vector<double> rest = e.Buckets("rest_client_request_duration_seconds");
  EXPECT_EQ(rest, (std::vector<double>{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}));
}

TEST(SchedulerMetricsTest, ObservationsLandOnTheRightSeries) {
  SchedulerMetrics m({"0.1.0", "abc123"});
  Exposition e = ScrapeAfterEveryKindOfObservation(m);
  EXPECT_EQ(
      e.Value("scheduler_framework_extension_point_duration_seconds_count",
              {{"extension_point", "Bind"}, {"status", "Error"}, {"profile", "berth-scheduler"}}),
      1);
  EXPECT_EQ(e.Value("scheduler_plugin_evaluation_total",
                    {{"plugin", "NodeResourcesFit"}, {"extension_point", "Filter"}}),
            500);
  // upstream counts evaluations only at PreFilter, Filter, PreScore and Score.
  EXPECT_TRUE(e.Find("scheduler_plugin_evaluation_total", {{"plugin", "DefaultBinder"}}).empty());
  EXPECT_EQ(e.Value("scheduler_schedule_attempts_total",
                    {{"result", "scheduled"}, {"profile", "berth-scheduler"}}),
            1);
  EXPECT_EQ(e.Value("scheduler_pod_scheduling_sli_duration_seconds_count", {{"attempts", "15+"}}),
            1);
  EXPECT_EQ(e.Value("scheduler_pod_scheduling_sli_duration_seconds_count", {{"attempts", "1"}}), 1);
  EXPECT_EQ(e.Value("scheduler_queue_incoming_pods_total",
                    {{"queue", "active"}, {"event", "UnscheduledPodAdd"}}),
            2);
  EXPECT_EQ(e.Value("scheduler_pending_pods", {{"queue", "gated"}}), 4);
  EXPECT_EQ(e.Value("scheduler_cache_size", {{"type", "assumed_pods"}}), 2);
  EXPECT_EQ(e.Value("rest_client_requests_total", {{"code", "<error>"}, {"method", "GET"}}), 1);
  // LIST is a GET on the wire, as client-go labels it.
  EXPECT_EQ(e.Value("rest_client_requests_total", {{"code", "200"}, {"method", "GET"}}), 1);
  EXPECT_EQ(e.Value("rest_client_request_duration_seconds_count", {{"verb", "GET"}}), 2);
  EXPECT_EQ(e.Value("berth_build_info", {{"version", "0.1.0"}, {"git_commit", "abc123"}}), 1);
}

TEST(SchedulerMetricsTest, UnschedulablePodsDropToZeroWhenThePluginNoLongerRejects) {
  SchedulerMetrics m({"v", "c"});
  m.SetUnschedulablePods({{{"NodeAffinity", "p"}, 3}, {{"TaintToleration", "p"}, 1}});
  m.SetUnschedulablePods({{{"TaintToleration", "p"}, 2}});
  Exposition e = Parse(m.Scrape());
  EXPECT_EQ(e.Value("scheduler_unschedulable_pods", {{"plugin", "NodeAffinity"}}), 0);
  EXPECT_EQ(e.Value("scheduler_unschedulable_pods", {{"plugin", "TaintToleration"}}), 2);
}

TEST(SchedulerMetricsTest, ReflectorCountersCountOnlyRestarts) {
  SchedulerMetrics m({"v", "c"});
  m.SetReflectorCounts("pods", 1, 1);
  EXPECT_EQ(Parse(m.Scrape()).Value("berth_informer_relists_total", {{"resource", "pods"}}), 0);
  m.SetReflectorCounts("pods", 3, 5);
  m.SetReflectorCounts("pods", 3, 5);
  Exposition e = Parse(m.Scrape());
  EXPECT_EQ(e.Value("berth_informer_relists_total", {{"resource", "pods"}}), 2);
  EXPECT_EQ(e.Value("berth_informer_watch_restarts_total", {{"resource", "pods"}}), 4);
}

TEST(SchedulerMetricsTest, ScrapeHooksRunBeforeSerializing) {
  SchedulerMetrics m({"v", "c"});
  size_t nodes = 0;
  m.AddScrapeHook([&] { m.SetCacheSize(++nodes, 0, 0); });
  EXPECT_EQ(Parse(m.Scrape()).Value("scheduler_cache_size", {{"type", "nodes"}}), 1);
  EXPECT_EQ(Parse(m.Scrape()).Value("scheduler_cache_size", {{"type", "nodes"}}), 2);
}

TEST(SchedulerMetricsTest, HandlesAreResolvedOnceAndShared) {
  SchedulerMetrics m({"v", "c"});
  EXPECT_EQ(m.ForExtensionPoint(ep::kScore, "a"), m.ForExtensionPoint(ep::kScore, "a"));
  EXPECT_NE(m.ForExtensionPoint(ep::kScore, "a"), m.ForExtensionPoint(ep::kScore, "b"));
  EXPECT_EQ(m.ForPlugin("X", ep::kScore, "a"), m.ForPlugin("X", ep::kScore, "a"));
  EXPECT_EQ(&m.ForProfile("a"), &m.ForProfile("a"));
}

}  // namespace
}  // namespace berth::metrics
