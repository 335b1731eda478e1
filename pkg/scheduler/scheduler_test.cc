// The scheduler core without an apiserver: cluster events are fed to the Scheduler directly and a
// recording Bind plugin stands in for the binding subresource (the integration tests cover the
// real one).

#include "pkg/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <thread>

#include "pkg/api/resources.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using framework::Code;
using framework::Status;
using testing::NodeBuilder;
using testing::PodBuilder;

// Records bindings ("ns/name -> node") and lets tests fail or park them.
class RecordingBinder : public framework::BindPlugin, public framework::PermitPlugin {
 public:
  std::string_view Name() const override { return "RecordingBinder"; }
  Status Bind(framework::CycleState&, const api::Pod& pod, const std::string& node) override {
    if (slow_failures_) {
      // A slow apiserver that ends up refusing: the failure comes back after Stop began.
      active_++;
      std::this_thread::sleep_for(50ms);
      active_--;
      return Status::Error("simulated slow bind failure");
    }
    std::lock_guard lock(mu_);
    if (fail_next_) {
      fail_next_ = false;
      return Status::Error("simulated bind failure");
    }
    bound_[pod.Key()] = node;
    return {};
  }
  Status Permit(framework::CycleState&, const api::Pod& pod, const std::string&,
                std::chrono::milliseconds* timeout) override {
    if (pod.meta.labels.Contains("wait")) {
      *timeout = 30s;
      return Status::Wait();
    }
    return {};
  }
  std::map<std::string, std::string> bound() {
    std::lock_guard lock(mu_);
    return bound_;
  }
  void FailNext() {
    std::lock_guard lock(mu_);
    fail_next_ = true;
  }
  void FailSlowly() { slow_failures_ = true; }
  int active() const { return active_.load(); }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> bound_;
  bool fail_next_ = false;
  std::atomic<bool> slow_failures_{false};
  std::atomic<int> active_{0};
};

// A Bind plugin that binds with no thread of the scheduler's waiting: BindAsync queues the
// binding and the plugin's own thread answers it, as the client's I/O thread does, with the
// answers tests queue (bound when none is queued). Bind, the blocking path, binds at once.
class AnsweringBinder : public framework::AsyncBindPlugin {
 public:
  enum class Answer { kBound, kUnsettled, kRefused };

  AnsweringBinder() : thread_([this] { Run(); }) {}
  ~AnsweringBinder() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::string_view Name() const override { return "AnsweringBinder"; }
  Status Bind(framework::CycleState&, const api::Pod& pod, const std::string& node) override {
    std::lock_guard lock(mu_);
    blocking_binds_++;
    bound_[pod.Key()] = node;
    return {};
  }
  bool BindAsync(const api::Pod& pod, const std::string& node, BindDone done) override {
    std::lock_guard lock(mu_);
    if (decline_) return false;
    Answer answer = Answer::kBound;
    if (!answers_.empty()) {
      answer = answers_.front();
      answers_.pop_front();
    }
    pending_.push_back({pod.Key(), node, answer, std::move(done)});
    outstanding_++;
    most_outstanding_ = std::max(most_outstanding_, outstanding_);
    cv_.notify_all();
    return true;
  }

  void Queue(Answer answer) {
    std::lock_guard lock(mu_);
    answers_.push_back(answer);
  }
  void Decline() {
    std::lock_guard lock(mu_);
    decline_ = true;
  }
  void AnswerAfter(std::chrono::milliseconds delay) {
    std::lock_guard lock(mu_);
    delay_ = delay;
  }
  std::map<std::string, std::string> bound() {
    std::lock_guard lock(mu_);
    return bound_;
  }
  int blocking_binds() {
    std::lock_guard lock(mu_);
    return blocking_binds_;
  }
  int answered() {
    std::lock_guard lock(mu_);
    return answered_;
  }
  // The most bindings sent and not yet answered at any one time.
  int most_outstanding() {
    std::lock_guard lock(mu_);
    return most_outstanding_;
  }

 private:
  struct Pending {
    std::string pod;
    std::string node;
    Answer answer;
    BindDone done;
  };

  void Run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      Pending next = std::move(pending_.front());
      pending_.pop_front();
      const auto delay = delay_;
      lock.unlock();
      std::this_thread::sleep_for(delay);
      {
        std::lock_guard count_lock(mu_);
        outstanding_--;
      }
      std::optional<Status> outcome;
      if (next.answer == Answer::kBound) {
        std::lock_guard bound_lock(mu_);
        bound_[next.pod] = next.node;
        outcome = Status();
      } else if (next.answer == Answer::kRefused) {
        outcome = Status::Error("simulated refusal");
      }
      next.done(std::move(outcome));
      lock.lock();
      answered_++;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;  // Guarded by mu_, as is everything below.
  std::deque<Answer> answers_;
  std::map<std::string, std::string> bound_;
  std::chrono::milliseconds delay_{0};
  int blocking_binds_ = 0;
  int answered_ = 0;
  int outstanding_ = 0;
  int most_outstanding_ = 0;
  bool decline_ = false;
  bool stopping_ = false;
  std::thread thread_;  // Last: starts once everything above is ready.
};

class SchedulerTest : public ::testing::Test {
 protected:
  void Start(std::optional<uint64_t> seed = 7, metrics::SchedulerMetrics* metrics = nullptr,
             int plugin_sample_percent = 10, int binding_workers = 4,
             informer::SharedInformerFactory* informers = nullptr) {
    registry_ = plugins::registry::InTree();
    registry_["RecordingBinder"] = [this](const nlohmann::json&, framework::Handle&) {
      return binder_;
    };
    registry_["AnsweringBinder"] = [this](const nlohmann::json&, framework::Handle&) {
      return answering_binder_;
    };
    config::Configuration cfg = config::DefaultConfiguration();
    auto& plugins = cfg.profiles[0].plugins;
    plugins.bind.disabled.push_back({"*", 0});
    plugins.bind.enabled.push_back({bind_plugin_, 0});
    plugins.permit.enabled.push_back({"RecordingBinder", 0});
    SchedulerDeps deps;
    deps.recorder = &recorder_;
    deps.metrics = metrics;
    deps.informers = informers;
    SchedulerOptions options;
    options.seed = seed;
    options.plugin_metrics_sample_percent = plugin_sample_percent;
    options.binding_workers = binding_workers;
    scheduler_ = std::make_unique<Scheduler>(cfg, registry_, deps, options);
    if (informers != nullptr) scheduler_->AddAllEventHandlers();
  }

