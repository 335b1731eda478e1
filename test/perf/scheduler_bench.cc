// Scheduler benchmark: the real queue, cache, snapshot and framework (every default plugin) on a
// synthetic cluster held in memory, driven one ScheduleOne() at a time from this thread so each
// scheduling cycle can be timed. No apiserver: cluster events are fed to the Scheduler's handlers
// directly, and the Bind plugin confirms each binding at once by feeding the bound pod back as the
// pod informer would; in PreemptionBasic a client does the same for the victims preemption
// deletes (test/perf/evicting_client.h). Workloads are named and sized after kube-scheduler's
// scheduler_perf suite (test/integration/scheduler_perf), with its node (4 cpu, 32Gi, 110 pods)
// and pod (100m, 500Mi) templates. The gang workloads (GangScheduling8/64/256) have no
// scheduler_perf counterpart: groups of that many pods, each a PodGroup whose minMember is all of
// them, created one group at a time once the previous one is bound. The concurrent gang workloads
// take scheduler_perf's podgroup shapes (GangScheduling's many gangs of 3 and few of 1,000,
// TopologyAwareScheduling's gangs of 4 and of 1,000 on nodes in 50 racks of 100, each PodGroup
// asking for one rack) and create every group and pod before the first cycle, so the queue holds
// every gang at once; GangPreemptionGangsOf3 does the same with gangs of 3 whose pods each need a
// node emptied of its low-priority pods (scheduler_perf's GangPreemptionBasic). The volume
// workloads (SchedulingCSIPVs, SchedulingInTreePVs, SchedulingMigratedInTreePVs) give every pod a
// claim bound to a volume of its own, put in the volume plugins' informers before the run. The DRA
// workloads (SchedulingWithResourceClaimTemplate and its Selector and Match variants) publish one
// ResourceSlice of a test driver's devices per node and give every pod a claim of its own, made as
// the resourceclaim controller makes it from the pod's template and named in the pod's status; a
// client stands in for the apiserver the claims are written to (test/perf/claim_writing_client.h).
// The steady-state DRA workloads (SteadyStateClusterResourceClaimTemplateEmpty, Half and Full)
// keep 10 such pods pending: each pod seen bound is deleted, its claim with it (as the
// resourceclaim controller and garbage collector would, so its device frees up), and a new pod
// with a new claim takes its place, until --pods pods were bound (scheduler_perf runs them for a
// duration instead; a count keeps runs comparable). The extended-resource workloads
// (SchedulingWithExtendedResourceExplicit25, Explicit50 and Implicit25) give pods no claim but a
// request for one of 25 or 50 DRA-backed extended resources no node lists as allocatable, so
// DynamicResources serves them from devices and its PreBind creates the pod's claim through the
// same client. Given --nodes without --pods or --existing-pods, the DRA workloads scale both with
// the node count, as their devices are per node.
//
// With --extender loopback, each workload runs twice in one invocation: as above, then with one
// kube-scheduler extender (filterVerb and prioritizeVerb, weight 1, nodeCacheCapable) served on
// 127.0.0.1 by test/perf/loopback_extender.h, which keeps every node and gives every node the
// same score, so the placements match and the difference is the cost of asking. The second run
// also reports the extender calls: how many, the nodes each carried, and the mean time the
// scheduling thread spent in each (encoding, the HTTP exchange, decoding), of which the server's
// own share.
//
//   _output/bin/scheduler_bench [--workload NAME|all] [--nodes N] [--existing-pods N] [--pods N]
//                               [--seed S] [--parallelism P] [--churn-interval-us U]
//                               [--percentage-of-nodes-to-score P] [--extender loopback]
//                               [--pod-group-backoff-seconds S] [--json]
//
// Reports per workload: measured pods bound per second (first measured cycle to last bind),
// scheduling-cycle latency percentiles, heap held per node and per pod, and peak RSS; for gangs
// also the time from a group's last pod created to its last pod bound. With racks, the run counts
// only if every gang's pods share one rack. Asserts nothing about time
// (see README "Performance").

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/api/dra_codec.h"
#include "pkg/api/podgroup.h"
#include "pkg/client/client.h"
#include "pkg/config/config.h"
#include "pkg/extender/extender.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/dynamicresources/extended_claim.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/perf/claim_writing_client.h"
#include "test/perf/evicting_client.h"
#include "test/perf/loopback_extender.h"
#include "test/testing/objects.h"

