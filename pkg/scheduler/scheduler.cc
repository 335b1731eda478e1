#include "pkg/scheduler/scheduler.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <span>

#include "pkg/events/recorder.h"
#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/scheduler/unsupported_fields.h"
#include "pkg/util/clock.h"

namespace berth::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
using framework::Code;
using framework::Status;

constexpr int kMinFeasibleNodesToFind = 100;
constexpr int kMinFeasibleNodesPercentageToFind = 5;
constexpr int kBasePercentageOfNodesToScore = 50;

framework::ClusterEvent Event(framework::EventResource resource, uint32_t actions,
                              std::string label) {
  return {resource, actions, std::move(label)};
}

bool Assigned(const api::Pod& pod) { return !pod.spec.node_name.empty(); }

framework::EventObjects PodObjects(api::PodPtr old_pod, api::PodPtr new_pod) {
  framework::EventObjects objects;
  objects.old_pod = std::move(old_pod);
  objects.new_pod = std::move(new_pod);
  return objects;
}

framework::EventObjects NodeObjects(api::NodePtr old_node, api::NodePtr new_node) {
  framework::EventObjects objects;
  objects.old_node = std::move(old_node);
  objects.new_node = std::move(new_node);
  return objects;
}

// Which node properties changed, as upstream's nodeSchedulingPropertiesChange.
uint32_t NodeChangeActions(const api::Node& old_node, const api::Node& new_node) {
  uint32_t actions = 0;
  if (old_node.spec.unschedulable != new_node.spec.unschedulable) {
    actions |= framework::kUpdateNodeSpecUnschedulable;
  }
  if (!(old_node.status.allocatable == new_node.status.allocatable)) {
    actions |= framework::kUpdateNodeAllocatable;
  }
  if (!(old_node.meta.labels == new_node.meta.labels)) actions |= framework::kUpdateNodeLabel;
  auto same_taints = [](const std::vector<api::Taint>& a, const std::vector<api::Taint>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++) {
      if (a[i].key != b[i].key || a[i].value != b[i].value || a[i].effect != b[i].effect) {
        return false;
      }
    }
    return true;
  };
  if (!same_taints(old_node.spec.taints, new_node.spec.taints)) {
    actions |= framework::kUpdateNodeTaint;
  }
  auto conditions = [](const api::Node& n) {
    std::map<std::string, std::string> out;
    for (const auto& c : n.status.conditions) out[c.type] = c.status;
    return out;
  };
  if (conditions(old_node) != conditions(new_node)) actions |= framework::kUpdateNodeCondition;
  if (!(old_node.meta.annotations == new_node.meta.annotations)) {
    actions |= framework::kUpdateNodeAnnotation;
  }
  return actions;
}

// Which pod properties changed, for events about assigned pods.
uint32_t PodChangeActions(const api::Pod& old_pod, const api::Pod& new_pod) {
  uint32_t actions = 0;
  if (!(old_pod.meta.labels == new_pod.meta.labels)) actions |= framework::kUpdatePodLabel;
  if (new_pod.requests.milli_cpu < old_pod.requests.milli_cpu ||
      new_pod.requests.memory < old_pod.requests.memory) {
    actions |= framework::kUpdatePodScaleDown;
  }
  return actions;
}

bool HasCondition(const api::Pod& pod, const std::string& reason, const std::string& message) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == "PodScheduled") {
      return c.status == "False" && c.reason == reason && c.message == message;
    }
  }
  return false;
}

}  // namespace

std::string FitErrorMessage(int num_all_nodes, const Diagnosis& diagnosis) {
  std::string msg = "0/" + std::to_string(num_all_nodes) + " nodes are available:";
  if (!diagnosis.pre_filter_msg.empty()) {
    msg += " " + diagnosis.pre_filter_msg + ".";
  } else {
    std::map<std::string, int> reasons;
    // Runs of equal reason lists (every node short of cpu) are counted once per run: with a pod
    // that fits nowhere there is one status per node of the cluster.
    const std::vector<std::string>* run = nullptr;
    int run_length = 0;
    auto flush = [&] {
      if (run != nullptr) {
        for (const auto& reason : *run) reasons[reason] += run_length;
      }
    };
    for (const auto& entry : diagnosis.node_to_status.entries()) {
      const auto& entry_reasons = entry.status.reasons();
      if (run != nullptr && *run == entry_reasons) {
        run_length++;
        continue;
      }
      flush();
      run = &entry_reasons;
      run_length = 1;
    }
    flush();
    int absent = num_all_nodes - static_cast<int>(diagnosis.node_to_status.size());
    if (absent > 0) {
      for (const auto& reason : diagnosis.node_to_status.absent_nodes_status().reasons()) {
        reasons[reason] += absent;
      }
    }
    std::vector<std::string> parts;
    parts.reserve(reasons.size());
    for (const auto& [reason, count] : reasons)
      parts.push_back(std::to_string(count) + " " + reason);
    std::sort(parts.begin(), parts.end());
    if (!parts.empty()) {
      msg += " ";
      for (size_t i = 0; i < parts.size(); i++) msg += (i ? ", " : "") + parts[i];
      msg += ".";
    }
  }
  if (!diagnosis.post_filter_msg.empty()) msg += " " + diagnosis.post_filter_msg + ".";
  return msg;
}