  // Runs cycles until the queue has nothing active, then waits for binding cycles.
  void Drain() {
    while (scheduler_->queue().PendingPods().active > 0) scheduler_->ScheduleOne();
    for (int i = 0; i < 500 && scheduler_->InFlightBindings() > 0; i++) {
      std::this_thread::sleep_for(5ms);
    }
  }

  // After one failed binding of pod default/p: it was forgotten (its room freed, nothing bound),
  // and a later try binds it to `node`. `bound` reads the Bind plugin's bindings.
  void ExpectForgottenThenBoundTo(
      const std::string& node, const std::function<std::map<std::string, std::string>()>& bound) {
    EXPECT_TRUE(bound().empty());
    EXPECT_EQ(scheduler_->stats().bind_failures.load(), 1u);
    EXPECT_EQ(scheduler_->cache().Size().assumed_pods, 0u) << "a failed bind must forget the pod";
    for (int i = 0; i < 300 && bound().empty(); i++) {
      std::this_thread::sleep_for(10ms);
      scheduler_->queue().FlushBackoffQCompleted();
      Drain();
    }
    EXPECT_EQ(bound()["default/p"], node) << "the room the failed bind held is free again";
  }

  std::shared_ptr<RecordingBinder> binder_ = std::make_shared<RecordingBinder>();
  std::shared_ptr<AnsweringBinder> answering_binder_ = std::make_shared<AnsweringBinder>();
  std::string bind_plugin_ = "RecordingBinder";  // The profile's one Bind plugin.
  framework::runtime::Registry registry_;
  testing::FakeRecorder recorder_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, BindsToTheLeastAllocatedFittingNode) {
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("small").Capacity("1", "2Gi").Build());
  scheduler_->OnNodeAdd(NodeBuilder("big").Capacity("8", "16Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("p").Container("500m", "1Gi").Build());
  Drain();
  EXPECT_EQ(binder_->bound()["default/p"], "big");
  auto events = recorder_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "Scheduled");
  EXPECT_EQ(events[0].note, "Successfully assigned default/p to big");
}

TEST_F(SchedulerTest, AssumedPodsCountSoNodesAreNotOvercommitted) {
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("1", "4Gi").Build());
  scheduler_->OnNodeAdd(NodeBuilder("b").Capacity("1", "4Gi").Build());
  for (int i = 0; i < 5; i++) {
    scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Container("400m", "64Mi").Build());
  }
  Drain();
  std::map<std::string, int> per_node;
  for (const auto& [pod, node] : binder_->bound()) per_node[node]++;
  EXPECT_EQ(per_node["a"], 2);
  EXPECT_EQ(per_node["b"], 2);
  EXPECT_EQ(binder_->bound().size(), 4u) << "the fifth pod fits nowhere";
  // Failure events are sent from a background worker: wait for it.
  bool reported = false;
  for (int i = 0; i < 200 && !reported; i++) {
    for (const auto& e : recorder_.events()) {
      if (e.reason == "FailedScheduling") {
        EXPECT_EQ(e.type, "Warning");
        // All pods have one priority: DefaultPreemption finds nothing it may evict.
        EXPECT_EQ(e.note,
                  "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                  "available: 2 No preemption victims found for incoming pod.");
        reported = true;
      }
    }
    if (!reported) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(reported);
}

TEST_F(SchedulerTest, UnschedulablePodMovesWhenAFittingNodeIsAdded) {
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("1", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("big").Container("2", "64Mi").Build());
  Drain();
  EXPECT_TRUE(binder_->bound().empty());
  EXPECT_EQ(scheduler_->queue().PendingPods().unschedulable, 1u);
  scheduler_->OnNodeAdd(NodeBuilder("b").Capacity("4", "4Gi").Build());
  auto counts = scheduler_->queue().PendingPods();
  EXPECT_EQ(counts.unschedulable, 0u) << "NodeAdd must move the pod out of the pool";
  // It backs off for 1 s after its failed attempt before it is active again.
  scheduler_->queue().FlushBackoffQCompleted();
  for (int i = 0; i < 300 && scheduler_->queue().PendingPods().active == 0; i++) {
    std::this_thread::sleep_for(10ms);
    scheduler_->queue().FlushBackoffQCompleted();
  }
  Drain();
  EXPECT_EQ(binder_->bound()["default/big"], "b");
}

// The default profile's InterPodAffinity: replicas that avoid each other per host take one node
// each; the one left over says why, and deleting a replica lets it in (its queueing hint sees
// that the deleted pod matched its anti-affinity).
TEST_F(SchedulerTest, RequiredAntiAffinityKeepsReplicasApartAndRequeuesOnDelete) {
  Start();
  for (const char* name : {"a", "b", "c"}) {
    scheduler_->OnNodeAdd(NodeBuilder(name).Capacity("4", "8Gi").Build());
  }
  api::PodAffinityTerm term;
  term.label_selector.emplace().requirements.push_back(
      {"app", api::SelectorOperator::kIn, {"web"}, 0});
  term.topology_key = "kubernetes.io/hostname";
  std::map<std::string, api::PodPtr> pods;
  for (int i = 0; i < 4; i++) {
    PodBuilder b("web" + std::to_string(i));
    b.Container("100m", "64Mi").Label("app", "web");
    b.pod().spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(term);
    pods[b.pod().Key()] = b.Build();
    scheduler_->OnPodAdd(pods[b.pod().Key()]);
  }
  Drain();
  auto bound = binder_->bound();
  ASSERT_EQ(bound.size(), 3u);
  std::set<std::string> nodes;
  for (const auto& [pod, node] : bound) nodes.insert(node);
  EXPECT_EQ(nodes, (std::set<std::string>{"a", "b", "c"}));
  std::string pending;
  for (const auto& [key, pod] : pods) {
    if (!bound.count(key)) pending = key;
  }
  std::string note;
  for (int i = 0; i < 200 && note.empty(); i++) {
    for (const auto& e : recorder_.events()) {
      if (e.reason == "FailedScheduling" && e.pod_key == pending) note = e.note;
    }
    if (note.empty()) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(note,
            "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: "
            "0/3 nodes are available: 3 No preemption victims found for incoming pod.");
  EXPECT_EQ(scheduler_->queue().PendingPods().unschedulable, 1u);

  // The informer sees the bindings, then one replica deleted.
  std::string freed;
  for (const auto& [key, node] : bound) {
    auto assigned = std::make_shared<api::Pod>(*pods[key]);
    assigned->spec.node_name = node;
    scheduler_->OnPodUpdate(pods[key], assigned);
    pods[key] = assigned;
    freed = node;
  }
  const std::string victim = std::find_if(bound.begin(), bound.end(), [&](const auto& entry) {
                               return entry.second == freed;
                             })->first;
  scheduler_->OnPodDelete(pods[victim]);
  EXPECT_EQ(scheduler_->queue().PendingPods().unschedulable, 0u)
      << "deleting a pod the pending one avoids must requeue it";
  scheduler_->queue().FlushBackoffQCompleted();
  for (int i = 0; i < 300 && scheduler_->queue().PendingPods().active == 0; i++) {
    std::this_thread::sleep_for(10ms);
    scheduler_->queue().FlushBackoffQCompleted();
  }
  Drain();
  EXPECT_EQ(binder_->bound()[pending], freed);
}

TEST_F(SchedulerTest, TiesAreBrokenAtRandomButReproduciblyWithASeed) {
  auto placements = [&](uint64_t seed) {
    binder_ = std::make_shared<RecordingBinder>();
    Start(seed);
    for (int n = 0; n < 8; n++) {
      scheduler_->OnNodeAdd(NodeBuilder("n" + std::to_string(n)).Capacity("64", "256Gi").Build());
    }
    for (int i = 0; i < 16; i++) {
      // Requests nothing: every node scores the same for every pod.
      scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Build());
    }
    Drain();
    return binder_->bound();
  };
  auto first = placements(1);
  EXPECT_EQ(first, placements(1));
  std::set<std::string> used;
  for (const auto& [pod, node] : first) used.insert(node);
  EXPECT_GT(used.size(), 3u) << "equal scores must not always pick the same node";
  EXPECT_NE(first, placements(2));
}

TEST_F(SchedulerTest, FailedBindForgetsTheAssumedPodAndRetries) {
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("1", "4Gi").Build());
  binder_->FailNext();
  scheduler_->OnPodAdd(PodBuilder("p").Container("800m", "64Mi").Build());
  Drain();
  ExpectForgottenThenBoundTo("a", [this] { return binder_->bound(); });
}