namespace berth::perf {
namespace {

using Clock = std::chrono::steady_clock;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr std::string_view kZoneKey = "topology.kubernetes.io/zone";
constexpr std::string_view kHostnameKey = "kubernetes.io/hostname";
constexpr int kZones = 3;
// scheduler_perf's TopologyAwareScheduling node template's rack label.
constexpr std::string_view kRackKey = "topology.kubernetes.io/rack";
// Measured pods are named kMeasuredPrefix + index so the binder finds the informer's old copy
// without a map.
constexpr std::string_view kMeasuredPrefix = "m-";

enum class Kind {
  kBasic,
  kNodeAffinity,
  kPodAntiAffinity,
  kPodAffinity,
  kPreferredPodAffinity,
  kPreferredPodAntiAffinity,
  kTopologySpreading,
  kPreferredTopologySpreading,
  kMixedChurn,
  kUnschedulable,
  kPreemption,
  // Groups created one at a time, each once the previous one is bound.
  kGang,
  // Every group and pod created before the first cycle.
  kConcurrentGangs,
  // kConcurrentGangs whose pods each need a node emptied of low-priority pods.
  kGangPreemption,
  // Each pod with a claim bound to a volume of its own (scheduler_perf's pre-bound PV/PVC pairs).
  kCSIPVs,
  kInTreePVs,
  kMigratedInTreePVs,
  // Each pod with a ResourceClaim made from a template (scheduler_perf's dra workloads).
  kDRA,
  // Each pod requesting one of several extended resources served by DeviceClasses
  // (scheduler_perf's dra/extendedresource workloads).
  kDRAExtendedResource,
};

// The devices and claims of a DRA workload (scheduler_perf's dra/templates).
struct DraShape {
  int devices_per_node = 10;
  // Requests per claim, each for one device of the class.
  int requests = 1;
  // Devices cycle through this many PCI roots.
  int pci_roots = 2;
  // Each request has scheduler_perf's CEL selector (every device matches; it is evaluated all the
  // same).
  bool selector = false;
  // The claim's requests must share a PCI root (matchAttribute).
  bool match_pci_root = false;
  // kDRA: when positive, only this many measured pods exist at a time (scheduler_perf's
  // steady-state createPods): each one bound is deleted with its claim and replaced by a new one.
  int steady_pending = 0;
  // When positive, the claims allocated before the run leave exactly this many devices free
  // (scheduler_perf's "full" case), whatever the node count.
  int free_devices = 0;
  // kDRAExtendedResource: this many DeviceClasses test-class-<i>, pod i asking for one unit of
  // class i % classes' extended resource: example.com/gpu-<i> named by the class, or (implicit)
  // the name deviceclass.resource.kubernetes.io/test-class-<i> every class has.
  int classes = 0;
  bool implicit = false;
};

struct Workload {
  const char* name;
  Kind kind;
  int nodes;
  int existing_pods;
  int pods;
  // The in-tree plugin the workload exercises; when the registry lacks it the workload is listed
  // as not available rather than run without it (its numbers would mean nothing).
  const char* needs_plugin;
  // kGang: pods per group (its minMember).
  int gang_size = 0;
  // kDRA: existing_pods counts claims allocated before the run (scheduler_perf's initClaims,
  // which no pod uses). kDRAExtendedResource: it counts pods already bound, each with its
  // allocated claim for its extended resource (scheduler_perf's initPods).
  DraShape dra = {};
  // kConcurrentGangs: when positive, the nodes are labelled kRackKey into this many racks of
  // consecutive nodes, and every PodGroup asks for all its pods in one rack.
  int racks = 0;
};

// scheduler_perf's "performance"-labelled sizes.
const std::vector<Workload>& Workloads() {
  static const std::vector<Workload> workloads = {
      {"SchedulingBasic", Kind::kBasic, 5000, 1000, 10000, nullptr},
      {"SchedulingNodeAffinity", Kind::kNodeAffinity, 5000, 5000, 10000, nullptr},
      {"SchedulingPodAntiAffinity", Kind::kPodAntiAffinity, 5000, 1000, 2000, "InterPodAffinity"},
      {"SchedulingPodAffinity", Kind::kPodAffinity, 5000, 5000, 5000, "InterPodAffinity"},
      {"SchedulingPreferredPodAffinity", Kind::kPreferredPodAffinity, 5000, 5000, 5000,
       "InterPodAffinity"},
      {"SchedulingPreferredPodAntiAffinity", Kind::kPreferredPodAntiAffinity, 5000, 5000, 5000,
       "InterPodAffinity"},
      {"TopologySpreading", Kind::kTopologySpreading, 5000, 5000, 5000, "PodTopologySpread"},
      {"PreferredTopologySpreading", Kind::kPreferredTopologySpreading, 5000, 5000, 5000,
       "PodTopologySpread"},
      {"SchedulingWithMixedChurn", Kind::kMixedChurn, 5000, 0, 10000, nullptr},
      {"Unschedulable", Kind::kUnschedulable, 5000, 100, 10000, nullptr},
      // Its "performance" size (its 1000Nodes case) halved: 4 low-priority pods fill each node,
      // and each preemptor must evict all 4 of one node.
      {"PreemptionBasic", Kind::kPreemption, 500, 2000, 500, "DefaultPreemption"},
      // 10,240 pods in groups of 8, 64 or 256, on scheduler_perf's 5,000 nodes.
      {"GangScheduling8", Kind::kGang, 5000, 0, 10240, "Coscheduling", 8},
      {"GangScheduling64", Kind::kGang, 5000, 0, 10240, "Coscheduling", 64},
      {"GangScheduling256", Kind::kGang, 5000, 0, 10240, "Coscheduling", 256},
      // scheduler_perf's GangScheduling 5000Nodes_3000Gangs_9000Pods and
      // 5000Nodes_9Gangs_9000Pods_1000PerGroup, every gang created at once.
      {"GangsOf3", Kind::kConcurrentGangs, 5000, 0, 9000, "Coscheduling", 3},
      {"GangsOf1000", Kind::kConcurrentGangs, 5000, 0, 9000, "Coscheduling", 1000},
      // scheduler_perf's TopologyAwareScheduling 5000Nodes_2250Gangs_9000Pods and
      // 5000Nodes_9Gangs_9000Pods_1000PerGroup: 50 racks of 100 nodes (its node template), each
      // PodGroup constrained to one rack.
      {"TopologyGangsOf4", Kind::kConcurrentGangs, 5000, 0, 9000, "Coscheduling", 4, {}, 50},
      {"TopologyGangsOf1000", Kind::kConcurrentGangs, 5000, 0, 9000, "Coscheduling", 1000, {}, 50},
      // scheduler_perf's GangPreemptionBasic (10 low-priority pods of 40m on each node, preemptor
      // pods of 3970m, so each evicts all 10 of one node) with gangs of 3 rather than its 10 of 10,
      // on 600 nodes rather than 100.
      {"GangPreemptionGangsOf3", Kind::kGangPreemption, 600, 6000, 600, "DefaultPreemption", 3},
      // scheduler_perf's volumes workloads: CSI volumes on nodes whose CSINode allows 39 of the
      // driver's, in-tree EBS volumes (no CSINode), and in-tree EBS volumes on nodes where CSI
      // migration hands them to the EBS driver (5000Nodes_5000Pods, 5000Nodes_2000Pods and
      // 5000Nodes_5000Pods).
      {"SchedulingCSIPVs", Kind::kCSIPVs, 5000, 5000, 5000, "NodeVolumeLimits"},
      {"SchedulingInTreePVs", Kind::kInTreePVs, 5000, 1000, 2000, "VolumeBinding"},
      {"SchedulingMigratedInTreePVs", Kind::kMigratedInTreePVs, 5000, 5000, 5000,
       "NodeVolumeLimits"},
      // scheduler_perf's SchedulingWithResourceClaimTemplate (5000pods_500nodes: 10 devices a
      // node, a fifth of them allocated beforehand, a fifth to allocate) and the shapes of its
      // selector_ and match_ cases, at ten times the nodes.
      {"SchedulingWithResourceClaimTemplate", Kind::kDRA, 5000, 10000, 10000, "DynamicResources", 0,
       DraShape{}},
      {"SchedulingWithResourceClaimTemplateSelector", Kind::kDRA, 5000, 0, 10000,
       "DynamicResources", 0, DraShape{.selector = true}},
      // Five requests on one PCI root: each pod takes half of a node's devices.
      {"SchedulingWithResourceClaimTemplateMatch", Kind::kDRA, 5000, 0, 5000, "DynamicResources", 0,
       DraShape{.requests = 5, .match_pci_root = true}},
      // scheduler_perf's steady-state cases of SchedulingWithResourceClaimTemplate (empty_,
      // half_ and full_500nodes: 10 pods pending, none, half or all but 10 of the devices taken
      // by claims no pod uses) at ten times the nodes and initClaims. Measured over 10,000 bound
      // pods rather than scheduler_perf's 10 s; each runs in well under a minute on two cores.
      {"SteadyStateClusterResourceClaimTemplateEmpty", Kind::kDRA, 5000, 0, 10000,
       "DynamicResources", 0, DraShape{.steady_pending = 10}},
      {"SteadyStateClusterResourceClaimTemplateHalf", Kind::kDRA, 5000, 25000, 10000,
       "DynamicResources", 0, DraShape{.steady_pending = 10}},
      {"SteadyStateClusterResourceClaimTemplateFull", Kind::kDRA, 5000, 49990, 10000,
       "DynamicResources", 0, DraShape{.steady_pending = 10, .free_devices = 10}},
      // scheduler_perf's ExtendedResource (Explicit_25classes, Explicit_50classes and
      // Implicit_25classes, 5000pods_500nodes: half the devices taken by initPods, the other half
      // by the measured pods) at ten times the nodes and initPods, but 2,500 measured pods rather
      // than 25,000: at 50 to 110 pods/s on two cores that keeps a run under a minute (--pods
      // 25000 for the full size).
      {"SchedulingWithExtendedResourceExplicit25", Kind::kDRAExtendedResource, 5000, 25000, 2500,
       "DynamicResources", 0, DraShape{.classes = 25}},
      {"SchedulingWithExtendedResourceExplicit50", Kind::kDRAExtendedResource, 5000, 25000, 2500,
       "DynamicResources", 0, DraShape{.classes = 50}},
      {"SchedulingWithExtendedResourceImplicit25", Kind::kDRAExtendedResource, 5000, 25000, 2500,
       "DynamicResources", 0, DraShape{.classes = 25, .implicit = true}},
  };
  return workloads;
}

struct Flags {
  std::string workload = "all";
  std::optional<int> nodes, existing_pods, pods;
  uint64_t seed = 1;
  int parallelism = 16;
  // One churn operation per interval: scheduler_perf's churn op recreates one object of each
  // template per second; one op per millisecond is a much harsher rate on purpose, so the cost of
  // cluster events racing the scheduling thread is visible.
  int churn_interval_us = 1000;
  // 0: adaptive, as in the default configuration (10% of 5,000 nodes).
  int percentage_of_nodes_to_score = 0;
  // --extender loopback: each workload runs without, then with the loopback extender.
  bool extender = false;
  // Coscheduling's podGroupBackoffSeconds when set: how long a gang whose attempt failed is not
  // tried again (the plugin's default, 1 s, otherwise).
  std::optional<int> pod_group_backoff_seconds;
  bool json = false;
  // Not a flag: the pods/s of the run without the extender, for the run with it to compare with.
  double reference_pods_per_s = 0;
};

// The index of a measured pod's name, if it is one.
std::optional<size_t> MeasuredIndex(const std::string& name) {
  size_t index = 0;
  const char* digits = name.data() + kMeasuredPrefix.size();
  if (name.rfind(kMeasuredPrefix, 0) != 0 ||
      std::from_chars(digits, name.data() + name.size(), index).ec != std::errc()) {
    return std::nullopt;
  }
  return index;
}

// Events would otherwise be the bottleneck, and building and sending them is not what this
// benchmark measures (they leave the scheduling thread in production too).
class NoopRecorder : public framework::EventRecorder {
 public:
  void Eventf(const api::Pod&, const std::string&, const std::string&, const std::string&,
              const std::string&) override {}
  void Eventf(const api::ObjectReference&, const std::string&, const std::string&,
              const std::string&, const std::string&) override {}
};

// What the scheduling thread spent in extender calls. Written by the scheduling thread only, read
// after the run.
struct ExtenderTimes {
  uint64_t filter_calls = 0, prioritize_calls = 0;
  uint64_t nodes_sent = 0;  // Over every call.
  Clock::duration filter{}, prioritize_start{}, prioritize_wait{};
};

// An extender whose Filter, StartPrioritize and PendingScores::Wait are timed: each call's whole
// cost to the scheduling thread (encoding the request, the exchange, decoding the answer).
class TimedExtender final : public framework::Extender {
 public:
  TimedExtender(std::shared_ptr<framework::Extender> inner, ExtenderTimes* times)
      : inner_(std::move(inner)), times_(times) {}

  const framework::PluginName& Name() const override { return inner_->Name(); }
  bool IsFilter() const override { return inner_->IsFilter(); }
  bool IsPrioritizer() const override { return inner_->IsPrioritizer(); }
  bool IsBinder() const override { return inner_->IsBinder(); }
  bool SupportsPreemption() const override { return inner_->SupportsPreemption(); }
  bool IsIgnorable() const override { return inner_->IsIgnorable(); }
  int64_t Weight() const override { return inner_->Weight(); }
  bool IsInterested(const api::Pod& pod) const override { return inner_->IsInterested(pod); }

  framework::Status Filter(const api::Pod& pod, std::span<const framework::NodeInfo* const> nodes,
                           FilterResult* out) const override {
    const auto start = Clock::now();
    framework::Status s = inner_->Filter(pod, nodes, out);
    times_->filter += Clock::now() - start;
    times_->filter_calls++;
    times_->nodes_sent += nodes.size();
    return s;
  }

  std::unique_ptr<PendingScores> StartPrioritize(
      const api::Pod& pod, std::span<const framework::NodeInfo* const> nodes) const override {
    const auto start = Clock::now();
    auto pending = std::make_unique<TimedScores>(inner_->StartPrioritize(pod, nodes), times_);
    times_->prioritize_start += Clock::now() - start;
    times_->prioritize_calls++;
    times_->nodes_sent += nodes.size();
    return pending;
  }

  framework::Status ProcessPreemption(
      const api::Pod& pod, const std::map<std::string, framework::ExtenderVictims>& victims,
      const framework::NodeInfoLister& lister,
      std::map<std::string, framework::ExtenderVictims>* out) const override {
    return inner_->ProcessPreemption(pod, victims, lister, out);
  }
  framework::Status Bind(const api::Pod& pod, const std::string& node) const override {
    return inner_->Bind(pod, node);
  }

 private:
  class TimedScores final : public PendingScores {
   public:
    TimedScores(std::unique_ptr<PendingScores> inner, ExtenderTimes* times)
        : inner_(std::move(inner)), times_(times) {}
    framework::Status Wait(std::vector<framework::ExtenderScore>* out) override {
      const auto start = Clock::now();
      framework::Status s = inner_->Wait(out);
      times_->prioritize_wait += Clock::now() - start;
      return s;
    }

   private:
    std::unique_ptr<PendingScores> inner_;
    ExtenderTimes* times_;
  };

  std::shared_ptr<framework::Extender> inner_;
  ExtenderTimes* times_;
};

// Binds instantly and, like the pod informer seeing the bound pod, feeds the update back before
// returning, so the cache confirms the assumed pod and the queue forgets it.
class InstantBinder : public framework::BindPlugin {
 public:
  static constexpr std::string_view kName = "InstantBinder";
  std::string_view Name() const override { return kName; }

  // Must be called before any pod is added; `pending` must not be resized while pods are bound,
  // and a slot is filled before its pod reaches the scheduler. `pods`, when set, is told of each
  // bound pod too (as plugins' pod informers would be). With `keep_bound`, each bound pod is also
  // kept for TakeBound (as a pod informer's handler would see it).
  void Attach(scheduler::Scheduler* scheduler, const std::vector<api::PodPtr>* pending, int target,
              informer::Informer<api::Pod>* pods = nullptr, bool keep_bound = false) {
    scheduler_ = scheduler;
    pending_ = pending;
    target_ = target;
    pods_ = pods;
    keep_bound_ = keep_bound;
    bind_ns_ = std::vector<std::atomic<Clock::rep>>(static_cast<size_t>(target));
  }

  // The pods bound since the last call, in the order they were bound. Once a pod is returned, the
  // binder no longer reads its slot of `pending`.
  std::vector<api::PodPtr> TakeBound() {
    std::lock_guard lock(kept_mu_);
    return std::exchange(kept_, {});
  }