int NumFeasibleNodesToFind(int percentage, int num_all_nodes) {
  if (num_all_nodes < kMinFeasibleNodesToFind) return num_all_nodes;
  if (percentage >= 100) return num_all_nodes;
  int adaptive = percentage;
  if (adaptive <= 0) {
    adaptive = kBasePercentageOfNodesToScore - num_all_nodes / 125;
    adaptive = std::max(adaptive, kMinFeasibleNodesPercentageToFind);
  }
  int64_t num = static_cast<int64_t>(num_all_nodes) * adaptive / 100;
  return static_cast<int>(std::max<int64_t>(num, kMinFeasibleNodesToFind));
}

void ApiPodStatusWriter::SetUnschedulable(const api::Pod& pod, const std::string& reason,
                                          const std::string& message,
                                          const std::string& nominated_node_name) {
  nlohmann::json status = {
      {"conditions", nlohmann::json::array({{{"type", "PodScheduled"},
                                             {"status", "False"},
                                             {"reason", reason},
                                             {"message", message},
                                             {"lastProbeTime", nullptr},
                                             {"lastTransitionTime", events::TimeNow()}}})}};
  if (!nominated_node_name.empty()) status["nominatedNodeName"] = nominated_node_name;
  nlohmann::json patch = {{"status", status}};
  client_->Patch(client::PodsResource().Path(pod.meta.namespace_, pod.meta.name, "status"), patch,
                 client::PatchType::kStrategicMerge);
}

Scheduler::Scheduler(const config::Configuration& config,
                     const framework::runtime::Registry& registry, SchedulerDeps deps,
                     SchedulerOptions options)
    : config_(config),
      deps_(std::move(deps)),
      options_(options),
      parallelizer_(config.parallelism),
      waiting_pods_(std::make_shared<framework::runtime::WaitingPods>()),
      rng_(options.seed ? *options.seed : std::random_device{}()) {
  queue::QueueingHintMap hints;
  for (const auto& profile : config_.profiles) {
    framework::runtime::FrameworkDeps fdeps;
    fdeps.snapshot = &snapshot_;
    fdeps.client = deps_.client.get();
    fdeps.informer_factory = deps_.informers;
    fdeps.recorder = deps_.recorder;
    fdeps.parallelizer = &parallelizer_;
    fdeps.waiting_pods = waiting_pods_;
    fdeps.observer = deps_.metrics;
    // The nominator lives in the queue, created below; frameworks reach it through the Handle
    // only during cycles, after construction.
    auto fwk = std::make_unique<framework::runtime::Framework>(registry, profile, fdeps);
    for (auto& [plugin, registration] : fwk->EnqueueExtensionEvents()) {
      hints[profile.scheduler_name].push_back(
          {plugin, registration.event, std::move(registration.hint)});
    }
    profiles_[profile.scheduler_name] = std::move(fwk);
  }
  auto* first = profiles_.begin()->second.get();
  queue::QueueOptions qopts;
  qopts.initial_backoff = std::chrono::seconds(config_.pod_initial_backoff_seconds);
  qopts.max_backoff = std::chrono::seconds(config_.pod_max_backoff_seconds);
  if (deps_.metrics) {
    qopts.on_incoming = [m = deps_.metrics](const char* queue, const std::string& event) {
      m->IncomingPod(queue, event);
    };
  }
  queue_ = std::make_unique<queue::SchedulingQueue>(
      qopts,
      [first](const framework::QueuedPodInfo& a, const framework::QueuedPodInfo& b) {
        return first->QueueSortLess(a, b);
      },
      [this](const api::Pod& pod) {
        auto* fwk = FrameworkFor(pod.spec.scheduler_name);
        return fwk ? fwk->RunPreEnqueuePlugins(pod) : Status::Success();
      },
      std::move(hints), std::make_shared<util::RealClock>());
  for (auto& [name, fwk] : profiles_) fwk->SetNominator(&queue_->nominator());
  binders_ = std::make_unique<util::TaskQueue>(std::max(1, options_.binding_workers),
                                               std::numeric_limits<size_t>::max());
  reporters_ = std::make_unique<util::TaskQueue>(2, 100000);
  if (deps_.metrics) RegisterScrapeHooks();
}

Scheduler::~Scheduler() { Stop(std::chrono::seconds(5)); }

bool Scheduler::Responsible(const api::Pod& pod) const {
  return profiles_.count(pod.spec.scheduler_name) > 0;
}

framework::runtime::Framework* Scheduler::FrameworkFor(const std::string& name) const {
  auto it = profiles_.find(name);
  return it == profiles_.end() ? nullptr : it->second.get();
}

// ---- Event handlers ----

void Scheduler::AddAllEventHandlers() {
  auto& pods = deps_.informers->Pods();
  informer::EventHandler<api::Pod> pod_handler;
  pod_handler.on_add = [this](const api::PodPtr& pod) { OnPodAdd(pod); };
  pod_handler.on_update = [this](const api::PodPtr& o, const api::PodPtr& n) { OnPodUpdate(o, n); };
  pod_handler.on_delete = [this](const api::PodPtr& pod) { OnPodDelete(pod); };
  pods.AddEventHandler(std::move(pod_handler));
  pods.SetDecodeErrorHandler([this](const nlohmann::json& object, const std::string& error) {
    OnMalformedPod(object, error);
  });

  auto& nodes = deps_.informers->Nodes();
  informer::EventHandler<api::Node> node_handler;
  node_handler.on_add = [this](const api::NodePtr& node) { OnNodeAdd(node); };
  node_handler.on_update = [this](const api::NodePtr& o, const api::NodePtr& n) {
    OnNodeUpdate(o, n);
  };
  node_handler.on_delete = [this](const api::NodePtr& node) { OnNodeDelete(node); };
  nodes.AddEventHandler(std::move(node_handler));
}