TEST_F(SchedulerTest, PermitWaitHoldsBindingUntilAllowed) {
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("4", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("gang").Label("wait", "yes").Container("1", "64Mi").Build());
  while (scheduler_->queue().PendingPods().active > 0) scheduler_->ScheduleOne();
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(binder_->bound().empty()) << "bound before Permit allowed it";
  auto* fwk = scheduler_->FrameworkFor("berth-scheduler");
  auto waiting = fwk->GetWaitingPod("uid-default-gang");
  ASSERT_NE(waiting, nullptr);
  waiting->Allow("RecordingBinder");
  Drain();
  EXPECT_EQ(binder_->bound()["default/gang"], "a");
}

TEST_F(SchedulerTest, IgnoresOtherSchedulersAndBoundPods) {
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("4", "4Gi").Build());
  auto theirs = PodBuilder("theirs").Container("1", "64Mi");
  theirs.pod().spec.scheduler_name = "default-scheduler";
  scheduler_->OnPodAdd(theirs.Build());
  scheduler_->OnPodAdd(PodBuilder("bound").Node("a").Container("3", "64Mi").Build());
  EXPECT_EQ(scheduler_->queue().PendingPods().active, 0u);
  // The bound pod's 3 cpu count: a 2-cpu pod no longer fits on the 4-cpu node.
  scheduler_->OnPodAdd(PodBuilder("ours").Container("2", "64Mi").Build());
  Drain();
  EXPECT_TRUE(binder_->bound().empty());
}

// A pod using a field no Berth plugin honours stays Pending with a reason naming the field, and
// no node event brings it back early, while a plain pod beside them is bound.
TEST_F(SchedulerTest, PodsUsingUnsupportedFieldsAreNotBoundAndSayWhy) {
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("4", "8Gi").Build());
  PodBuilder group("group");
  group.Container("100m", "64Mi").pod().spec.scheduling_group = "";
  scheduler_->OnPodAdd(group.Build());
  scheduler_->OnPodAdd(PodBuilder("plain").Container("100m", "64Mi").Build());
  Drain();

  EXPECT_EQ(binder_->bound(), (std::map<std::string, std::string>{{"default/plain", "a"}}));
  const std::map<std::string, std::string> want = {
      {"default/group",
       "0/1 nodes are available: pod uses spec.schedulingGroup (a scheduling group that names no "
       "PodGroup), which berth-scheduler does not support yet; use the default scheduler for this "
       "pod. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."},
  };
  std::map<std::string, std::string> failed;
  for (int i = 0; i < 200 && failed.size() < want.size(); i++) {
    failed.clear();
    for (const auto& e : recorder_.events()) {
      if (e.reason == "FailedScheduling") failed[e.pod_key] = e.note;
    }
    if (failed.size() < want.size()) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(failed, want);

  // A new node changes nothing for them: they wait in the unschedulable pool.
  EXPECT_EQ(scheduler_->queue().PendingPods().unschedulable, 1u);
  scheduler_->OnNodeAdd(NodeBuilder("b").Capacity("4", "8Gi").Build());
  EXPECT_EQ(scheduler_->queue().PendingPods().unschedulable, 1u);
}