  framework::Status Bind(framework::CycleState&, const api::Pod& pod, const std::string&) override {
    const std::optional<size_t> index = MeasuredIndex(pod.meta.name);
    if (!index || *index >= pending_->size()) {
      std::fprintf(stderr, "binder got a pod it did not create: %s\n", pod.Key().c_str());
      std::abort();
    }
    auto bound = std::make_shared<const api::Pod>(pod);
    scheduler_->OnPodUpdate((*pending_)[*index], bound);
    if (pods_ != nullptr) pods_->Upsert(bound);
    if (keep_bound_) {
      std::lock_guard lock(kept_mu_);
      kept_.push_back(bound);
    }
    const int n = bound_.fetch_add(1);
    const Clock::rep now = Clock::now().time_since_epoch().count();
    if (*index < bind_ns_.size()) bind_ns_[*index].store(now);
    if (n + 1 == target_) last_bind_ns_.store(now);
    return {};
  }

  int bound() const { return bound_.load(); }
  Clock::time_point last_bind() const {
    return Clock::time_point(Clock::duration(last_bind_ns_.load()));
  }
  // When measured pod `index` (below the target) was bound.
  Clock::time_point bind_time(size_t index) const {
    return Clock::time_point(Clock::duration(bind_ns_[index].load()));
  }

 private:
  scheduler::Scheduler* scheduler_ = nullptr;
  const std::vector<api::PodPtr>* pending_ = nullptr;
  informer::Informer<api::Pod>* pods_ = nullptr;
  std::vector<std::atomic<Clock::rep>> bind_ns_;  // By measured pod index.
  int target_ = 0;
  bool keep_bound_ = false;
  std::mutex kept_mu_;
  std::vector<api::PodPtr> kept_;  // Guarded by kept_mu_.
  std::atomic<int> bound_{0};
  std::atomic<Clock::rep> last_bind_ns_{0};
};

// Every allocator byte handed out, including large blocks glibc serves with mmap.
int64_t HeapInUse() {
  struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

int64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

std::string NodeName(int i) { return "node-" + std::to_string(i); }
std::string Zone(int i) { return "zone" + std::to_string(i % kZones + 1); }

// Node `node` of `nodes` in `racks` racks of consecutive nodes.
std::string Rack(int node, int nodes, int racks) {
  return "rack-" + std::to_string(static_cast<int64_t>(node) * racks / nodes);
}

// The index in a node's name, or -1 when it is not one of NodeName's.
int NodeIndex(const std::string& node) {
  return node.rfind("node-", 0) == 0 ? std::atoi(node.c_str() + 5) : -1;
}

// scheduler_perf gives every node the kubernetes.io/hostname label kubelet sets. `rack`, when not
// empty, is its kRackKey label.
api::NodePtr MakeNode(const std::string& name, int zone_index, bool one_zone = false,
                      const std::string& rack = "") {
  NodeBuilder b(name);
  b.Capacity("4", "32Gi", 110)
      .Label(std::string(kZoneKey), one_zone ? Zone(0) : Zone(zone_index))
      .Label(std::string(kHostnameKey), name);
  if (!rack.empty()) b.Label(std::string(kRackKey), rack);
  return b.Build();
}

api::Requirement In(std::string_view key, std::vector<std::string> values) {
  api::Requirement r;
  r.key = std::string(key);
  r.op = api::SelectorOperator::kIn;
  std::sort(values.begin(), values.end());
  r.values = std::move(values);
  return r;
}

// A term of scheduler_perf's (anti-)affinity templates: color=`color` in either namespace.
api::PodAffinityTerm ColorTerm(const std::string& color, std::string_view topology_key) {
  api::PodAffinityTerm term;
  term.label_selector.emplace().requirements.push_back(In("color", {color}));
  term.namespaces = {"sched-1", "sched-0"};
  term.topology_key = std::string(topology_key);
  return term;
}

// The pod templates of scheduler_perf, by workload.
api::PodPtr MakePod(Kind kind, const std::string& name, const std::string& ns,
                    const std::string& node = "") {
  PodBuilder b(name, ns);
  b.Container("100m", "500Mi");
  if (!node.empty()) b.Node(node);
  auto& spec = b.pod().spec;
  switch (kind) {
    case Kind::kNodeAffinity: {
      api::NodeSelectorTerm term;
      term.match_expressions.push_back(In(kZoneKey, {"zone1", "zone2"}));
      api::NodeAffinity affinity;
      affinity.required.emplace().terms.push_back(std::move(term));
      spec.affinity.emplace().node_affinity = std::move(affinity);
      break;
    }
    case Kind::kPodAntiAffinity:
      b.Label("color", "green");
      spec.affinity.emplace().pod_anti_affinity.emplace().required.push_back(
          ColorTerm("green", kHostnameKey));
      break;
    case Kind::kPodAffinity:
      b.Label("color", "blue");
      spec.affinity.emplace().pod_affinity.emplace().required.push_back(
          ColorTerm("blue", kZoneKey));
      break;
    case Kind::kPreferredPodAffinity:
      b.Label("color", "red");
      spec.affinity.emplace().pod_affinity.emplace().preferred.push_back(
          {1, ColorTerm("red", kHostnameKey)});
      break;
    case Kind::kPreferredPodAntiAffinity:
      b.Label("color", "yellow");
      spec.affinity.emplace().pod_anti_affinity.emplace().preferred.push_back(
          {1, ColorTerm("yellow", kHostnameKey)});
      break;
    case Kind::kTopologySpreading:
    case Kind::kPreferredTopologySpreading: {
      b.Label("color", "blue");
      api::TopologySpreadConstraint c;
      c.max_skew = 5;
      c.topology_key = std::string(kZoneKey);
      c.when_unsatisfiable = kind == Kind::kTopologySpreading
                                 ? api::WhenUnsatisfiable::kDoNotSchedule
                                 : api::WhenUnsatisfiable::kScheduleAnyway;
      c.label_selector.emplace().requirements.push_back(In("color", {"blue"}));
      spec.topology_spread_constraints.push_back(std::move(c));
      break;
    }
    case Kind::kCSIPVs:
    case Kind::kInTreePVs:
    case Kind::kMigratedInTreePVs: {
      api::Volume volume;
      volume.name = "vol";
      volume.source = "persistentVolumeClaim";
      volume.claim_name = name + "-pvc";
      spec.volumes.push_back(std::move(volume));
      break;
    }
    default:
      break;
  }
  return b.Build();
}

// scheduler_perf's pod-low-priority (on `node`; 900m and 500Mi in PreemptionBasic, 40m and 100Mi
// in GangPreemptionBasic) and its preemption benchmarks' pod-high-priority.
api::PodPtr MakeLowPriorityPod(const std::string& name, const std::string& node,
                               const std::string& cpu = "900m",
                               const std::string& memory = "500Mi") {
  return PodBuilder(name, "sched-0").Container(cpu, memory).Node(node).Build();
}
api::PodPtr MakeHighPriorityPod(const std::string& name) {
  return PodBuilder(name, "sched-1").Container("3970m", "500Mi").Priority(9999999).Build();
}

// scheduler_perf's pod-high-priority-large-cpu (9 cpu fits no 4-cpu node) without its priority,
// so that the queue pops it and the pods that fit alternately.
api::PodPtr MakeHugePod(const std::string& name) {
  return PodBuilder(name, "sched-1").Container("9", "500Mi").Build();
}

// A pod of gang `group`, scheduler_perf's pod template otherwise.
api::PodPtr MakeGangPod(const std::string& name, const std::string& group) {
  return PodBuilder(name, "sched-1")
      .Container("100m", "500Mi")
      .Label(std::string(api::kPodGroupLabel), group)
      .Build();
}

// A pod of gang `group` as scheduler_perf's workload_preemption gang-pod.yaml makes it: its
// default priority 8888888, and 3970m of a 4-cpu node, so it fits only where every pod of lower
// priority was evicted.
api::PodPtr MakePreemptorGangPod(const std::string& name, const std::string& group) {
  return PodBuilder(name, "sched-1")
      .Container("3970m", "100Mi")
      .Priority(8888888)
      .Label(std::string(api::kPodGroupLabel), group)
      .Build();
}

constexpr std::string_view kEBSDriver = "ebs.csi.aws.com";

bool VolumeKind(Kind kind) {
  return kind == Kind::kCSIPVs || kind == Kind::kInTreePVs || kind == Kind::kMigratedInTreePVs;
}

// scheduler_perf's csiNodeAllocatable (39 EBS volumes), with the migrated-plugins annotation in
// the migrated workload.
std::shared_ptr<const api::CSINode> MakeCSINode(const std::string& node, bool migrated) {
  auto csi_node = std::make_shared<api::CSINode>();
  csi_node->meta.name = node;
  if (migrated) {
    csi_node->meta.annotations.Set(std::string(api::kMigratedPluginsAnnotation),
                                   "kubernetes.io/aws-ebs");
  }
  api::CSINodeDriver driver;
  driver.name = std::string(kEBSDriver);
  driver.node_id = node;
  driver.allocatable_count = 39;
  csi_node->drivers.push_back(std::move(driver));
  return csi_node;
}

// The pod's claim, bound (bind-completed) to a volume of its own as scheduler_perf creates them
// from its pv-csi.yaml / pv-aws.yaml and pvc.yaml templates (1Gi, ReadOnlyMany).
void AddBoundClaim(Kind kind, const api::Pod& pod, informer::SharedInformerFactory& informers) {
  const std::string claim_name = pod.meta.name + "-pvc";
  const std::string volume_name = "pv-" + pod.meta.namespace_ + "-" + pod.meta.name;
  auto pv = std::make_shared<api::PersistentVolume>();
  pv->meta.name = volume_name;
  pv->meta.resource_version = "1";
  pv->spec.capacity = int64_t{1} << 30;
  pv->spec.access_modes = {api::PersistentVolumeAccessMode::kReadOnlyMany};
  pv->spec.claim_ref = api::ClaimReference{pod.meta.namespace_, claim_name, "uid-" + claim_name};
  pv->status.phase = api::PersistentVolumePhase::kBound;
  if (kind == Kind::kCSIPVs) {
    pv->spec.source = "csi";
    pv->spec.csi = api::CSIPersistentVolumeSource{std::string(kEBSDriver), "vol-" + volume_name};
  } else {
    pv->spec.source = "awsElasticBlockStore";
    pv->spec.in_tree_volume_id = "vol-" + volume_name;
  }
  auto pvc = std::make_shared<api::PersistentVolumeClaim>();
  pvc->meta.name = claim_name;
  pvc->meta.namespace_ = pod.meta.namespace_;
  pvc->meta.uid = "uid-" + claim_name;
  pvc->meta.resource_version = "1";
  pvc->meta.annotations.Set(std::string(api::kBindCompletedAnnotation), "true");
  pvc->spec.access_modes = {api::PersistentVolumeAccessMode::kReadOnlyMany};
  pvc->spec.storage_request = int64_t{1} << 30;
  pvc->spec.volume_name = volume_name;
  pvc->status.phase = api::PersistentVolumeClaimPhase::kBound;
  informers.For<api::PersistentVolume>().Upsert(pv);
  informers.For<api::PersistentVolumeClaim>().Upsert(pvc);
}

constexpr std::string_view kDraDriver = "test-driver.cdi.k8s.io";
constexpr std::string_view kDraClass = "test-class";
constexpr std::string_view kDraClaimTemplate = "test-claim-template";
// The pod's spec.resourceClaims entry the claim is made for.
constexpr std::string_view kDraPodClaim = "resource";
// scheduler_perf's selector_ case.
constexpr std::string_view kDraSelector =
    "device.attributes[\"test-driver.cdi.k8s.io\"].driverVersion.major() >= 1 && "
    "device.capacity[\"test-driver.cdi.k8s.io\"].memory.isGreaterThan(quantity(\"1Mi\"))";

std::string DraPool(int node) { return "resourceslice-" + std::to_string(node); }
std::string DraDevice(int index) { return "basic-device-" + std::to_string(index); }

// scheduler_perf's resourceslice-basic-devices.yaml for node `node`, decoded as the informer
// would.
api::ResourceSlicePtr MakeDraSlice(int node, const DraShape& shape) {
  using nlohmann::json;
  json devices = json::array();
  for (int d = 0; d < shape.devices_per_node; d++) {
    const std::string root = std::to_string(d % shape.pci_roots);
    const std::string address = "0000:0" + std::to_string(d) + ":00.0";
    devices.push_back(
        {{"name", DraDevice(d)},
         {"attributes",
          {{"driver", {{"string", "xe"}}},
           {"driverVersion", {{"version", "1.2.3"}}},
           {"resource.k8s.io/pciRoot", {{"string", root}}},
           {"family", {{"string", "Arc Pro B-Series"}}},
           {"health", {{"string", "Healthy"}}},
           {"model", {{"string", "B60"}}},
           {"pciAddress", {{"string", address}}},
           {"pciId", {{"string", "0xe211"}}},
           {"pciRoot", {{"string", "0" + root}}},
           {"resource.kubernetes.io/pciBusID", {{"string", address}}},
           {"resource.kubernetes.io/pciRoot", {{"string", "pci0000:0" + root}}},
           {"sriov", {{"bool", true}}},
           {"type", {{"string", "gpu"}}}}},
         {"capacity", {{"memory", {{"value", "24480Mi"}}}, {"millicores", {{"value", "1k"}}}}}});
  }
  json slice = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata",
       {{"name", DraPool(node)}, {"uid", "uid-" + DraPool(node)}, {"resourceVersion", "1"}}},
      {"spec",
       {{"pool", {{"name", DraPool(node)}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"driver", kDraDriver},
        {"nodeName", NodeName(node)},
        {"devices", std::move(devices)}}}};
  return std::make_shared<const api::ResourceSlice>(api::DecodeResourceSlice(slice));
}

// scheduler_perf's deviceclass.yaml, or deviceclass-extended-resource.yaml when named after an
// index, with its extendedResourceName when `extended_resource` is set.
api::DeviceClassPtr MakeDraClass(const std::string& name,
                                 const std::optional<std::string>& extended_resource = {}) {
  nlohmann::json device_class = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "DeviceClass"},
      {"metadata", {{"name", name}, {"uid", "uid-" + name}, {"resourceVersion", "1"}}},
      {"spec",
       {{"selectors",
         {{{"cel", {{"expression", "device.driver == \"" + std::string(kDraDriver) + "\""}}}}}}}}};
  if (extended_resource) device_class["spec"]["extendedResourceName"] = *extended_resource;
  return std::make_shared<const api::DeviceClass>(api::DecodeDeviceClass(device_class));
}