void Scheduler::OnPodAdd(const api::PodPtr& pod) {
  const auto start = Clock::now();
  if (Assigned(*pod)) {
    cache_.AddPod(pod);
    queue_->MoveAllToActiveOrBackoffQueue(
        Event(framework::EventResource::kPod, framework::kAdd, "AssignedPodAdd"),
        PodObjects(nullptr, pod));
    ObserveEvent(metrics::HandledEvent::kAssignedPodAdd, start);
    return;
  }
  if (Responsible(*pod) && !pod->IsTerminating()) {
    queue_->Add(pod);
    ObserveEvent(metrics::HandledEvent::kUnscheduledPodAdd, start);
  }
}

void Scheduler::OnPodUpdate(const api::PodPtr& old_pod, const api::PodPtr& new_pod) {
  const auto start = Clock::now();
  const bool was_assigned = Assigned(*old_pod);
  const bool is_assigned = Assigned(*new_pod);
  if (is_assigned) {
    if (!was_assigned) {
      // Bound (by us or anyone else): it leaves the queue and its resources count on the node.
      queue_->Delete(*old_pod);
      cache_.AddPod(new_pod);
      queue_->MoveAllToActiveOrBackoffQueue(
          Event(framework::EventResource::kPod, framework::kAdd, "AssignedPodAdd"),
          PodObjects(nullptr, new_pod));
      ObserveEvent(metrics::HandledEvent::kAssignedPodAdd, start);
      return;
    }
    cache_.UpdatePod(old_pod, new_pod);
    uint32_t actions = PodChangeActions(*old_pod, *new_pod);
    if (actions) {
      queue_->MoveAllToActiveOrBackoffQueue(
          Event(framework::EventResource::kPod, actions, "AssignedPodUpdate"),
          PodObjects(old_pod, new_pod));
    }
    ObserveEvent(metrics::HandledEvent::kAssignedPodUpdate, start);
    return;
  }
  if (!Responsible(*new_pod)) {
    if (Responsible(*old_pod)) queue_->Delete(*old_pod);
    return;
  }
  if (new_pod->IsTerminating()) {
    queue_->Delete(*new_pod);
    ObserveEvent(metrics::HandledEvent::kUnscheduledPodDelete, start);
    return;
  }
  queue_->Update(old_pod, new_pod);
  ObserveEvent(metrics::HandledEvent::kUnscheduledPodUpdate, start);
}

void Scheduler::OnPodDelete(const api::PodPtr& pod) {
  const auto start = Clock::now();
  if (Assigned(*pod)) {
    cache_.RemovePod(*pod);
    queue_->MoveAllToActiveOrBackoffQueue(
        Event(framework::EventResource::kPod, framework::kDelete, "AssignedPodDelete"),
        PodObjects(pod, nullptr));
    ObserveEvent(metrics::HandledEvent::kAssignedPodDelete, start);
    return;
  }
  if (!Responsible(*pod)) return;
  queue_->Delete(*pod);
  // A pod parked in Permit has been assumed; rejecting it makes its binding cycle undo that.
  if (auto waiting = waiting_pods_->Get(pod->meta.uid)) waiting->Reject("", "pod was deleted");
  ObserveEvent(metrics::HandledEvent::kUnscheduledPodDelete, start);
}

void Scheduler::OnNodeAdd(const api::NodePtr& node) {
  const auto start = Clock::now();
  cache_.AddNode(node);
  queue_->MoveAllToActiveOrBackoffQueue(
      Event(framework::EventResource::kNode, framework::kAdd, "NodeAdd"),
      NodeObjects(nullptr, node));
  ObserveEvent(metrics::HandledEvent::kNodeAdd, start);
}

void Scheduler::OnNodeUpdate(const api::NodePtr& old_node, const api::NodePtr& new_node) {
  const auto start = Clock::now();
  cache_.UpdateNode(old_node, new_node);
  uint32_t actions = NodeChangeActions(*old_node, *new_node);
  if (actions) {
    queue_->MoveAllToActiveOrBackoffQueue(
        Event(framework::EventResource::kNode, actions, "NodeUpdate"),
        NodeObjects(old_node, new_node));
  }
  ObserveEvent(metrics::HandledEvent::kNodeUpdate, start);
}

void Scheduler::OnNodeDelete(const api::NodePtr& node) {
  const auto start = Clock::now();
  cache_.RemoveNode(*node);
  ObserveEvent(metrics::HandledEvent::kNodeDelete, start);
}

// ---- Metrics ----

void Scheduler::ObserveEvent(metrics::HandledEvent event, Clock::time_point start) {
  if (deps_.metrics) {
    deps_.metrics->ObserveEventHandling(
        event, std::chrono::duration<double>(Clock::now() - start).count());
  }
}

void Scheduler::ObserveAttempt(const std::string& profile, metrics::AttemptResult result,
                               Clock::time_point cycle_start) {
  if (!deps_.metrics) return;
  const auto& m = deps_.metrics->ForProfile(profile);
  m.attempts[static_cast<int>(result)]->Increment();
  m.attempt_duration[static_cast<int>(result)]->Observe(
      std::chrono::duration<double>(Clock::now() - cycle_start).count());
}