// A pod whose claim does not exist waits with kube-scheduler's reason, and the claim's arrival
// (with its volume, bound on the only node it reaches) brings it back to be bound there.
TEST_F(SchedulerTest, APodWaitsForItsClaimAndGoesWhereItsVolumeIs) {
  informer::SharedInformerFactory informers(nullptr);
  Start(7, nullptr, 10, 4, &informers);
  informers.Nodes().Upsert(NodeBuilder("a").Capacity("4", "8Gi").Build());
  informers.Nodes().Upsert(NodeBuilder("b").Capacity("8", "16Gi").Build());
  PodBuilder pod("web-0");
  api::Volume volume;
  volume.name = "data";
  volume.source = "persistentVolumeClaim";
  volume.claim_name = "data-web-0";
  pod.Container("100m", "64Mi").pod().spec.volumes.push_back(volume);
  informers.Pods().Upsert(pod.Build());
  Drain();
  const auto failure = [&] {
    std::string note;
    for (const auto& e : recorder_.events()) {
      if (e.reason == "FailedScheduling") note = e.note;
    }
    return note;
  };
  const std::string want =
      "0/2 nodes are available: persistentvolumeclaim \"data-web-0\" not found. preemption: 0/2 "
      "nodes are available: 2 Preemption is not helpful for scheduling.";
  // Events are written off the scheduling thread.
  for (int i = 0; i < 200 && failure() != want; i++) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(failure(), want);
  EXPECT_TRUE(binder_->bound().empty());

  auto pv = std::make_shared<api::PersistentVolume>();
  pv->meta.name = "local-a";
  pv->meta.resource_version = "1";
  pv->spec.capacity = 1LL << 30;
  pv->spec.claim_ref = api::ClaimReference{"default", "data-web-0", "uid-claim"};
  api::NodeSelectorTerm term;
  term.match_expressions.push_back(
      {"kubernetes.io/hostname", api::SelectorOperator::kIn, {"a"}, 0});
  pv->spec.node_affinity = api::NodeSelector{{term}};
  pv->status.phase = api::PersistentVolumePhase::kBound;
  informers.For<api::PersistentVolume>().Upsert(pv);
  auto claim = std::make_shared<api::PersistentVolumeClaim>();
  claim->meta.name = "data-web-0";
  claim->meta.namespace_ = "default";
  claim->meta.uid = "uid-claim";
  claim->meta.resource_version = "2";
  claim->meta.annotations.Set(std::string(api::kBindCompletedAnnotation), "yes");
  claim->spec.volume_name = "local-a";
  claim->status.phase = api::PersistentVolumeClaimPhase::kBound;
  informers.For<api::PersistentVolumeClaim>().Upsert(claim);
  // The claim's arrival moved the pod out of the unschedulable pool; let its backoff pass.
  for (int i = 0; i < 300 && binder_->bound().empty(); i++) {
    scheduler_->queue().FlushBackoffQCompleted();
    Drain();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(binder_->bound(), (std::map<std::string, std::string>{{"default/web-0", "a"}}));
}

// The value of the sample printed exactly as `series` (labels in prometheus-cpp's sorted order),
// or -1 when absent.
double Sample(const std::string& exposition, const std::string& series) {
  size_t pos = exposition.find("\n" + series + " ");
  if (pos == std::string::npos) return -1;
  return std::stod(exposition.substr(pos + series.size() + 2));
}

TEST_F(SchedulerTest, PluginDurationsAreRecordedOnlyInSampledCyclesButEvaluationsAlways) {
  for (int percent : {0, 100}) {
    SCOPED_TRACE(percent);
    metrics::SchedulerMetrics m({"test", "test"});
    Start(7, &m, percent);
    for (int i = 0; i < 17; i++) {
      scheduler_->OnNodeAdd(NodeBuilder("n" + std::to_string(i)).Capacity("8", "16Gi").Build());
    }
    for (int i = 0; i < 5; i++) {
      scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Container("100m", "64Mi").Build());
    }
    Drain();
    ASSERT_EQ(binder_->bound().size(), 5u);
    const std::string text = m.Scrape();
    const double filter_durations =
        Sample(text,
               "scheduler_plugin_execution_duration_seconds_count{extension_point=\"Filter\","
               "plugin=\"NodeResourcesFit\",status=\"Success\"}");
    const double score_durations =
        Sample(text,
               "scheduler_plugin_execution_duration_seconds_count{extension_point=\"Score\","
               "plugin=\"NodeResourcesFit\",status=\"Success\"}");
    const double prefilter_durations =
        Sample(text,
               "scheduler_plugin_execution_duration_seconds_count{extension_point=\"PreFilter\","
               "plugin=\"NodeResourcesFit\",status=\"Success\"}");
    if (percent == 0) {
      EXPECT_EQ(text.find("scheduler_plugin_execution_duration_seconds_count"), std::string::npos);
    } else {
      // Per-node calls are timed on one node in 16 of each pass (the 1st and 17th of 17 nodes);
      // once-per-cycle points on every sampled cycle.
      EXPECT_EQ(filter_durations, 10) << "5 pods x 2 of 17 nodes";
      EXPECT_EQ(score_durations, 10) << "5 pods x 2 of 17 nodes";
      EXPECT_EQ(prefilter_durations, 5);
    }
    // Evaluations are counted in every cycle: 5 pods x 17 nodes at Filter, once per pod at
    // PreFilter.
    EXPECT_EQ(Sample(text,
                     "scheduler_plugin_evaluation_total{extension_point=\"Filter\","
                     "plugin=\"NodeResourcesFit\",profile=\"berth-scheduler\"}"),
              85);
    EXPECT_EQ(Sample(text,
                     "scheduler_plugin_evaluation_total{extension_point=\"PreFilter\","
                     "plugin=\"NodeResourcesFit\",profile=\"berth-scheduler\"}"),
              5);
    scheduler_.reset();
    binder_ = std::make_shared<RecordingBinder>();
  }
}