// The extended-resource workloads' class i and the resource pod i asks for.
std::string ExtendedClass(int i, const DraShape& shape) {
  return std::string(kDraClass) + "-" + std::to_string(i % shape.classes);
}
std::string ExtendedResource(int i, const DraShape& shape) {
  return shape.implicit ? std::string(api::kDeviceClassResourcePrefix) + ExtendedClass(i, shape)
                        : "example.com/gpu-" + std::to_string(i % shape.classes);
}

// The spec of scheduler_perf's resourceclaimtemplate.yaml (resourceclaim.yaml for one request).
nlohmann::json DraClaimSpec(const DraShape& shape) {
  using nlohmann::json;
  json requests = json::array();
  for (int r = 0; r < shape.requests; r++) {
    json exactly = {{"deviceClassName", kDraClass}};
    if (shape.selector) exactly["selectors"] = {{{"cel", {{"expression", kDraSelector}}}}};
    requests.push_back({{"name", "req-" + std::to_string(r)}, {"exactly", std::move(exactly)}});
  }
  json devices = {{"requests", std::move(requests)}};
  if (shape.match_pci_root) {
    devices["constraints"] = {{{"matchAttribute", "resource.kubernetes.io/pciRoot"}}};
  }
  return {{"devices", std::move(devices)}};
}

nlohmann::json DraClaim(const std::string& name, const std::string& ns, const DraShape& shape) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + ns + "-" + name}}},
          {"spec", DraClaimSpec(shape)}};
}

// `claim` (its one request named `request`) allocated device index / nodes of node index % nodes,
// as a scheduler before the run would have left it.
void AllocateDraClaim(nlohmann::json& claim, int index, int nodes, std::string_view request) {
  using nlohmann::json;
  const int node = index % nodes;
  claim["metadata"]["finalizers"] = {"resource.kubernetes.io/delete-protection"};
  claim["status"] = {
      {"allocation",
       {{"devices",
         {{"results",
           {{{"request", request},
             {"driver", kDraDriver},
             {"pool", DraPool(node)},
             {"device", DraDevice(index / nodes)}}}}}},
        {"nodeSelector",
         {{"nodeSelectorTerms",
           {{{"matchFields",
              {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {NodeName(node)}}}}}}}}}},
        {"allocationTimestamp", "2026-01-01T00:00:00Z"}}}};
}

// scheduler_perf's initClaims after its allocResourceClaims step: claim `index` allocated device
// index / nodes of node index % nodes, with no pod using it.
nlohmann::json AllocatedDraClaim(int index, int nodes, const DraShape& shape) {
  nlohmann::json claim = DraClaim("test-claim-" + std::to_string(index), "init", shape);
  AllocateDraClaim(claim, index, nodes, "req-0");
  return claim;
}

// A pod of scheduler_perf's pod-with-claim-template.yaml, with the claim the resourceclaim
// controller made for it from the template (owned by the pod) and named in its status.
api::PodPtr MakeDraPod(const std::string& name, const std::string& ns, const DraShape& shape,
                       ClaimWritingClient& claims) {
  PodBuilder b(name, ns);
  b.Container("", "");
  api::Pod& pod = b.pod();
  pod.spec.resource_claims.push_back(api::PodResourceClaim{std::string(kDraPodClaim), std::nullopt,
                                                           std::string(kDraClaimTemplate)});
  const std::string claim_name = name + "-" + std::string(kDraPodClaim);
  pod.status.resource_claim_statuses.push_back(
      api::PodResourceClaimStatus{std::string(kDraPodClaim), claim_name});
  nlohmann::json claim = DraClaim(claim_name, ns, shape);
  claim["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", kDraPodClaim}};
  claim["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                           {"kind", "Pod"},
                                           {"name", name},
                                           {"uid", pod.meta.uid},
                                           {"controller", true},
                                           {"blockOwnerDeletion", true}}};
  claims.Create(std::move(claim));
  return b.Build();
}

// A pod of scheduler_perf's pod-with-extended-resource.yaml: one container asking for one unit
// of extended resource `index` and nothing else.
api::PodPtr MakeExtendedResourcePod(const std::string& name, const std::string& ns, int index,
                                    const DraShape& shape, const std::string& node = "") {
  PodBuilder b(name, ns);
  b.Container("", "", {{ExtendedResource(index, shape), "1"}});
  if (!node.empty()) b.Node(node);
  return b.Build();
}

// initPods' pod `index` bound to node index % nodes, with the claim a scheduler's PreBind made
// for its extended resource (owned by the pod, annotated as such, one request per container as
// DynamicResources names them) allocated device index / nodes there, reserved for the pod and
// named in the pod's status.
api::PodPtr MakeBoundExtendedResourcePod(int index, int nodes, const DraShape& shape,
                                         ClaimWritingClient& claims) {
  using nlohmann::json;
  const std::string name = "x-" + std::to_string(index);
  const std::string ns = "init";
  const std::string claim_name = name + "-extended-resources-0";
  const std::string request = "container-0-request-0";
  PodBuilder b(name, ns);
  b.Container("", "", {{ExtendedResource(index, shape), "1"}});
  b.Node(NodeName(index % nodes));
  api::Pod& pod = b.pod();
  pod.status.extended_resource_claim_status = api::PodExtendedResourceClaimStatus{
      {{pod.spec.containers[0].name, ExtendedResource(index, shape), request}}, claim_name};
  json claim = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata",
       {{"name", claim_name},
        {"namespace", ns},
        {"uid", "uid-" + ns + "-" + claim_name},
        {"annotations",
         {{std::string(plugins::dynamicresources::kExtendedResourceClaimAnnotation), "true"}}},
        {"ownerReferences",
         {{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"name", name},
           {"uid", pod.meta.uid},
           {"controller", true}}}}}},
      {"spec",
       {{"devices",
         {{"requests",
           {{{"name", request},
             {"exactly",
              {{"deviceClassName", ExtendedClass(index, shape)},
               {"allocationMode", "ExactCount"},
               {"count", 1}}}}}}}}}}};
  AllocateDraClaim(claim, index, nodes, request);
  claim["status"]["reservedFor"] = {{{"resource", "pods"}, {"name", name}, {"uid", pod.meta.uid}}};
  claims.Create(std::move(claim));
  return b.Build();
}