void Scheduler::RegisterScrapeHooks() {
  deps_.metrics->AddScrapeHook([this] {
    auto counts = queue_->PendingPods();
    deps_.metrics->SetPendingPods(
        {counts.active, counts.backoff, counts.unschedulable, counts.gated});
    std::map<std::pair<std::string, std::string>, size_t> by_plugin;
    for (const auto& pinfo : queue_->UnschedulablePods()) {
      for (const auto& plugin : pinfo->unschedulable_plugins) {
        by_plugin[{plugin, pinfo->pod().spec.scheduler_name}]++;
      }
    }
    deps_.metrics->SetUnschedulablePods(by_plugin);
    auto sizes = cache_.Size();
    deps_.metrics->SetCacheSize(sizes.nodes, sizes.pods, sizes.assumed_pods);
    if (deps_.informers) {
      const auto& pods = deps_.informers->Pods().reflector();
      const auto& nodes = deps_.informers->Nodes().reflector();
      deps_.metrics->SetReflectorCounts("pods", pods.lists(), pods.watches());
      deps_.metrics->SetReflectorCounts("nodes", nodes.lists(), nodes.watches());
    }
  });
}

void Scheduler::LogDecision(const framework::runtime::Framework& fwk, const api::Pod& pod,
                            const ScheduleResult& result,
                            const std::vector<framework::runtime::NodePluginScores>& scores) {
  std::vector<const framework::runtime::NodePluginScores*> top;
  const framework::runtime::NodePluginScores* chosen = nullptr;
  for (const auto& s : scores) {
    if (s.name == result.host) {
      chosen = &s;
    } else {
      top.push_back(&s);
    }
  }
  const auto n = static_cast<std::ptrdiff_t>(std::min<size_t>(3, top.size()));
  std::partial_sort(top.begin(), top.begin() + n, top.end(),
                    [](auto* a, auto* b) { return a->total > b->total; });
  std::string alternatives;
  for (std::ptrdiff_t i = 0; i < n; i++) {
    if (i) alternatives += ",";
    alternatives.append(top[i]->name).append("=").append(std::to_string(top[i]->total));
  }
  log::Verbose(2, "scheduling decision",
               {{"pod", pod.Key()},
                {"profile", fwk.ProfileName()},
                {"node", result.host},
                {"score", chosen ? std::to_string(chosen->total) : "n/a"},
                {"feasible", std::to_string(result.feasible_nodes)},
                {"evaluated", std::to_string(result.evaluated_nodes)},
                {"alternatives", alternatives}});
}

void Scheduler::OnMalformedPod(const nlohmann::json& object, const std::string& error) {
  auto meta = object.find("metadata");
  auto spec = object.find("spec");
  if (meta == object.end() || !meta->is_object() || spec == object.end() || !spec->is_object()) {
    return;
  }
  auto scheduler_name = spec->find("schedulerName");
  auto node_name = spec->find("nodeName");
  if (scheduler_name == spec->end() || !scheduler_name->is_string() ||
      !profiles_.count(scheduler_name->get<std::string>())) {
    return;
  }
  if (node_name != spec->end() && node_name->is_string() &&
      !node_name->get<std::string>().empty()) {
    return;
  }
  auto pod = std::make_shared<api::Pod>();
  pod->meta.name = meta->value("name", "");
  pod->meta.namespace_ = meta->value("namespace", "");
  pod->meta.uid = meta->value("uid", "");
  pod->meta.resource_version = meta->value("resourceVersion", "");
  if (pod->meta.name.empty()) return;
  stats_.malformed_pods++;
  log::Error("pod cannot be scheduled: its object is malformed",
             {{"pod", pod->meta.namespace_ + "/" + pod->meta.name}, {"err", error}});
  ReportUnschedulable(pod, "SchedulerError", "pod object could not be decoded: " + error, "");
}

// ---- Scheduling cycle ----

void Scheduler::Run() {
  if (running_.exchange(true)) return;
  queue_->Run();
  scheduling_thread_ = std::thread([this] {
    while (running_ && ScheduleOne()) {
    }
  });
}