TEST_F(SchedulerTest, ScoresExactlyTheAdaptiveShareOfNodesAndFiltersNoFewer) {
  metrics::SchedulerMetrics m({"test", "test"});
  Start(7, &m, 0);
  // Every node fits, so Filter stops once 42% of 1,000 nodes have passed, in whatever order the
  // worker threads reach them; exactly that many are scored.
  for (int i = 0; i < 1000; i++) {
    scheduler_->OnNodeAdd(NodeBuilder("n" + std::to_string(i)).Capacity("8", "16Gi").Build());
  }
  for (int i = 0; i < 3; i++) {
    scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Container("100m", "64Mi").Build());
  }
  Drain();
  ASSERT_EQ(binder_->bound().size(), 3u);
  const std::string text = m.Scrape();
  EXPECT_EQ(Sample(text,
                   "scheduler_plugin_evaluation_total{extension_point=\"Score\","
                   "plugin=\"NodeResourcesFit\",profile=\"berth-scheduler\"}"),
            3 * 420);
  EXPECT_GE(Sample(text,
                   "scheduler_plugin_evaluation_total{extension_point=\"Filter\","
                   "plugin=\"NodeResourcesFit\",profile=\"berth-scheduler\"}"),
            3 * 420);
}

// After a cycle over many nodes, the next one starts part-way through the list; a cycle over the
// few nodes PreFilter kept must still start inside them.
TEST_F(SchedulerTest, PreFilterNarrowingAfterACycleOverManyNodesBindsToTheKeptNode) {
  Start();
  for (int i = 0; i < 300; i++) {
    scheduler_->OnNodeAdd(NodeBuilder("n" + std::to_string(i)).Capacity("8", "16Gi").Build());
  }
  scheduler_->OnPodAdd(PodBuilder("first").Container("100m", "64Mi").Build());
  Drain();
  ASSERT_EQ(binder_->bound().size(), 1u);

  auto pinned = PodBuilder("pinned").Container("100m", "64Mi").Build();
  api::Requirement name_in;
  name_in.key = "metadata.name";
  name_in.op = api::SelectorOperator::kIn;
  name_in.values = {"n7"};
  api::NodeSelectorTerm term;
  term.match_fields.push_back(std::move(name_in));
  api::NodeSelector required;
  required.terms.push_back(std::move(term));
  api::Affinity affinity;
  affinity.node_affinity.emplace().required = std::move(required);
  auto pod = std::make_shared<api::Pod>(*pinned);
  pod->spec.affinity = std::move(affinity);
  scheduler_->OnPodAdd(pod);
  Drain();
  EXPECT_EQ(binder_->bound()["default/pinned"], "n7");
}