// A scheduler-plugins PodGroup as its informer decodes it; with `topology_key`, its pods must all
// go to nodes sharing one value of that label.
api::PodGroup MakePodGroup(const std::string& name, int min_member,
                           std::string_view topology_key = {}) {
  nlohmann::json spec = {{"minMember", min_member}};
  if (!topology_key.empty()) {
    spec["schedulingConstraints"] = {{"topology", {{{"key", topology_key}}}}};
  }
  const nlohmann::json object = {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                 {"kind", "PodGroup"},
                                 {"metadata",
                                  {{"name", name},
                                   {"namespace", "sched-1"},
                                   {"uid", "uid-" + name},
                                   {"resourceVersion", "1"}}},
                                 {"spec", std::move(spec)}};
  api::PodGroup group = api::DecodePodGroup(object);
  if (!group.problem.empty()) {
    std::fprintf(stderr, "PodGroup %s does not decode: %s\n", name.c_str(), group.problem.c_str());
    std::abort();
  }
  return group;
}

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0;
  size_t count = 0;
};

Percentiles Summarize(std::vector<double> us) {
  Percentiles p;
  p.count = us.size();
  if (us.empty()) return p;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())))];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

struct Result {
  std::string name;
  int nodes = 0, existing_pods = 0, pods = 0;
  double seconds = 0;
  double pods_per_s = 0;
  Percentiles ok_cycles;      // Cycles that found a node.
  Percentiles failed_cycles;  // Cycles that found none.
  int64_t bytes_per_node = 0;
  int64_t bytes_per_pod = 0;          // An assigned pod in the cache.
  int64_t bytes_per_pending_pod = 0;  // A pending pod in the queue.
  int64_t heap_after_run = 0;
  int64_t peak_rss = 0;
  // The records of pending pods' last attempts (explain) at the end of the run.
  size_t attempt_records = 0;
  size_t attempt_record_bytes = 0;
  uint64_t churn_ops = 0;
  int victims = 0;               // Pods preemption evicted.
  int victims_already_gone = 0;  // DELETEs of victims an earlier one had evicted.
  int gang_size = 0;
  int racks = 0;           // Gangs constrained to one rack of this many.
  int steady_pending = 0;  // Measured pods kept pending at a time, if a steady state.
  Percentiles gang_ms;     // Per group: its last pod created to its last pod bound.
  // With the loopback extender: its calls, and the requests the server answered and the time it
  // spent computing the answers.
  bool extender = false;
  ExtenderTimes extender_times;
  uint64_t extender_requests = 0;
  Clock::duration extender_server{};
  // The same workload's pods/s without the extender, when it ran first in this invocation.
  double reference_pods_per_s = 0;
};

// Recreates objects at a steady rate while the measured pods are scheduled, cycling through: add
// a node, add a pod assigned to a random original node, delete that node, delete that pod
// (scheduler_perf's "recreate" churn mode with its node template, plus assigned-pod churn). Its
// pending large-cpu pod is left out: the Unschedulable workload measures those, and at this rate
// they would leave little time for anything else.
class Churner {
 public:
  Churner(scheduler::Scheduler* s, int nodes, uint64_t seed, std::chrono::microseconds interval)
      : scheduler_(s), nodes_(nodes), rng_(seed), interval_(interval) {}

  void Start() {
    thread_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
  }
  uint64_t Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
    return ops_;
  }

 private:
  void Loop(const std::stop_token& stop) {
    auto next = Clock::now();
    api::NodePtr node;
    api::PodPtr pod;
    for (uint64_t op = 0; !stop.stop_requested(); op++) {
      const uint64_t round = op / 4;
      switch (op % 4) {
        case 0:
          node = MakeNode("churn-node-" + std::to_string(round), static_cast<int>(round % kZones));
          scheduler_->OnNodeAdd(node);
          break;
        case 1:
          pod = MakePod(Kind::kBasic, "churn-pod-" + std::to_string(round), "churn",
                        NodeName(static_cast<int>(rng_() % nodes_)));
          scheduler_->OnPodAdd(pod);
          break;
        case 2:
          scheduler_->OnNodeDelete(node);
          break;
        case 3:
          scheduler_->OnPodDelete(pod);
          break;
      }
      ops_++;
      next += interval_;
      std::this_thread::sleep_until(next);
    }
  }

  scheduler::Scheduler* scheduler_;
  const int nodes_;
  std::mt19937_64 rng_;
  const std::chrono::microseconds interval_;
  uint64_t ops_ = 0;
  std::jthread thread_;
};

// No device allocated twice among the claims in `claims`; counts the allocated claims.
bool CheckDevicesOnce(const Workload& w, const informer::Store<api::ResourceClaim>& claims,
                      int* allocated) {
  std::set<std::string> devices;
  *allocated = 0;
  for (const api::ResourceClaimPtr& claim : claims.List()) {
    if (!claim->status.allocation) continue;
    ++*allocated;
    for (const auto& result : claim->status.allocation->results) {
      if (!devices.insert(result.pool + "/" + result.device).second) {
        std::fprintf(stderr, "%s: device %s/%s allocated twice\n", w.name, result.pool.c_str(),
                     result.device.c_str());
        return false;
      }
    }
  }
  return true;
}

// The claim the pod's status names: its claim from the template, or the one PreBind made for its
// extended resources (which the client remembers from the pod status patch).
std::string PodClaimName(const Workload& w, const api::Pod& pod, const ClaimWritingClient& client) {
  if (w.kind == Kind::kDRAExtendedResource) return client.ExtendedClaimName(pod.Key());
  return *pod.status.resource_claim_statuses[0].resource_claim_name;
}

// The pod's claim allocated on `node` (all its requests) and reserved for the pod.
bool CheckPodClaim(const Workload& w, const api::Pod& pod, const std::string& node,
                   const informer::Store<api::ResourceClaim>& claims,
                   const ClaimWritingClient& client) {
  const size_t requests =
      w.kind == Kind::kDRAExtendedResource ? 1 : static_cast<size_t>(w.dra.requests);
  const std::string key = pod.meta.namespace_ + "/" + PodClaimName(w, pod, client);
  api::ResourceClaimPtr claim = claims.Get(key);
  const bool ok = claim != nullptr && claim->status.allocation &&
                  claim->status.allocation->results.size() == requests &&
                  claim->status.allocation->node_selector &&
                  claim->status.allocation->node_selector->Matches(api::Labels(), node) &&
                  claim->status.reserved_for.size() == 1 &&
                  claim->status.reserved_for[0].uid == pod.meta.uid;
  if (!ok) {
    std::fprintf(stderr, "%s: claim %s of pod %s on node \"%s\" is not allocated there for it\n",
                 w.name, key.c_str(), pod.Key().c_str(), node.c_str());
  }
  return ok;
}

// Every measured pod's claim allocated on the pod's node and reserved for the pod, and no device
// given twice (counting the claims allocated before the run).
bool CheckDraAllocations(const Workload& w, const std::vector<api::PodPtr>& measured,
                         scheduler::Scheduler& sched, informer::SharedInformerFactory& informers,
                         const ClaimWritingClient& client) {
  const auto& claims = informers.For<api::ResourceClaim>().store();
  int allocated = 0;
  if (!CheckDevicesOnce(w, claims, &allocated)) return false;
  for (const api::PodPtr& pod : measured) {
    auto cached = sched.cache().GetPod(pod->meta.uid);
    if (!CheckPodClaim(w, *pod, cached ? cached->spec.node_name : "", claims, client)) {
      return false;
    }
  }
  return true;
}

// Every gang's pods on nodes of one rack, as their PodGroups ask; otherwise says how many gangs
// are split and the first one's racks.
bool CheckGangRacks(const Workload& w, const std::vector<api::PodPtr>& measured, int nodes,
                    scheduler::Scheduler& sched) {
  int split = 0;
  std::string first;
  for (size_t start = 0; start < measured.size(); start += static_cast<size_t>(w.gang_size)) {
    const size_t end = std::min(start + static_cast<size_t>(w.gang_size), measured.size());
    std::set<std::string> racks;
    for (size_t i = start; i < end; i++) {
      auto cached = sched.cache().GetPod(measured[i]->meta.uid);
      const int node = cached ? NodeIndex(cached->spec.node_name) : -1;
      racks.insert(node < 0 ? "no node" : Rack(node, nodes, w.racks));
    }
    if (racks.size() == 1) continue;
    if (split++ == 0) {
      first = *measured[start]->meta.labels.Find(api::kPodGroupLabel) + " on " +
              std::to_string(racks.size()) + " racks (" + *racks.begin() + ", " +
              *std::next(racks.begin()) + (racks.size() > 2 ? ", ..." : "") + ")";
    }
  }
  if (split > 0) {
    std::fprintf(stderr,
                 "%s: %d of %zu gangs span more than one %s, though each PodGroup asks for one "
                 "(first: %s)\n",
                 w.name, split, (measured.size() + w.gang_size - 1) / w.gang_size,
                 std::string(kRackKey).c_str(), first.c_str());
  }
  return split == 0;
}

bool Available(const Workload& w, const framework::runtime::Registry& registry) {
  return !w.needs_plugin || registry.count(w.needs_plugin) > 0;
}

