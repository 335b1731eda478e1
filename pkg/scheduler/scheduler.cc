#include "pkg/scheduler/scheduler.h"

#include <algorithm>
#include <limits>
#include <map>

#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/util/clock.h"

namespace berth::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
using framework::Status;

}  // namespace

Scheduler::Scheduler(const config::Configuration& config,
                     const framework::runtime::Registry& registry, SchedulerDeps deps,
                     SchedulerOptions options)
    : config_(config),
      deps_(std::move(deps)),
      options_(options),
      owned_informers_(
          deps_.informers ? nullptr : std::make_unique<informer::SharedInformerFactory>(nullptr)),
      informers_(deps_.informers ? deps_.informers : owned_informers_.get()),
      parallelizer_(config.parallelism),
      waiting_pods_(std::make_shared<framework::runtime::WaitingPods>()),
      rng_(options.seed ? *options.seed : std::random_device{}()),
      attempts_(options.attempts) {
  queue::QueueingHintMap hints;
  for (const auto& profile : config_.profiles) {
    framework::runtime::FrameworkDeps fdeps;
    fdeps.snapshot = &snapshot_;
    fdeps.client = deps_.client.get();
    fdeps.informer_factory = informers_;
    fdeps.recorder = deps_.recorder;
    fdeps.parallelizer = &parallelizer_;
    fdeps.nominator = &nominator_;
    fdeps.waiting_pods = waiting_pods_;
    fdeps.observer = deps_.metrics;
    fdeps.preemption_metrics = deps_.metrics;
    fdeps.metrics_registry = deps_.metrics ? &deps_.metrics->registry() : nullptr;
    fdeps.extenders = deps_.extenders;
    // queue_ is made below, after every framework; plugins activate pods only once it exists.
    fdeps.activate = [this](const std::vector<std::string>& uids) { queue_->Activate(uids); };
    auto fwk = std::make_unique<framework::runtime::Framework>(registry, profile, fdeps);
    for (auto& [plugin, registration] : fwk->EnqueueExtensionEvents()) {
      const framework::EventResource resource = registration.event.resource;
      if (!IsPodOrNode(resource) && !CanWatch(resource)) {
        throw framework::runtime::FrameworkError(
            "profile " + profile.scheduler_name + ": plugin " + plugin +
            " registers cluster events for resource \"" + std::string(resource.name()) +
            "\", which berth-scheduler cannot watch");
      }
      hints[profile.scheduler_name].push_back(
          {plugin, registration.event, std::move(registration.hint)});
    }
    if (!deps_.extenders.empty()) {
      hints[profile.scheduler_name].push_back(
          {std::string(kExtenderRejector), framework::ClusterEvent{}, nullptr});
    }
    profiles_[profile.scheduler_name] = std::move(fwk);
  }
  auto* first = profiles_.begin()->second.get();
  queue::QueueOptions qopts;
  qopts.initial_backoff = std::chrono::seconds(config_.pod_initial_backoff_seconds);
  qopts.max_backoff = std::chrono::seconds(config_.pod_max_backoff_seconds);
  qopts.nominator = &nominator_;
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
  reporters_ = std::make_unique<util::TaskQueue>(2, 100000);
  binders_ = std::make_unique<util::TaskQueue>(std::max(1, options_.binding_workers),
                                               std::numeric_limits<size_t>::max());
  pre_binders_ = std::make_unique<util::TaskQueue>(std::max(1, options_.pre_bind_workers),
                                                   std::numeric_limits<size_t>::max());
  dry_runs_ = std::make_unique<DryRunner>(
      DryRunnerDeps{cache_, snapshot_, gate_, attempts_, parallelizer_, profiles_, deps_.informers},
      options_.dry_run_budget, options_.dry_run_clock);
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
      deps_.informers->ForEach([this](informer::InformerBase& informer) {
        const auto& reflector = informer.reflector();
        deps_.metrics->SetReflectorCounts(informer.ResourceName(), reflector.lists(),
                                          reflector.watches());
      });
    }
  });
}

void Scheduler::Run() {
  if (running_.exchange(true)) return;
  queue_->Run();
  scheduling_thread_ = std::thread([this] {
    while (running_ && ScheduleOne()) {
    }
  });
}

void Scheduler::Stop(std::chrono::milliseconds grace) {
  running_ = false;
  // Plugins waiting in binding cycles (PreBind) give up rather than hold shutdown.
  for (auto& [name, fwk] : profiles_) fwk->Stop();
  if (queue_) queue_->Close();
  if (scheduling_thread_.joinable()) scheduling_thread_.join();
  // Order matters: a binding cycle that fails reports through reporters_ and requeues through
  // queue_, so every binding cycle ends before reporters_ stops, and both before either is
  // destroyed (members are declared so that binders_ goes first).
  const auto deadline = Clock::now() + grace;
  while (in_flight_bindings_.load() > 0 && Clock::now() < deadline) {
    // Permit waits would hold shutdown for up to 15 minutes: reject them so their cycles unwind.
    waiting_pods_->Iterate(
        [](framework::WaitingPod& wp) { wp.Reject("", "scheduler is stopping"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (in_flight_bindings_.load() > 0) {
    log::Warn("binding cycles still running after the shutdown grace period; waiting for them",
              {{"inFlight", std::to_string(in_flight_bindings_.load())}});
  }
  // A binding sent with no thread waiting hands its pod to the binders (or finishes it) when
  // answered, at the latest by the request timeout: the binders take work until then.
  while (unanswered_bindings_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Runs what is queued and joins: a cycle blocked on the network ends with its request deadline.
  if (binders_) binders_->Shutdown();
  if (pre_binders_) pre_binders_->Shutdown();
  if (reporters_) reporters_->Shutdown();
}

}  // namespace berth::scheduler