TEST_F(SchedulerTest, AttemptsQueueAndUnschedulablePluginsAreMeasured) {
  metrics::SchedulerMetrics m({"test", "test"});
  Start(7, &m);
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("1", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("fits").Container("500m", "64Mi").Build());
  scheduler_->OnPodAdd(PodBuilder("too-big").Container("4", "64Mi").Build());
  Drain();
  const std::string text = m.Scrape();
  EXPECT_EQ(Sample(text,
                   "scheduler_schedule_attempts_total{profile=\"berth-scheduler\","
                   "result=\"scheduled\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "scheduler_schedule_attempts_total{profile=\"berth-scheduler\","
                   "result=\"unschedulable\"}"),
            1);
  EXPECT_EQ(Sample(text, "scheduler_pending_pods{queue=\"unschedulable\"}"), 1);
  EXPECT_EQ(Sample(text,
                   "scheduler_unschedulable_pods{plugin=\"NodeResourcesFit\","
                   "profile=\"berth-scheduler\"}"),
            1);
  EXPECT_EQ(Sample(text, "scheduler_cache_size{type=\"nodes\"}"), 1);
  EXPECT_EQ(Sample(text, "scheduler_pod_scheduling_attempts_count"), 1);
  EXPECT_EQ(Sample(text,
                   "scheduler_queue_incoming_pods_total{event=\"UnscheduledPodAdd\","
                   "queue=\"active\"}"),
            2);
  EXPECT_EQ(Sample(text, "scheduler_event_handling_duration_seconds_count{event=\"NodeAdd\"}"), 1);
  for (const char* point :
       {"PreFilter", "Filter", "Reserve", "Permit", "PreBind", "Bind", "PostBind"}) {
    EXPECT_NE(text.find("scheduler_framework_extension_point_duration_seconds_count{"
                        "extension_point=\"" +
                        std::string(point) + "\""),
              std::string::npos)
        << point;
  }
}

TEST(FitErrorMessage, CountsReasonsOverNodesSortedLikeUpstream) {
  Diagnosis d;
  d.node_to_status.Set("a", Status::Unschedulable("Insufficient cpu"));
  d.node_to_status.Set("b", Status::Unresolvable("node(s) had untolerated taint(s)"));
  d.node_to_status.Set("c", Status::Unschedulable("Insufficient cpu"));
  d.node_to_status.Set("d", Status::Unschedulable("Insufficient cpu"));
  d.node_to_status.Set("e", Status(Code::kUnschedulable,
                                   std::vector<std::string>{"Insufficient cpu", "Too many pods"}));
  EXPECT_EQ(FitErrorMessage(5, d),
            "0/5 nodes are available: 1 Too many pods, 1 node(s) had untolerated taint(s), 4 "
            "Insufficient cpu.");
  d.node_to_status.set_absent_nodes_status(
      Status::Unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"));
  EXPECT_EQ(FitErrorMessage(7, d),
            "0/7 nodes are available: 1 Too many pods, 1 node(s) had untolerated taint(s), 2 "
            "node(s) didn't satisfy plugin(s) [NodeAffinity], 4 Insufficient cpu.");
  Diagnosis pre;
  pre.pre_filter_msg = "node(s) didn't satisfy plugin NodeAffinity";
  pre.node_to_status.Set("a", Status::Unresolvable("ignored when PreFilter rejected"));
  EXPECT_EQ(FitErrorMessage(1, pre),
            "0/1 nodes are available: node(s) didn't satisfy plugin NodeAffinity.");
}

TEST(NodeToStatus, GetFallsBackToTheAbsentNodesStatus) {
  framework::NodeToStatus statuses;
  statuses.Set("a", Status::Unschedulable("Insufficient cpu"));
  statuses.Set("b", Status::Unresolvable("node(s) had untolerated taint(s)"));
  EXPECT_EQ(statuses.Get("a").Message(), "Insufficient cpu");
  EXPECT_EQ(statuses.Get("b").code(), Code::kUnschedulableAndUnresolvable);
  // Upstream's default for a node never filtered: preemption cannot help there.
  EXPECT_EQ(statuses.Get("z").code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_TRUE(statuses.Get("z").reasons().empty());

  framework::NodeToStatus pre_filtered;
  pre_filtered.set_absent_nodes_status(Status::Unschedulable("rejected by PreFilter"));
  EXPECT_EQ(pre_filtered.Get("a").Message(), "rejected by PreFilter");
}

TEST(PluginName, InternedNamesShareOneString) {
  const framework::PluginName a("NodeResourcesFit");
  const framework::PluginName b(std::string("NodeResources") + "Fit");
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_EQ(a.str(), "NodeResourcesFit");
  EXPECT_NE(&framework::PluginName("TaintToleration").str(), &a.str());
  EXPECT_TRUE(framework::PluginName().empty());
  Status s = Status::Unschedulable("x");
  s.WithPlugin(b);
  EXPECT_EQ(s.plugin(), "NodeResourcesFit");
  s.WithPlugin(std::string("NodeName"));
  EXPECT_EQ(s.plugin(), "NodeName");
}

TEST(NumFeasibleNodesToFind, MatchesUpstream) {
  EXPECT_EQ(NumFeasibleNodesToFind(0, 50), 50);
  EXPECT_EQ(NumFeasibleNodesToFind(0, 99), 99);
  EXPECT_EQ(NumFeasibleNodesToFind(0, 1000), 420);  // 50 - 1000/125 = 42%
  EXPECT_EQ(NumFeasibleNodesToFind(0, 5000), 500);  // 50 - 40 = 10%
  EXPECT_EQ(NumFeasibleNodesToFind(0, 6000), 300);  // max(5, 50 - 48) = 5%
  EXPECT_EQ(NumFeasibleNodesToFind(0, 1500), 570);  // 38%
  EXPECT_EQ(NumFeasibleNodesToFind(1, 1000), 100);  // at least 100
  EXPECT_EQ(NumFeasibleNodesToFind(30, 1000), 300);
  EXPECT_EQ(NumFeasibleNodesToFind(100, 1000), 1000);
}

}  // namespace
}  // namespace berth::scheduler

namespace berth::scheduler {
namespace {

// Stop with binding cycles in flight: they must all end, and their failures be reported, before
// Stop returns, so that nothing posts to the reporters or the queue once they are gone (a late
// failure used to reach a destroyed reporter queue from the binders' destructor).
TEST_F(SchedulerTest, StopEndsEveryInFlightBindingCycleAndReportsItsFailureFirst) {
  Start(7, nullptr, 10, /*binding_workers=*/32);
  binder_->FailSlowly();
  constexpr int kPods = 500;
  scheduler_->OnNodeAdd(NodeBuilder("big").Capacity("1000", "1000Gi", kPods).Build());
  for (int i = 0; i < kPods; i++) {
    scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Container("10m", "1Mi").Build());
  }
  while (scheduler_->queue().PendingPods().active > 0) scheduler_->ScheduleOne();
  ASSERT_GT(scheduler_->InFlightBindings(), 100);

  scheduler_->Stop(10ms);

  EXPECT_EQ(scheduler_->InFlightBindings(), 0);
  EXPECT_EQ(binder_->active(), 0);
  int failed = 0;
  for (const auto& event : recorder_.events()) {
    if (event.reason == "FailedScheduling") failed++;
  }
  EXPECT_EQ(failed, kPods);
  EXPECT_EQ(scheduler_->stats().bind_failures.load(), static_cast<uint64_t>(kPods));
  scheduler_.reset();
}

int CountEvents(const std::vector<testing::RecordedEvent>& events, const std::string& reason) {
  return static_cast<int>(std::count_if(events.begin(), events.end(),
                                        [&](const auto& e) { return e.reason == reason; }));
}

TEST_F(SchedulerTest, APodBoundWithoutABindingThreadIsFinishedWhenTheAnswerArrives) {
  bind_plugin_ = "AnsweringBinder";
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("4", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "64Mi").Build());
  Drain();
  EXPECT_EQ(answering_binder_->bound()["default/p"], "a");
  EXPECT_EQ(answering_binder_->blocking_binds(), 0) << "a binding thread bound it";
  EXPECT_EQ(scheduler_->stats().scheduled.load(), 1u);
  auto events = recorder_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "Scheduled");
  EXPECT_EQ(events[0].note, "Successfully assigned default/p to a");
}

TEST_F(SchedulerTest, ABindingWithoutAThreadIsMeasuredAtEveryExtensionPointOnce) {
  metrics::SchedulerMetrics m({"test", "test"});
  bind_plugin_ = "AnsweringBinder";
  answering_binder_->Queue(AnsweringBinder::Answer::kUnsettled);
  Start(7, &m);
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("4", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "64Mi").Build());
  scheduler_->OnPodAdd(PodBuilder("q").Container("1", "64Mi").Build());
  Drain();
  ASSERT_EQ(answering_binder_->bound().size(), 2u);
  ASSERT_EQ(answering_binder_->blocking_binds(), 1) << "p's answer left it unsettled";
  const std::string text = m.Scrape();
  // As kube-scheduler: PreBind is measured though no plugin had work, and the binding Bind
  // settled after BindAsync could not counts once.
  for (const char* point : {"PreBind", "Bind", "PostBind"}) {
    EXPECT_EQ(
        Sample(text,
               "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"" +
                   std::string(point) + "\",profile=\"berth-scheduler\",status=\"Success\"}"),
        2)
        << point;
  }
}