// Returns false when the run did not finish (pods stuck), after saying why.
bool Run(const Workload& w, const Flags& flags, Result* out) {
  const int num_nodes = flags.nodes.value_or(w.nodes);
  const bool extended = w.kind == Kind::kDRAExtendedResource;
  const bool dra = w.kind == Kind::kDRA || extended;
  const bool steady = w.kind == Kind::kDRA && w.dra.steady_pending > 0;
  // DRA workloads fill a share of the nodes' devices, so their sizes follow the node count.
  auto scaled = [&](int count) {
    return dra ? static_cast<int>(static_cast<int64_t>(count) * num_nodes / w.nodes) : count;
  };
  const int num_existing = flags.existing_pods.value_or(
      w.dra.free_devices > 0 ? num_nodes * w.dra.devices_per_node - w.dra.free_devices
                             : scaled(w.existing_pods));
  const int num_measured = flags.pods.value_or(scaled(w.pods));
  out->name = w.name;
  out->nodes = num_nodes;
  out->existing_pods = num_existing;
  out->pods = num_measured;

  auto binder = std::make_shared<InstantBinder>();
  framework::runtime::Registry registry = plugins::registry::InTree();
  registry[std::string(InstantBinder::kName)] = [binder](const nlohmann::json&,
                                                         framework::Handle&) { return binder; };
  config::Configuration cfg = config::DefaultConfiguration();
  cfg.parallelism = flags.parallelism;
  cfg.percentage_of_nodes_to_score = flags.percentage_of_nodes_to_score;
  auto& plugins = cfg.profiles[0].plugins;
  if (flags.pod_group_backoff_seconds) {
    cfg.profiles[0].plugin_config.push_back(
        {"Coscheduling", {{"podGroupBackoffSeconds", *flags.pod_group_backoff_seconds}}});
  }
  plugins.bind.disabled.push_back({std::string(config::kAllPlugins), 0});
  plugins.bind.enabled.push_back({std::string(InstantBinder::kName), 0});
  NoopRecorder recorder;
  scheduler::SchedulerDeps deps;
  deps.recorder = &recorder;
  auto evictor = std::make_shared<EvictingClient>();
  const bool gang_preemption = w.kind == Kind::kGangPreemption;
  const bool preemption = w.kind == Kind::kPreemption || gang_preemption;
  if (preemption) deps.client = evictor;
  auto claim_client = std::make_shared<ClaimWritingClient>();
  if (dra) deps.client = claim_client;
  // Declared before the scheduler, which calls it until it is destroyed.
  std::optional<LoopbackExtender> loopback;
  if (flags.extender) {
    loopback.emplace();
    config::Extender e;
    e.url_prefix = loopback->url();
    e.filter_verb = "filter";
    e.prioritize_verb = "prioritize";
    e.weight = 1;
    e.node_cache_capable = true;
    for (auto& built : extender::Build({e}, "scheduler_bench", nullptr)) {
      deps.extenders.push_back(
          std::make_shared<TimedExtender>(std::move(built), &out->extender_times));
    }
    out->name += "+extender";
    out->extender = true;
    out->reference_pods_per_s = flags.reference_pods_per_s;
  }
  scheduler::SchedulerOptions options;
  options.seed = flags.seed;
  scheduler::Scheduler sched(cfg, registry, deps, options);
  // The victims the preemption plugin may evict, by store key.
  std::unordered_map<std::string, api::PodPtr> evictable;
  auto& pod_store =
      sched.FrameworkFor(cfg.profiles[0].scheduler_name)->SharedInformerFactory().Pods().store();
  evictor->Attach(&sched, &pod_store, &evictable);

  const bool unschedulable = w.kind == Kind::kUnschedulable;
  // One group at a time (gang), or every group at once (concurrent_gangs).
  const bool gang = w.kind == Kind::kGang;
  const bool concurrent_gangs = w.kind == Kind::kConcurrentGangs || gang_preemption;
  const bool any_gang = gang || concurrent_gangs;
  out->gang_size = w.gang_size;
  out->racks = w.racks;
  std::vector<api::PodPtr> measured;
  // Reserved up front so its growth does not count as scheduler memory. In a steady state, a
  // pod's slot is filled when it is created and emptied when it is deleted.
  measured.reserve(num_measured);
  if (steady) measured.resize(num_measured);
  // Coscheduling counts a gang's pods from the pod informer, which no apiserver feeds here.
  auto& pod_informer =
      sched.FrameworkFor(cfg.profiles[0].scheduler_name)->SharedInformerFactory().Pods();
  binder->Attach(&sched, &measured, num_measured, any_gang ? &pod_informer : nullptr, steady);
  std::mt19937_64 rng(flags.seed);

  int64_t heap = HeapInUse();
  // SchedulingPodAffinity labels every node zone1 (its labelNodePrepareStrategy).
  const bool one_zone = w.kind == Kind::kPodAffinity;
  for (int i = 0; i < num_nodes; i++) {
    sched.OnNodeAdd(
        MakeNode(NodeName(i), i, one_zone, w.racks > 0 ? Rack(i, num_nodes, w.racks) : ""));
  }
  // The storage objects the volume plugins read, held in their informers as an apiserver would
  // have listed them.
  auto& informers = sched.FrameworkFor(cfg.profiles[0].scheduler_name)->SharedInformerFactory();
  const bool volumes = VolumeKind(w.kind);
  if (w.kind == Kind::kCSIPVs || w.kind == Kind::kMigratedInTreePVs) {
    for (int i = 0; i < num_nodes; i++) {
      informers.For<api::CSINode>().Upsert(
          MakeCSINode(NodeName(i), w.kind == Kind::kMigratedInTreePVs));
    }
  }
  if (dra) {
    claim_client->Attach(&informers.For<api::ResourceClaim>());
    if (extended) {
      for (int c = 0; c < w.dra.classes; c++) {
        informers.For<api::DeviceClass>().Upsert(MakeDraClass(
            ExtendedClass(c, w.dra),
            w.dra.implicit ? std::nullopt : std::optional(ExtendedResource(c, w.dra))));
      }
    } else {
      informers.For<api::DeviceClass>().Upsert(MakeDraClass(std::string(kDraClass)));
    }
    for (int i = 0; i < num_nodes; i++) {
      informers.For<api::ResourceSlice>().Upsert(MakeDraSlice(i, w.dra));
    }
    // Extended-resource pods, existing and measured, each take a device for good.
    const int64_t wanted = num_existing + (extended ? int64_t{num_measured} : 0);
    if (wanted > int64_t{num_nodes} * w.dra.devices_per_node || num_existing < 0) {
      std::fprintf(stderr, "%s: %lld devices wanted, %d exist\n", w.name,
                   static_cast<long long>(wanted), num_nodes * w.dra.devices_per_node);
      return false;
    }
  }
  out->bytes_per_node = num_nodes ? (HeapInUse() - heap) / num_nodes : 0;

  // Existing pods arrive already assigned, as an informer's initial list delivers them. Those
  // with node affinity go to nodes it allows; those with pod (anti-)affinity one to a node, as
  // scheduler_perf's scheduler spreads them.
  heap = HeapInUse();
  const bool pod_affinity_kind = w.kind == Kind::kPodAntiAffinity || w.kind == Kind::kPodAffinity ||
                                 w.kind == Kind::kPreferredPodAffinity ||
                                 w.kind == Kind::kPreferredPodAntiAffinity;
  const Kind existing_kind =
      w.kind == Kind::kNodeAffinity || pod_affinity_kind || volumes ? w.kind : Kind::kBasic;
  std::vector<int> allowed;
  for (int n = 0; n < num_nodes; n++) {
    if (existing_kind != Kind::kNodeAffinity || n % kZones < 2) allowed.push_back(n);
  }
  for (int i = 0; i < num_existing && dra; i++) {
    if (extended) {
      sched.OnPodAdd(MakeBoundExtendedResourcePod(i, num_nodes, w.dra, *claim_client));
    } else {
      claim_client->Create(AllocatedDraClaim(i, num_nodes, w.dra));
    }
  }
  for (int i = 0; i < num_existing && !allowed.empty() && !dra; i++) {
    const std::string name = "x-" + std::to_string(i);
    const std::string node = NodeName(allowed[i % allowed.size()]);
    if (!preemption) {
      api::PodPtr pod = MakePod(existing_kind, name, "sched-0", node);
      if (volumes) AddBoundClaim(w.kind, *pod, informers);
      sched.OnPodAdd(pod);
      continue;
    }
    api::PodPtr pod = gang_preemption ? MakeLowPriorityPod(name, node, "40m", "100Mi")
                                      : MakeLowPriorityPod(name, node);
    evictable[pod->Key()] = pod;
    pod_store.Upsert(pod->Key(), pod);
    sched.OnPodAdd(pod);
  }
  out->bytes_per_pod = num_existing ? (HeapInUse() - heap) / num_existing : 0;

  // Measured pods all wait in the queue before the first cycle, as after a burst of creations;
  // one-at-a-time gangs' pods reach the scheduler a group at a time during the run, and in a
  // steady state only the first few are created before it.
  heap = HeapInUse();
  auto& groups = informers.For<api::PodGroup>();
  // Per group: when its last pod reached the scheduler.
  std::vector<Clock::time_point> group_created;
  const int num_groups = any_gang ? (num_measured + w.gang_size - 1) / w.gang_size : 0;
  // Every PodGroup exists before its pods, as scheduler_perf's createPodGroups waits for the
  // scheduler to see them before createPods.
  for (int g = 0; g < num_groups && concurrent_gangs; g++) {
    const int size = std::min(w.gang_size, num_measured - g * w.gang_size);
    groups.Upsert(std::make_shared<api::PodGroup>(
        MakePodGroup("g-" + std::to_string(g), size, w.racks > 0 ? kRackKey : std::string_view())));
  }
  const Kind measured_kind = unschedulable || w.kind == Kind::kMixedChurn ? Kind::kBasic : w.kind;
  auto make_measured = [&](int i) {
    const std::string name = std::string(kMeasuredPrefix) + std::to_string(i);
    return preemption ? MakeHighPriorityPod(name)
           : extended ? MakeExtendedResourcePod(name, "test", i, w.dra)
           : dra      ? MakeDraPod(name, "test", w.dra, *claim_client)
                      : MakePod(measured_kind, name, "sched-1");
  };
  const int initially = steady ? std::min(w.dra.steady_pending, num_measured) : num_measured;
  for (int i = 0; i < initially; i++) {
    if (any_gang) {
      const std::string name = std::string(kMeasuredPrefix) + std::to_string(i);
      const std::string group = "g-" + std::to_string(i / w.gang_size);
      measured.push_back(gang_preemption ? MakePreemptorGangPod(name, group)
                                         : MakeGangPod(name, group));
      if (gang) continue;
      // As the pod informer delivers a new pod: to the store Coscheduling counts a gang's pods
      // in, then to the scheduler's handler, so a gang's earlier pods wait at PreEnqueue until
      // its last one arrives.
      pod_informer.Upsert(measured.back());
      sched.OnPodAdd(measured.back());
      if ((i + 1) % w.gang_size == 0 || i + 1 == num_measured) {
        group_created.push_back(Clock::now());
      }
      continue;
    }
    api::PodPtr pod = make_measured(i);
    if (volumes) AddBoundClaim(w.kind, *pod, informers);
    if (steady) {
      measured[i] = pod;
    } else {
      measured.push_back(pod);
    }
    sched.OnPodAdd(pod);
    if (unschedulable) sched.OnPodAdd(MakeHugePod("u-" + std::to_string(i)));
  }
  const int queued = gang ? 0 : initially * (unschedulable ? 2 : 1);
  out->bytes_per_pending_pod = queued ? (HeapInUse() - heap) / queued : 0;

  // Backoff flushing as in production: pods a cluster event moved to backoffQ come back.
  sched.queue().Run();
  std::optional<Churner> churner;
  if (w.kind == Kind::kMixedChurn) {
    churner.emplace(&sched, num_nodes, flags.seed + 1,
                    std::chrono::microseconds(flags.churn_interval_us));
    churner->Start();
  }

  std::vector<double> ok_us, failed_us;
  ok_us.reserve(queued);
  auto& stats = sched.stats();
  const auto start = Clock::now();
  // Pop blocks while activeQ is empty, and PendingPods() walks the unschedulable pool, so the loop
  // asks the queue only at the tail: measured pods always fit, so those neither bound nor in a
  // binding cycle are still in activeQ. (InFlightBindings is read before bound(): a pod moving
  // between the two is then counted twice, never missed.) Should measured pods not fit after all,
  // the watchdog closes the queue so the blocked Pop returns.
  std::atomic<Clock::rep> heartbeat{start.time_since_epoch().count()};
  std::atomic<bool> timed_out{false};
  std::jthread watchdog([&](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (Clock::now() - Clock::time_point(Clock::duration(heartbeat.load())) >
          std::chrono::seconds(10)) {
        timed_out = true;
        sched.queue().Close();
        return;
      }
    }
  });
  bool finished = true;
  int last_bound = 0;
  // Gangs and steady states: how many measured pods the scheduler has been given; for gangs,
  // when each group's last was.
  int created = gang ? 0 : initially;
  const auto& claim_store = informers.For<api::ResourceClaim>().store();
  // A steady state's bound pod goes as the pod informer would report its deletion, then its claim
  // as the resourceclaim controller and garbage collector would remove it (freeing its device),
  // and a new pod with a new claim takes its place. False if the pod's claim was not right.
  auto replace_bound = [&](const api::PodPtr& done) {
    if (!CheckPodClaim(w, *done, done->spec.node_name, claim_store, *claim_client)) return false;
    sched.OnPodDelete(done);
    const std::string claim = done->meta.namespace_ + "/" + PodClaimName(w, *done, *claim_client);
    if (!claim_client->Remove(claim)) {
      std::fprintf(stderr, "%s: claim %s of bound pod %s is gone\n", w.name, claim.c_str(),
                   done->Key().c_str());
      return false;
    }
    measured[*MeasuredIndex(done->meta.name)] = nullptr;
    if (created < num_measured) {
      measured[created] = make_measured(created);
      sched.OnPodAdd(measured[created]);
      created++;
    }
    return true;
  };
  for (;;) {
    if (steady) {
      bool replaced = true;
      for (const api::PodPtr& done : binder->TakeBound()) {
        if (!(replaced = replace_bound(done))) break;
      }
      if (!replaced) {
        finished = false;
        break;
      }
    }
    const int in_flight = sched.InFlightBindings();
    const int bound = binder->bound();
    if (gang && bound == created && created < num_measured) {
      const int size = std::min(w.gang_size, num_measured - created);
      groups.Upsert(std::make_shared<api::PodGroup>(
          MakePodGroup("g-" + std::to_string(group_created.size()), size)));
      for (int i = created; i < created + size; i++) pod_informer.Upsert(measured[i]);
      for (int i = created; i < created + size; i++) sched.OnPodAdd(measured[i]);
      created += size;
      group_created.push_back(Clock::now());
      heartbeat.store(Clock::now().time_since_epoch().count());
      continue;
    }
    if (bound != last_bound) {
      last_bound = bound;
      heartbeat.store(Clock::now().time_since_epoch().count());
    }
    if (timed_out) {
      std::fprintf(stderr, "%s: stuck at %d of %d pods bound (%llu failed attempts)\n", w.name,
                   bound, num_measured,
                   static_cast<unsigned long long>(stats.unschedulable.load()));
      if (steady) {
        const auto pending = sched.queue().PendingPods();
        std::fprintf(stderr,
                     "%s: steady state: %d pods created, %zu active, %zu backing off, %zu "
                     "unschedulable; a deleted pod's device is free again only once its claim's "
                     "deletion reached the claim informer\n",
                     w.name, created, pending.active, pending.backoff, pending.unschedulable);
      }
      finished = false;
      break;
    }
    // A steady state's pods may wait for a device another pod's deletion frees, which this loop
    // does, so it must not block in Pop while none is active.
    if (steady || created - bound - in_flight <= 0) {
      const size_t active = sched.queue().PendingPods().active;
      if (bound >= num_measured && (!unschedulable || active == 0)) break;
      if (active == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        continue;
      }
    }
    const uint64_t failures_before = stats.unschedulable.load() + stats.errors.load();
    const auto t0 = Clock::now();
    if (!sched.ScheduleOne()) continue;  // Closed by the watchdog.
    const auto t1 = Clock::now();
    heartbeat.store(t1.time_since_epoch().count());
    const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
    (stats.unschedulable.load() + stats.errors.load() != failures_before ? failed_us : ok_us)
        .push_back(us);
  }
  watchdog.request_stop();
  watchdog.join();
  if (churner) out->churn_ops = churner->Stop();
  const auto end = num_measured && finished ? binder->last_bind() : Clock::now();
  out->seconds = std::chrono::duration<double>(end - start).count();
  out->pods_per_s = out->seconds > 0 ? binder->bound() / out->seconds : 0;
  out->ok_cycles = Summarize(std::move(ok_us));
  out->failed_cycles = Summarize(std::move(failed_us));
  out->heap_after_run = HeapInUse();
  out->peak_rss = PeakRssBytes();
  out->attempt_records = sched.attempts().pending_count();
  out->attempt_record_bytes = sched.attempts().bytes();
  if (loopback) {
    out->extender_requests = loopback->requests();
    out->extender_server = loopback->busy();
  }
  // The numbers only count if the scheduler did the job: every measured pod confirmed in the
  // cache on a node its constraints allow.
  while (sched.InFlightBindings() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (const api::PodPtr& done :
       steady&& finished ? binder->TakeBound() : std::vector<api::PodPtr>{}) {
    if (!replace_bound(done)) finished = false;
  }
  // A steady state's pods are deleted as they are bound; each was checked then.
  for (const auto& pod : finished && !steady ? measured : std::vector<api::PodPtr>{}) {
    auto cached = sched.cache().GetPod(pod->meta.uid);
    const std::string node = cached ? cached->spec.node_name : "";
    const int index = NodeIndex(node);
    if (node.empty() || sched.cache().IsAssumedPod(*cached) ||
        (w.kind == Kind::kNodeAffinity && (index < 0 || index % kZones >= 2))) {
      std::fprintf(stderr, "%s: pod %s is on node \"%s\" (assumed: %d)\n", w.name,
                   pod->Key().c_str(), node.c_str(), cached && sched.cache().IsAssumedPod(*cached));
      finished = false;
      break;
    }
  }
  if (dra && finished && !steady &&
      !CheckDraAllocations(w, measured, sched, informers, *claim_client)) {
    finished = false;
  }
  // With every measured pod and claim gone, only the claims allocated before the run are left.
  int allocated = 0;
  if (steady && finished && !CheckDevicesOnce(w, claim_store, &allocated)) finished = false;
  if (steady && finished && allocated != num_existing) {
    std::fprintf(stderr, "%s: %d claims allocated after the run, expected the %d made before it\n",
                 w.name, allocated, num_existing);
    finished = false;
  }
  out->steady_pending = steady ? w.dra.steady_pending : 0;
  out->victims = evictor->deleted();
  out->victims_already_gone = evictor->already_gone();
  if (any_gang && finished) {
    std::vector<double> ms;
    for (size_t g = 0; g < group_created.size(); g++) {
      const size_t first = g * static_cast<size_t>(w.gang_size);
      const size_t end = std::min(first + static_cast<size_t>(w.gang_size), measured.size());
      Clock::time_point last_bind = binder->bind_time(first);
      for (size_t i = first + 1; i < end; i++) {
        last_bind = std::max(last_bind, binder->bind_time(i));
      }
      ms.push_back(std::chrono::duration<double, std::milli>(last_bind - group_created[g]).count());
    }
    out->gang_ms = Summarize(std::move(ms));
  }
  if (w.racks > 0 && finished && !CheckGangRacks(w, measured, num_nodes, sched)) finished = false;
  // Each preemptor needs a whole node: all of its low-priority pods, and no other pod.
  if (preemption && finished && out->victims != num_existing) {
    std::fprintf(stderr, "%s: %d pods evicted for %d preemptors, expected %d\n", w.name,
                 out->victims, num_measured, num_existing);
    finished = false;
  }
  if (stats.errors.load() > 0) {
    std::fprintf(stderr, "%s: %llu scheduling errors\n", w.name,
                 static_cast<unsigned long long>(stats.errors.load()));
    finished = false;
  }
  return finished;
}