void Scheduler::Stop(std::chrono::milliseconds grace) {
  bool was_running = running_.exchange(false);
  if (queue_) queue_->Close();
  if (scheduling_thread_.joinable()) scheduling_thread_.join();
  if (!was_running && !binders_) return;
  auto deadline = Clock::now() + grace;
  while (in_flight_bindings_.load() > 0 && Clock::now() < deadline) {
    // Permit waits would hold shutdown for up to 15 minutes: reject them so their cycles unwind.
    waiting_pods_->Iterate(
        [](framework::WaitingPod& wp) { wp.Reject("", "scheduler is stopping"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (binders_ && in_flight_bindings_.load() == 0) binders_->Shutdown();
  if (reporters_) reporters_->Drain();
}

api::PodPtr Scheduler::CurrentPod(const api::Pod& pod) const {
  if (!deps_.informers) return std::make_shared<const api::Pod>(pod);
  return deps_.informers->Pods().store().Get(pod.Key());
}

bool Scheduler::ScheduleOne() {
  framework::QueuedPodInfoPtr pinfo = queue_->Pop();
  if (!pinfo) return false;
  const api::PodPtr pod = pinfo->pod_info->pod;
  auto* fwk = FrameworkFor(pod->spec.scheduler_name);
  if (!fwk || pod->IsTerminating() || cache_.IsAssumedPod(*pod)) {
    queue_->Done(pod->meta.uid);
    return true;
  }
  const auto cycle_start = Clock::now();
  stats_.attempts++;
  cycles_++;
  auto state = std::make_shared<framework::CycleState>();
  state->record_plugin_metrics =
      options_.plugin_metrics_sample_percent > 0 &&
      static_cast<int>(rng_() % 100) < options_.plugin_metrics_sample_percent;

  ScheduleResult result;
  Diagnosis diagnosis;
  Status status = SchedulePod(*fwk, *state, *pod, &result, &diagnosis);
  if (!status.IsSuccess()) {
    std::string nominated;
    if (status.IsRejected() && fwk->HasPostFilterPlugins()) {
      framework::PostFilterResult post;
      Status post_status = fwk->RunPostFilterPlugins(*state, *pod, diagnosis.node_to_status, &post);
      if (!post_status.IsSuccess() && !post_status.reasons().empty()) {
        diagnosis.post_filter_msg = post_status.Message();
      }
      nominated = post.nominated_node_name;
    }
    HandleSchedulingFailure(pinfo, status, status.IsRejected() ? &diagnosis : nullptr, nominated,
                            cycle_start);
    return true;
  }

  // Assume: the cache counts the pod on its node from now on, so the next cycle sees it.
  auto assumed = std::make_shared<api::Pod>(*pod);
  assumed->spec.node_name = result.host;
  assumed->status.nominated_node_name.clear();
  api::PodPtr assumed_ptr = assumed;
  Status assume = cache_.AssumePod(std::make_shared<framework::PodInfo>(assumed_ptr));
  if (!assume.IsSuccess()) {
    HandleSchedulingFailure(pinfo, assume, nullptr, "", cycle_start);
    return true;
  }
  Status reserve = fwk->RunReservePluginsReserve(*state, *assumed, result.host);
  if (!reserve.IsSuccess()) {
    fwk->RunReservePluginsUnreserve(*state, *assumed, result.host);
    cache_.ForgetPod(*assumed);
    HandleSchedulingFailure(pinfo, reserve, nullptr, "", cycle_start);
    return true;
  }
  Status permit = fwk->RunPermitPlugins(*state, *assumed, result.host);
  if (!permit.IsSuccess() && !permit.IsWait()) {
    fwk->RunReservePluginsUnreserve(*state, *assumed, result.host);
    cache_.ForgetPod(*assumed);
    if (permit.IsRejected()) pinfo->unschedulable_plugins = {permit.plugin()};
    HandleSchedulingFailure(pinfo, permit, nullptr, "", cycle_start);
    return true;
  }
  queue_->nominator().DeleteNominatedPodIfExists(*pod);

  in_flight_bindings_++;
  binders_->Post([this, fwk, state, pinfo, assumed_ptr, result, cycle_start] {
    BindingCycle(fwk, state, pinfo, assumed_ptr, result, cycle_start);
    in_flight_bindings_--;
  });
  return true;
}

Status Scheduler::SchedulePod(framework::runtime::Framework& fwk, framework::CycleState& state,
                              const api::Pod& pod, ScheduleResult* result, Diagnosis* diagnosis) {
  const auto algorithm_start = Clock::now();
  Status snap = cache_.UpdateSnapshot(snapshot_);
  if (!snap.IsSuccess()) return snap;
  // Every node rejects the pod (the default status of nodes never filtered), as after a PreFilter
  // rejection. The missing plugins are its rejectors: no cluster event can help, so none requeues
  // it before the periodic flush of the unschedulable pool.
  if (auto unsupported = FindUnsupportedField(pod)) {
    diagnosis->pre_filter_msg = unsupported->message;
    diagnosis->unschedulable_plugins.insert(unsupported->plugins.begin(),
                                            unsupported->plugins.end());
    return Status(Code::kUnschedulableAndUnresolvable,
                  FitErrorMessage(static_cast<int>(snapshot_.NumNodes()), *diagnosis));
  }
  if (snapshot_.NumNodes() == 0) {
    diagnosis->pre_filter_msg = "";
    return Status(Code::kUnschedulable, "no nodes available to schedule pods");
  }
  std::vector<const framework::NodeInfo*>& feasible = feasible_nodes_;
  Status s = FindNodesThatFitPod(fwk, state, pod, diagnosis, &feasible);
  if (!s.IsSuccess()) return s;
  const int evaluated = static_cast<int>(feasible.size() + diagnosis->node_to_status.size());
  if (feasible.empty()) {
    return Status(Code::kUnschedulable,
                  FitErrorMessage(static_cast<int>(snapshot_.NumNodes()), *diagnosis));
  }
  result->evaluated_nodes = evaluated;
  result->feasible_nodes = static_cast<int>(feasible.size());
  if (feasible.size() == 1) {
    result->host = feasible.front()->name();
    if (deps_.metrics) {
      deps_.metrics->ObserveSchedulingAlgorithm(
          std::chrono::duration<double>(Clock::now() - algorithm_start).count());
    }
    if (log::V(2)) LogDecision(fwk, pod, *result, {});
    return {};
  }
  std::vector<framework::runtime::NodePluginScores>& scores = node_scores_;
  if (fwk.HasScorePlugins()) {
    Status pre = fwk.RunPreScorePlugins(state, pod, feasible);
    if (!pre.IsSuccess()) return pre;
    Status sc = fwk.RunScorePlugins(state, pod, feasible, &scores);
    if (!sc.IsSuccess()) return sc;
  } else {
    scores.clear();
    for (const auto& n : feasible) scores.push_back({n->name(), {}, 1});
  }
  result->host = SelectHost(scores);
  if (deps_.metrics) {
    deps_.metrics->ObserveSchedulingAlgorithm(
        std::chrono::duration<double>(Clock::now() - algorithm_start).count());
  }
  if (log::V(2)) LogDecision(fwk, pod, *result, scores);
  return {};
}

Status Scheduler::FindNodesThatFitPod(framework::runtime::Framework& fwk,
                                      framework::CycleState& state, const api::Pod& pod,
                                      Diagnosis* diagnosis,
                                      std::vector<const framework::NodeInfo*>* feasible) {
  feasible->clear();
  const auto& all_nodes = snapshot_.List();
  framework::PreFilterResult pre_result;
  std::vector<std::string> plugins_with_nodes;
  Status s = fwk.RunPreFilterPlugins(state, pod, all_nodes, &pre_result, &plugins_with_nodes);
  if (!s.IsSuccess()) {
    if (!s.IsRejected()) return s;
    // Every node gets the PreFilter status; the message says it once.
    diagnosis->pre_filter_msg = s.Message();
    diagnosis->node_to_status.set_absent_nodes_status(s);
    if (!s.plugin().empty()) {
      (s.code() == Code::kPending ? diagnosis->pending_plugins : diagnosis->unschedulable_plugins)
          .insert(s.plugin());
    }
    return {};
  }

  // A nominated node (from an earlier preemption) is tried first, alone.
  if (!pod.status.nominated_node_name.empty()) {
    if (auto nominated = snapshot_.Get(pod.status.nominated_node_name);
        nominated && nominated->node()) {
      Diagnosis scratch;
      FindNodesThatPassFilters(fwk, state, pod, &scratch, {nominated}, feasible);
      if (!feasible->empty()) return {};
    }
  }

  // The snapshot's list itself when PreFilter kept every node: copying it would touch every
  // node's reference count on every cycle.
  std::vector<framework::NodeInfoPtr> kept;
  const std::vector<framework::NodeInfoPtr>* nodes = &all_nodes;
  if (!pre_result.AllNodes()) {
    nodes = &kept;
    for (const auto& name : *pre_result.node_names) {
      if (auto n = snapshot_.Get(name); n && n->node()) kept.push_back(n);
    }
    // Nodes PreFilter ruled out count as unresolvable in the message, as upstream.
    std::string plugins;
    for (const auto& name : plugins_with_nodes) plugins += (plugins.empty() ? "" : " ") + name;
    diagnosis->node_to_status.set_absent_nodes_status(
        Status::Unresolvable("node(s) didn't satisfy plugin(s) [" + plugins + "]"));
  }
  FindNodesThatPassFilters(fwk, state, pod, diagnosis, *nodes, feasible);
  return {};
}

void Scheduler::FindNodesThatPassFilters(framework::runtime::Framework& fwk,
                                         const framework::CycleState& state, const api::Pod& pod,
                                         Diagnosis* diagnosis,
                                         const std::vector<framework::NodeInfoPtr>& nodes,
                                         std::vector<const framework::NodeInfo*>* feasible) {
  feasible->clear();
  const int num_all = static_cast<int>(nodes.size());
  if (num_all == 0) return;
  const auto& profile = fwk.profile();
  int percentage = profile.percentage_of_nodes_to_score ? *profile.percentage_of_nodes_to_score
                                                        : config_.percentage_of_nodes_to_score;
  const int to_find = NumFeasibleNodesToFind(percentage, num_all);
  // The index was advanced over the snapshot's full list; `nodes` may be shorter (a nominated
  // node, or the nodes PreFilter kept).
  const int start = next_start_node_index_ % num_all;
  // Node (start + i); start and i are below num_all, so one subtraction wraps it.
  auto node_at = [&](int i) {
    const int index = start + i;
    return nodes[index < num_all ? index : index - num_all].get();
  };
  if (!fwk.HasFilterPlugins()) {
    for (int i = 0; i < to_find; i++) feasible->push_back(node_at(i));
    next_start_node_index_ = (start + to_find) % num_all;
    return;
  }
  const auto filter_start = Clock::now();
  // Nodes are filtered in batches and the shared counters move once per batch: updating them per
  // node from every worker bounced their cache line between cores on each Filter call, which
  // cost more than the plugins did.
  const int batches = (num_all + kFilterBatch - 1) / kFilterBatch;
  std::atomic<int> found{0};
  std::atomic<bool> stop{false};
  // One past the last node any batch reached: the passes below stop there instead of walking
  // every node of a large cluster when only the first few hundred were filtered.
  std::atomic<int> reached{0};
  // outcomes[i] is node (start + i)'s. Collected in index order afterwards, so the feasible list
  // (and with a seeded tie-break, the choice) does not depend on worker timing.
  auto& outcomes = filter_outcomes_;
  auto& statuses = filter_statuses_;
  outcomes.assign(num_all, FilterOutcome::kNotRun);
  if (statuses.size() < static_cast<size_t>(num_all)) statuses.resize(num_all);
  auto prefetch_batch = [&](int batch, bool node_objects) {
    if (batch >= batches) return;
    const int end = std::min(num_all, (batch + 1) * kFilterBatch);
    for (int i = batch * kFilterBatch; i < end; i++) {
      if (node_objects) {
        node_at(i)->PrefetchNode();
      } else {
        node_at(i)->Prefetch();
      }
    }
  };
  parallelizer_.Until(
      batches,
      [&](int batch) {
        const int begin = batch * kFilterBatch;
        const int end = std::min(num_all, begin + kFilterBatch);
        // Memory is asked for ahead of use: the NodeInfos two batches on and the Node objects of
        // the next batch (reading a NodeInfo's node pointer needs the NodeInfo). A thread mostly
        // takes batches in a row, so a batch's nodes are on their way by the time it is
        // filtered; the first batch of a thread's stretch asks for its own and the next one's.
        // Waiting for each batch's nodes as it started was a tenth of the cycle.
        thread_local int expected_batch = -1;
        if (batch != expected_batch) {
          prefetch_batch(batch, false);
          prefetch_batch(batch + 1, false);
          prefetch_batch(batch, true);
        }
        prefetch_batch(batch + 2, false);
        prefetch_batch(batch + 1, true);
        expected_batch = batch + 1;
        for (int r = reached.load(std::memory_order_relaxed);
             r < end && !reached.compare_exchange_weak(r, end, std::memory_order_relaxed);) {
        }
        int passed = 0;
        // Each plugin filters a run of nodes at a time. A run is no longer than the feasible
        // nodes still wanted, so that, as node by node, no node is filtered beyond the last one
        // needed (bar what other batches find meanwhile).
        std::array<const framework::NodeInfo*, kFilterBatch> run_nodes;
        for (int i = begin; i < end;) {
          const int wanted = to_find - found.load(std::memory_order_relaxed) - passed;
          if (wanted <= 0) break;
          const int run_end = std::min(end, i + wanted);
          for (int j = i; j < run_end; j++) {
            run_nodes[j - i] = node_at(j);
            // Entries are reused across cycles; the runner expects them successful.
            if (!statuses[j].IsSuccess()) statuses[j] = Status();
          }
          const size_t count = static_cast<size_t>(run_end - i);
          fwk.RunFilterPluginsOnNodes(
              state, pod, std::span<const framework::NodeInfo* const>(run_nodes.data(), count), i,
              std::span<Status>(statuses.data() + i, count));
          for (int j = i; j < run_end; j++) {
            if (statuses[j].IsSuccess()) {
              outcomes[j] = FilterOutcome::kPassed;
              passed++;
            } else {
              outcomes[j] = FilterOutcome::kRejected;
            }
          }
          i = run_end;
        }
        if (passed == 0) return;
        // Passes beyond to_find (other batches got there first) are dropped, from the end of
        // this batch; they are not counted as processed, so the next cycle starts at them.
        const int before = found.fetch_add(passed);
        if (before + passed < to_find) return;
        stop = true;
        int excess = before + passed - to_find;
        for (int i = end - 1; i >= begin && excess > 0; i--) {
          if (outcomes[i] != FilterOutcome::kPassed) continue;
          outcomes[i] = FilterOutcome::kOverflow;
          excess--;
        }
      },
      &stop);
  int processed = 0;
  int overflow = 0;
  const int limit = reached.load();
  for (int i = 0; i < limit; i++) {
    switch (outcomes[i]) {
      case FilterOutcome::kPassed:
        feasible->push_back(node_at(i));
        processed++;
        break;
      case FilterOutcome::kRejected:
        processed++;
        break;
      case FilterOutcome::kOverflow:
        overflow++;
        break;
      case FilterOutcome::kNotRun:
        break;
    }
  }
  next_start_node_index_ = (start + processed) % num_all;
  std::map<std::string, int64_t> rejected_by;
  // Consecutive rejections by one plugin (interned names compare by address) are tallied once.
  const std::string* last_plugin = nullptr;
  int64_t last_count = 0;
  Code last_code = Code::kSuccess;
  auto tally = [&] {
    if (last_plugin == nullptr || last_plugin->empty()) return;
    rejected_by[*last_plugin] += last_count;
    if (last_code == Code::kPending) {
      diagnosis->pending_plugins.insert(*last_plugin);
    } else if (last_code != Code::kError) {
      diagnosis->unschedulable_plugins.insert(*last_plugin);
    }
  };
  // Only rejected nodes get an entry; most cycles have none, and reserving room for every
  // processed node allocated (and freed) tens of kilobytes a cycle.
  diagnosis->node_to_status.Reserve(static_cast<size_t>(processed) - feasible->size());
  for (int i = 0; i < limit; i++) {
    if (outcomes[i] != FilterOutcome::kRejected) continue;
    Status& s = statuses[i];
    const Code code = s.IsRejected() ? s.code() : Code::kError;
    if (&s.plugin() != last_plugin || code != last_code) {
      tally();
      last_plugin = &s.plugin();
      last_code = code;
      last_count = 0;
    }
    last_count++;
    if (!s.IsRejected()) continue;  // Errors are reported through the cycle's error path.
    diagnosis->node_to_status.Set(node_at(i)->name(), std::move(s));
  }
  tally();
  fwk.RecordFilterPhase(
      state, feasible->empty() ? Status(Code::kUnschedulable, "no node passed Filter") : Status(),
      std::chrono::duration<double>(Clock::now() - filter_start).count(), processed + overflow,
      rejected_by);
}

std::string Scheduler::SelectHost(const std::vector<framework::runtime::NodePluginScores>& scores) {
  // Each node with the top score is chosen with equal probability, as upstream's reservoir
  // sampling does, but with one random number per cycle instead of one per tied node: with
  // hundreds of equal scores, the generator was a visible share of the cycle.
  int64_t max_score = scores.front().total;
  uint64_t ties = 0;
  for (const auto& s : scores) {
    if (s.total > max_score) {
      max_score = s.total;
      ties = 1;
    } else if (s.total == max_score) {
      ties++;
    }
  }
  uint64_t pick = ties > 1 ? rng_() % ties : 0;
  for (const auto& s : scores) {
    if (s.total != max_score) continue;
    if (pick == 0) return std::string(s.name);
    pick--;
  }
  return std::string(scores.front().name);  // Unreachable: some node has the top score.
}

// ---- Binding cycle ----

void Scheduler::BindingCycle(framework::runtime::Framework* fwk,
                             std::shared_ptr<framework::CycleState> state,
                             framework::QueuedPodInfoPtr pinfo, api::PodPtr assumed,
                             const ScheduleResult& result, Clock::time_point cycle_start) {
  const std::string& host = result.host;
  auto fail = [&](const Status& status) {
    fwk->RunReservePluginsUnreserve(*state, *assumed, host);
    cache_.ForgetPod(*assumed);
    // The assumed pod's room is free again: pods that did not fit may fit now.
    queue_->MoveAllToActiveOrBackoffQueue(
        Event(framework::EventResource::kPod, framework::kDelete, "AssignedPodDelete"),
        PodObjects(assumed, nullptr));
    if (status.IsRejected() && !status.plugin().empty()) {
      pinfo->unschedulable_plugins = {status.plugin()};
    }
    stats_.bind_failures++;
    HandleSchedulingFailure(pinfo, status, nullptr, "", cycle_start);
  };

  Status s = fwk->WaitOnPermit(*assumed);
  if (!s.IsSuccess()) return fail(s);
  s = fwk->RunPreBindPlugins(*state, *assumed, host);
  if (!s.IsSuccess()) return fail(s);
  s = fwk->RunBindPlugins(*state, *assumed, host);
  if (s.IsSkip()) s = Status::Error("no bind plugin bound the pod");
  if (!s.IsSuccess()) return fail(s);
  cache_.FinishBinding(*assumed);
  stats_.scheduled++;
  ObserveAttempt(fwk->ProfileName(), metrics::AttemptResult::kScheduled, cycle_start);
  if (deps_.metrics) {
    deps_.metrics->ObservePodScheduled(
        pinfo->attempts,
        std::chrono::duration<double>(Clock::now() - (pinfo->initial_attempt_set
                                                          ? pinfo->initial_attempt_timestamp
                                                          : cycle_start))
            .count());
  }
  if (log::V(2)) {
    log::Verbose(
        2, "pod bound",
        {{"pod", assumed->Key()},
         {"node", host},
         {"profile", fwk->ProfileName()},
         {"attempts", std::to_string(pinfo->attempts)},
         {"latency_ms",
          std::to_string(
              std::chrono::duration<double, std::milli>(Clock::now() - cycle_start).count())}});
  }
  if (deps_.recorder) {
    deps_.recorder->Eventf(*assumed, "Normal", "Scheduled", "Binding",
                           "Successfully assigned " + assumed->Key() + " to " + host);
  }
  fwk->RunPostBindPlugins(*state, *assumed, host);
  queue_->Done(assumed->meta.uid);
}

void Scheduler::HandleSchedulingFailure(const framework::QueuedPodInfoPtr& pinfo,
                                        const Status& status, const Diagnosis* diagnosis,
                                        const std::string& nominated_node,
                                        Clock::time_point cycle_start) {
  const api::PodPtr pod = pinfo->pod_info->pod;
  std::string reason = "Unschedulable";
  bool had_error = false;
  ObserveAttempt(
      pod->spec.scheduler_name,
      status.IsRejected() ? metrics::AttemptResult::kUnschedulable : metrics::AttemptResult::kError,
      cycle_start);
  if (status.IsRejected()) {
    stats_.unschedulable++;
    if (diagnosis) {
      pinfo->unschedulable_plugins = diagnosis->unschedulable_plugins;
      pinfo->pending_plugins = diagnosis->pending_plugins;
    }
  } else {
    stats_.errors++;
    reason = "SchedulerError";
    had_error = true;
    log::Error("error while scheduling pod", {{"pod", pod->Key()},
                                              {"profile", pod->spec.scheduler_name},
                                              {"plugin", status.plugin()},
                                              {"err", status.Message()}});
  }
  const std::string message = status.Message();

  // Only a pod that still exists and is still unbound goes back to the queue: a pod deleted, or
  // bound by someone else (a 404 or 409 on bind), is not retried forever.
  api::PodPtr current = CurrentPod(*pod);
  if (!current) {
    log::Verbose(2, "pod no longer exists; not requeued", {{"pod", pod->Key()}});
    queue_->Done(pod->meta.uid);
    return;
  }
  if (Assigned(*current)) {
    log::Verbose(2, "pod is already bound; not requeued",
                 {{"pod", pod->Key()}, {"node", current->spec.node_name}});
    queue_->Done(pod->meta.uid);
    return;
  }
  if (current != pod && current->meta.uid == pod->meta.uid) {
    pinfo->pod_info = std::make_shared<framework::PodInfo>(current);
  }
  if (!nominated_node.empty()) {
    queue_->nominator().AddNominatedPod(pinfo->pod_info, nominated_node);
  }
  // Also ends the pod's in-flight tracking (the queue calls Done itself).
  queue_->AddUnschedulableIfNotPresent(pinfo, had_error);
  log::Verbose(2, "pod is unschedulable",
               {{"pod", pod->Key()}, {"profile", pod->spec.scheduler_name}, {"reason", message}});
  ReportUnschedulable(current, reason, message, nominated_node);
}

void Scheduler::ReportUnschedulable(const api::PodPtr& pod, const std::string& reason,
                                    const std::string& message, const std::string& nominated_node) {
  reporters_->Post([this, pod, reason, message, nominated_node] {
    if (deps_.recorder) {
      deps_.recorder->Eventf(*pod, "Warning", "FailedScheduling", "Scheduling", message);
    }
    if (deps_.status_writer && !HasCondition(*pod, reason, message)) {
      try {
        deps_.status_writer->SetUnschedulable(*pod, reason, message, nominated_node);
      } catch (const std::exception& e) {
        log::Warn("could not update the PodScheduled condition",
                  {{"pod", pod->Key()}, {"err", e.what()}});
      }
    }
  });
}

}  // namespace berth::scheduler