TEST_F(SchedulerTest, ABindingTheAnswerLeftUnsettledIsSettledByBind) {
  bind_plugin_ = "AnsweringBinder";
  answering_binder_->Queue(AnsweringBinder::Answer::kUnsettled);
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("4", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "64Mi").Build());
  Drain();
  EXPECT_EQ(answering_binder_->bound()["default/p"], "a");
  EXPECT_EQ(answering_binder_->blocking_binds(), 1);
  EXPECT_EQ(scheduler_->stats().bind_failures.load(), 0u);
  EXPECT_EQ(CountEvents(recorder_.events(), "Scheduled"), 1);
}

TEST_F(SchedulerTest, ABindingRefusedWithoutAThreadForgetsThePodAndRetries) {
  bind_plugin_ = "AnsweringBinder";
  answering_binder_->Queue(AnsweringBinder::Answer::kRefused);
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("1", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("p").Container("800m", "64Mi").Build());
  Drain();
  ExpectForgottenThenBoundTo("a", [this] { return answering_binder_->bound(); });
  EXPECT_EQ(answering_binder_->blocking_binds(), 0);
}

TEST_F(SchedulerTest, ABinderThatCannotStartWithoutAThreadBindsOnOne) {
  bind_plugin_ = "AnsweringBinder";
  answering_binder_->Decline();
  Start();
  scheduler_->OnNodeAdd(NodeBuilder("a").Capacity("4", "4Gi").Build());
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "64Mi").Build());
  Drain();
  EXPECT_EQ(answering_binder_->bound()["default/p"], "a");
  EXPECT_EQ(answering_binder_->blocking_binds(), 1);
  EXPECT_EQ(answering_binder_->answered(), 0);
}

TEST_F(SchedulerTest, NoMoreBindingsAreInFlightWithoutAThreadThanThereAreBindingWorkers) {
  bind_plugin_ = "AnsweringBinder";
  answering_binder_->AnswerAfter(1ms);
  Start(7, nullptr, 10, /*binding_workers=*/4);
  constexpr int kPods = 60;
  scheduler_->OnNodeAdd(NodeBuilder("big").Capacity("1000", "1000Gi", kPods).Build());
  for (int i = 0; i < kPods; i++) {
    scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Container("10m", "1Mi").Build());
  }
  Drain();
  for (int i = 0; i < 500 && answering_binder_->bound().size() < kPods; i++) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(answering_binder_->bound().size(), static_cast<size_t>(kPods));
  EXPECT_EQ(answering_binder_->blocking_binds(), 0);
  EXPECT_EQ(answering_binder_->most_outstanding(), 4);
  EXPECT_EQ(CountEvents(recorder_.events(), "Scheduled"), kPods);
}

TEST_F(SchedulerTest, StopWaitsForEveryBindingSentWithoutAThread) {
  bind_plugin_ = "AnsweringBinder";
  answering_binder_->AnswerAfter(2ms);
  Start();
  constexpr int kPods = 100;
  scheduler_->OnNodeAdd(NodeBuilder("big").Capacity("1000", "1000Gi", kPods).Build());
  for (int i = 0; i < kPods; i++) {
    scheduler_->OnPodAdd(PodBuilder("p" + std::to_string(i)).Container("10m", "1Mi").Build());
  }
  while (scheduler_->queue().PendingPods().active > 0) scheduler_->ScheduleOne();
  ASSERT_GT(scheduler_->InFlightBindings(), 10);

  scheduler_->Stop(10ms);

  EXPECT_EQ(scheduler_->InFlightBindings(), 0);
  EXPECT_EQ(answering_binder_->answered(), kPods);
  EXPECT_EQ(CountEvents(recorder_.events(), "Scheduled"), kPods);
  EXPECT_EQ(scheduler_->stats().scheduled.load(), static_cast<uint64_t>(kPods));
  scheduler_.reset();
}

}  // namespace
}  // namespace berth::scheduler

namespace berth::scheduler {
namespace {

// Rejects a pod until its Namespace carries the label "open"; reads Namespaces through a lister
// from the Handle and registers Namespace events, as a plugin of any resource would.
class NamespaceOpenGate : public framework::PreFilterPlugin, public framework::EnqueueExtensions {
 public:
  explicit NamespaceOpenGate(informer::Lister<api::Namespace> namespaces)
      : namespaces_(namespaces) {}
  std::string_view Name() const override { return "NamespaceOpenGate"; }
  Status PreFilter(framework::CycleState&, const api::Pod& pod,
                   const std::vector<framework::NodeInfoPtr>&,
                   framework::PreFilterResult*) override {
    auto ns = namespaces_.Get(pod.meta.namespace_);
    if (ns && ns->meta.labels.Contains("open")) return {};
    return Status::Unresolvable("namespace is not open");
  }
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override {
    return {{{framework::EventResource::kNamespace, framework::kAdd | framework::kUpdate, ""},
             [](const api::Pod& pod, const framework::EventObjects& event) {
               auto ns = event.NewAs<api::Namespace>();
               return ns && ns->meta.name == pod.meta.namespace_ && ns->meta.labels.Contains("open")
                          ? framework::QueueingHint::kQueue
                          : framework::QueueingHint::kSkip;
             }}};
  }