// The extender calls of a run, per call.
struct ExtenderCost {
  double nodes_per_call = 0;
  double us_per_call = 0;    // Filter and prioritize alike.
  double filter_us = 0;      // Filter.
  double prioritize_us = 0;  // StartPrioritize and Wait.
  double prioritize_start_us = 0;
  double server_us = 0;  // The loopback server computing its answer.
  // From throughput: the time per pod the extender added (against the run without it), over the
  // calls per pod. Unset without a reference run.
  std::optional<double> throughput_us_per_call;
};

ExtenderCost Cost(const Result& r) {
  using Us = std::chrono::duration<double, std::micro>;
  const ExtenderTimes& t = r.extender_times;
  const double calls = static_cast<double>(t.filter_calls + t.prioritize_calls);
  ExtenderCost c;
  if (calls == 0) return c;
  c.nodes_per_call = static_cast<double>(t.nodes_sent) / calls;
  c.us_per_call = Us(t.filter + t.prioritize_start + t.prioritize_wait).count() / calls;
  if (t.filter_calls) c.filter_us = Us(t.filter).count() / static_cast<double>(t.filter_calls);
  if (t.prioritize_calls) {
    c.prioritize_us = Us(t.prioritize_start + t.prioritize_wait).count() /
                      static_cast<double>(t.prioritize_calls);
    c.prioritize_start_us =
        Us(t.prioritize_start).count() / static_cast<double>(t.prioritize_calls);
  }
  if (r.extender_requests) {
    c.server_us = Us(r.extender_server).count() / static_cast<double>(r.extender_requests);
  }
  if (r.reference_pods_per_s > 0 && r.pods_per_s > 0 && r.pods > 0) {
    const double per_pod = 1e6 / r.pods_per_s - 1e6 / r.reference_pods_per_s;
    c.throughput_us_per_call = per_pod * r.pods / calls;
  }
  return c;
}