 private:
  informer::Lister<api::Namespace> namespaces_;
};

// Registers events for a resource no informer can watch.
class WidgetWatcher : public framework::FilterPlugin, public framework::EnqueueExtensions {
 public:
  std::string_view Name() const override { return "WidgetWatcher"; }
  Status Filter(const framework::CycleState&, const api::Pod&,
                const framework::NodeInfo&) override {
    return {};
  }
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override {
    return {{{framework::EventResource("Widget"), framework::kAdd, ""}, nullptr}};
  }
};

std::shared_ptr<const api::Namespace> NamespaceObject(const std::string& name, bool open) {
  auto ns = std::make_shared<api::Namespace>();
  ns->meta.name = name;
  ns->meta.resource_version = open ? "2" : "1";
  if (open) ns->meta.labels.Set("open", "true");
  return ns;
}

// The storage objects' informers belong to the volume plugins: a profile without them never lists
// claims, volumes or any storage.k8s.io object.
TEST(SchedulerResourceEvents, WithoutTheVolumePluginsNoStorageInformerStarts) {
  config::Configuration cfg = config::DefaultConfiguration();
  std::erase_if(cfg.profiles[0].plugins.multi_point.enabled, [](const config::PluginRef& ref) {
    return ref.name.rfind("Volume", 0) == 0 || ref.name == "NodeVolumeLimits";
  });
  testing::FakeRecorder recorder;
  informer::SharedInformerFactory informers(nullptr);
  SchedulerDeps deps;
  deps.recorder = &recorder;
  deps.informers = &informers;
  Scheduler scheduler(cfg, plugins::registry::InTree(), deps);
  scheduler.AddAllEventHandlers();
  std::vector<std::string> resources;
  for (const auto& state : informers.States()) resources.push_back(state.resource);
  EXPECT_EQ(resources,
            (std::vector<std::string>{
                "deviceclasses.resource.k8s.io", "devicetaintrules.resource.k8s.io", "namespaces",
                "nodes", "poddisruptionbudgets.policy", "podgroups.scheduling.k8s.io",
                "podgroups.scheduling.x-k8s.io", "pods", "replicasets.apps",
                "replicationcontrollers", "resourceclaims.resource.k8s.io",
                "resourceslices.resource.k8s.io", "services", "statefulsets.apps"}));
}

TEST(SchedulerResourceEvents, AnEventOfAResourceAPluginListsRequeuesThePodsItRejected) {
  auto registry = plugins::registry::InTree();
  registry["NamespaceOpenGate"] = [](const nlohmann::json&, framework::Handle& handle) {
    return std::make_shared<NamespaceOpenGate>(
        handle.SharedInformerFactory().ListerFor<api::Namespace>());
  };
  config::Configuration cfg = config::DefaultConfiguration();
  cfg.profiles[0].plugins.pre_filter.enabled.push_back({"NamespaceOpenGate", 0});
  testing::FakeRecorder recorder;
  informer::SharedInformerFactory informers(nullptr);
  SchedulerDeps deps;
  deps.recorder = &recorder;
  deps.informers = &informers;
  Scheduler scheduler(cfg, registry, deps);
  scheduler.AddAllEventHandlers();
  std::vector<std::string> resources;
  for (const auto& state : informers.States()) resources.push_back(state.resource);
  // The default profile's PodTopologySpread watches the owners its system defaults read,
  // DefaultPreemption the disruption budgets, Coscheduling the PodGroups of both APIs, the volume
  // plugins the storage objects and DynamicResources the resource.k8s.io objects.
  EXPECT_EQ(resources, (std::vector<std::string>{"csidrivers.storage.k8s.io",
                                                 "csinodes.storage.k8s.io",
                                                 "csistoragecapacities.storage.k8s.io",
                                                 "deviceclasses.resource.k8s.io",
                                                 "devicetaintrules.resource.k8s.io",
                                                 "namespaces",
                                                 "nodes",
                                                 "persistentvolumeclaims",
                                                 "persistentvolumes",
                                                 "poddisruptionbudgets.policy",
                                                 "podgroups.scheduling.k8s.io",
                                                 "podgroups.scheduling.x-k8s.io",
                                                 "pods",
                                                 "replicasets.apps",
                                                 "replicationcontrollers",
                                                 "resourceclaims.resource.k8s.io",
                                                 "resourceslices.resource.k8s.io",
                                                 "services",
                                                 "statefulsets.apps",
                                                 "storageclasses.storage.k8s.io",
                                                 "volumeattachments.storage.k8s.io"}));

  informers.Nodes().Upsert(NodeBuilder("n").Capacity("4", "8Gi").Build());
  informers.For<api::Namespace>().Upsert(NamespaceObject("team", false));
  informers.Pods().Upsert(PodBuilder("p", "team").Container("100m", "64Mi").Build());
  ASSERT_TRUE(scheduler.ScheduleOne());
  EXPECT_EQ(scheduler.queue().PendingPods().unschedulable, 1u);

  // Another namespace opening is not this pod's business; its own namespace opening is.
  informers.For<api::Namespace>().Upsert(NamespaceObject("other", true));
  EXPECT_EQ(scheduler.queue().PendingPods().unschedulable, 1u);
  informers.For<api::Namespace>().Upsert(NamespaceObject("team", true));
  const auto counts = scheduler.queue().PendingPods();
  EXPECT_EQ(counts.unschedulable, 0u);
  EXPECT_EQ(counts.active + counts.backoff, 1u);
}

TEST(SchedulerResourceEvents, APluginRegisteringAResourceBerthCannotWatchIsRefused) {
  auto registry = plugins::registry::InTree();
  registry["WidgetWatcher"] = [](const nlohmann::json&, framework::Handle&) {
    return std::make_shared<WidgetWatcher>();
  };
  config::Configuration cfg = config::DefaultConfiguration();
  cfg.profiles[0].plugins.filter.enabled.push_back({"WidgetWatcher", 0});
  testing::FakeRecorder recorder;
  SchedulerDeps deps;
  deps.recorder = &recorder;
  try {
    Scheduler scheduler(cfg, registry, deps);
    FAIL() << "a profile whose plugin needs an unwatchable resource was accepted";
  } catch (const framework::runtime::FrameworkError& e) {
    EXPECT_NE(std::string(e.what()).find("plugin WidgetWatcher registers cluster events for "
                                         "resource \"Widget\""),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace berth::scheduler