nlohmann::json PercentilesJson(const Percentiles& p) {
  if (p.count == 0) return nullptr;
  return {{"count", p.count}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}

void PrintJson(const Result& r) {
  nlohmann::json j = {{"workload", r.name},
                      {"available", true},
                      {"nodes", r.nodes},
                      {"existing_pods", r.existing_pods},
                      {"measured_pods", r.pods},
                      {"seconds", r.seconds},
                      {"pods_per_s", static_cast<int64_t>(r.pods_per_s)},
                      {"cycle_us", PercentilesJson(r.ok_cycles)},
                      {"failed_cycle_us", PercentilesJson(r.failed_cycles)},
                      {"bytes_per_node", r.bytes_per_node},
                      {"bytes_per_pod", r.bytes_per_pod},
                      {"bytes_per_pending_pod", r.bytes_per_pending_pod},
                      {"heap_after_run_bytes", r.heap_after_run},
                      {"peak_rss_bytes", r.peak_rss}};
  if (r.churn_ops) j["churn_ops"] = r.churn_ops;
  if (r.victims) j["victims"] = r.victims;
  if (r.victims_already_gone) j["victims_already_gone"] = r.victims_already_gone;
  j["attempt_records"] = r.attempt_records;
  j["attempt_record_bytes"] = r.attempt_record_bytes;
  if (r.steady_pending) j["steady_state_pending_pods"] = r.steady_pending;
  if (r.gang_size) {
    j["gang_size"] = r.gang_size;
    if (r.racks) j["racks"] = r.racks;
    // Per gang: from its last pod reaching the scheduler to its last pod bound.
    j["gang_last_pod_to_last_bind_ms"] = PercentilesJson(r.gang_ms);
  }
  if (r.extender) {
    const ExtenderCost c = Cost(r);
    j["extender"] = {{"filter_calls", r.extender_times.filter_calls},
                     {"prioritize_calls", r.extender_times.prioritize_calls},
                     {"nodes_per_call", c.nodes_per_call},
                     {"us_per_call", c.us_per_call},
                     {"filter_us_per_call", c.filter_us},
                     {"prioritize_us_per_call", c.prioritize_us},
                     {"server_us_per_request", c.server_us},
                     {"reference_pods_per_s", static_cast<int64_t>(r.reference_pods_per_s)}};
    if (c.throughput_us_per_call)
      j["extender"]["throughput_us_per_call"] = *c.throughput_us_per_call;
  }
  std::printf("%s\n", j.dump().c_str());
}

void PrintHeader() {
  std::printf("%-44s %6s %6s %6s %9s %23s %23s %7s %7s %7s %8s\n", "workload", "nodes", "exist",
              "pods", "pods/s", "cycle us p50/p90/p99", "failed-cycle p50/90/99", "B/node", "B/pod",
              "B/pend", "peak MiB");
}

std::string Triple(const Percentiles& p) {
  if (p.count == 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f/%.0f/%.0f", p.p50, p.p90, p.p99);
  return buf;
}

void PrintRow(const Result& r) {
  std::printf("%-44s %6d %6d %6d %9.0f %23s %23s %7lld %7lld %7lld %8.1f\n", r.name.c_str(),
              r.nodes, r.existing_pods, r.pods, r.pods_per_s, Triple(r.ok_cycles).c_str(),
              Triple(r.failed_cycles).c_str(), static_cast<long long>(r.bytes_per_node),
              static_cast<long long>(r.bytes_per_pod),
              static_cast<long long>(r.bytes_per_pending_pod),
              static_cast<double>(r.peak_rss) / 1048576.0);
  if (r.churn_ops) {
    std::printf("%-44s churn: %llu ops during the run\n", "",
                static_cast<unsigned long long>(r.churn_ops));
  }
  if (r.victims) {
    std::printf("%-44s preemption: %d pods evicted", "", r.victims);
    if (r.victims_already_gone) {
      std::printf(", %d more DELETEs of pods already evicted", r.victims_already_gone);
    }
    std::printf("\n");
  }
  if (r.steady_pending) {
    std::printf(
        "%-44s steady state: %d pods pending at a time, each bound one deleted and "
        "replaced\n",
        "", r.steady_pending);
  }
  if (r.attempt_records) {
    std::printf("%-44s explain: last attempts of %zu pending pods held in %.1f MiB\n", "",
                r.attempt_records, static_cast<double>(r.attempt_record_bytes) / 1048576.0);
  }
  if (r.gang_size) {
    std::printf(
        "%-44s gangs: %zu groups of %d%s, last pod created to last bound p50/p90/p99 "
        "%.1f/%.1f/%.1f ms\n",
        "", r.gang_ms.count, r.gang_size,
        r.racks ? (", each in one of " + std::to_string(r.racks) + " racks").c_str() : "",
        r.gang_ms.p50, r.gang_ms.p90, r.gang_ms.p99);
  }
  if (r.extender) {
    const ExtenderCost c = Cost(r);
    std::printf(
        "%-44s extender: %llu filter + %llu prioritize calls, %.0f nodes each; %.0f us per call "
        "(filter %.0f, prioritize %.0f of which %.0f to start it), the server's share %.0f us\n",
        "", static_cast<unsigned long long>(r.extender_times.filter_calls),
        static_cast<unsigned long long>(r.extender_times.prioritize_calls), c.nodes_per_call,
        c.us_per_call, c.filter_us, c.prioritize_us, c.prioritize_start_us, c.server_us);
    if (c.throughput_us_per_call) {
      std::printf(
          "%-44s extender: %.0f pods/s against %.0f without (%.2fx), %.0f us per call from "
          "throughput\n",
          "", r.pods_per_s, r.reference_pods_per_s, r.pods_per_s / r.reference_pods_per_s,
          *c.throughput_us_per_call);
    }
  }
}

void PrintUnavailable(const Workload& w, bool json) {
  if (json) {
    nlohmann::json j = {
        {"workload", w.name}, {"available", false}, {"needs_plugin", w.needs_plugin}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%-44s not available yet: needs plugin %s\n", w.name, w.needs_plugin);
  }
}

// Runs one workload and prints its line; returns the exit code. Sets *pods_per_s when given.
int RunAndPrint(const Workload& w, const Flags& flags, double* pods_per_s = nullptr) {
  Result r;
  if (!Run(w, flags, &r)) return 1;
  if (pods_per_s != nullptr) *pods_per_s = r.pods_per_s;
  if (flags.json) {
    PrintJson(r);
  } else {
    PrintRow(r);
  }
  return 0;
}

// Each workload of "all" (and each of the two runs of --extender) runs in its own child process
// so that peak RSS (getrusage) and the heap start clean for each one. The child's pods/s comes
// back through a pipe into *pods_per_s when given.
int RunIsolated(const Workload& w, const Flags& flags, double* pods_per_s = nullptr) {
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (pipe(fds) < 0) {
    std::perror("pipe");
    return 1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    close(fds[0]);
    close(fds[1]);
    return 1;
  }
  if (pid == 0) {
    close(fds[0]);
    double rate = 0;
    int code = RunAndPrint(w, flags, &rate);
    std::fflush(stdout);
    const std::string text = std::to_string(rate);
    if (write(fds[1], text.data(), text.size()) < 0) code = 1;
    _exit(code);
  }
  close(fds[1]);
  std::string text;
  char buf[64];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 1;
  if (pods_per_s != nullptr) *pods_per_s = std::strtod(text.c_str(), nullptr);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--workload NAME|all] [--nodes N] [--existing-pods N] [--pods N]\n"
               "       [--seed S] [--parallelism P] [--churn-interval-us U]\n"
               "       [--percentage-of-nodes-to-score P] [--extender loopback]\n"
               "       [--pod-group-backoff-seconds S] [--json]\n"
               "workloads:",
               argv0);
  for (const auto& w : Workloads()) std::fprintf(stderr, " %s", w.name);
  std::fprintf(stderr, "\n");
}

bool ParseInt(const char* text, int64_t min, int64_t* out) {
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, *out);
  return ec == std::errc() && ptr == end && *out >= min;
}

}  // namespace
}  // namespace berth::perf

int main(int argc, char** argv) {
  using namespace berth::perf;
  Flags flags;
  for (int i = 1; i < argc; i++) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    int64_t v = 0;
    auto number = [&](int64_t min) { return has_value && ParseInt(argv[++i], min, &v); };
    if (arg == "--json") {
      flags.json = true;
    } else if (arg == "--workload" && has_value) {
      flags.workload = argv[++i];
    } else if (arg == "--nodes" && number(1)) {
      flags.nodes = static_cast<int>(v);
    } else if (arg == "--existing-pods" && number(0)) {
      flags.existing_pods = static_cast<int>(v);
    } else if (arg == "--pods" && number(0)) {
      flags.pods = static_cast<int>(v);
    } else if (arg == "--seed" && number(0)) {
      flags.seed = static_cast<uint64_t>(v);
    } else if (arg == "--parallelism" && number(1)) {
      flags.parallelism = static_cast<int>(v);
    } else if (arg == "--churn-interval-us" && number(1)) {
      flags.churn_interval_us = static_cast<int>(v);
    } else if (arg == "--percentage-of-nodes-to-score" && number(0) && v <= 100) {
      flags.percentage_of_nodes_to_score = static_cast<int>(v);
    } else if (arg == "--pod-group-backoff-seconds" && number(0) && v <= 3600) {
      flags.pod_group_backoff_seconds = static_cast<int>(v);
    } else if (arg == "--extender" && has_value && std::string_view(argv[i + 1]) == "loopback") {
      flags.extender = true;
      i++;
    } else {
      Usage(argv[0]);
      return 2;
    }
  }

  const auto registry = berth::plugins::registry::InTree();
  std::vector<const Workload*> selected;
  for (const auto& w : Workloads()) {
    if (flags.workload == "all" || flags.workload == w.name) selected.push_back(&w);
  }
  if (selected.empty()) {
    std::fprintf(stderr, "unknown workload %s\n", flags.workload.c_str());
    Usage(argv[0]);
    return 2;
  }
  if (!flags.json) PrintHeader();
  int code = 0;
  for (const Workload* w : selected) {
    if (!Available(*w, registry)) {
      PrintUnavailable(*w, flags.json);
      continue;
    }
    if (flags.extender) {
      // The reference run first, then the same workload with the extender against it.
      Flags without = flags;
      without.extender = false;
      double reference = 0;
      int rc = RunIsolated(*w, without, &reference);
      if (rc == 0) {
        Flags with = flags;
        with.reference_pods_per_s = reference;
        rc = RunIsolated(*w, with);
      }
      code = std::max(code, rc);
      continue;
    }
    const int rc = selected.size() > 1 ? RunIsolated(*w, flags) : RunAndPrint(*w, flags);
    code = std::max(code, rc);
  }
  return code;
}
