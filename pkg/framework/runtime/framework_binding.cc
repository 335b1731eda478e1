#include <algorithm>
#include <chrono>
#include <string>

#include "pkg/framework/runtime/framework.h"
#include "pkg/framework/runtime/run_helpers.h"

// The binding phase: Reserve and Unreserve, Permit, the wait it may start and the pods waiting
// there, PreBind, Bind and PostBind.

namespace berth::framework::runtime {

using internal::AsError;
using internal::Clock;
using internal::PluginStart;

Status Framework::RunReservePluginsReserve(CycleState& state, const api::Pod& pod,
                                           const std::string& node) {
  auto start = Clock::now();
  Status out;
  for (const auto& [name, plugin, metrics] : reserve_) {
    auto plugin_start = PluginStart(state);
    Status s = plugin->Reserve(state, pod, node);
    ObservePlugin(state, metrics, s, plugin_start);
    if (s.IsSuccess()) continue;
    out =
        s.IsRejected() ? std::move(s.WithPlugin(name)) : AsError("running Reserve plugin", name, s);
    break;
  }
  Observe(Point::kReserve, out, start);
  return out;
}

void Framework::RunReservePluginsUnreserve(CycleState& state, const api::Pod& pod,
                                           const std::string& node) {
  auto start = Clock::now();
  // Reverse order: undo in the opposite order of Reserve.
  for (auto it = reserve_.rbegin(); it != reserve_.rend(); ++it) {
    auto plugin_start = PluginStart(state);
    it->plugin->Unreserve(state, pod, node);
    ObservePlugin(state, unreserve_metrics_[static_cast<size_t>(reserve_.rend() - it - 1)], {},
                  plugin_start);
  }
  Observe(Point::kUnreserve, {}, start);
}

Status Framework::RunPermitPlugins(CycleState& state, const api::Pod& pod,
                                   const std::string& node) {
  auto start = Clock::now();
  std::map<std::string, WaitingPodImpl::Clock::time_point> deadlines;
  Status out;
  for (const auto& [name, plugin, metrics] : permit_) {
    auto plugin_start = PluginStart(state);
    std::chrono::milliseconds timeout{0};
    Status s = plugin->Permit(state, pod, node, &timeout);
    ObservePlugin(state, metrics, s, plugin_start);
    if (s.IsSuccess()) continue;
    if (s.IsRejected()) {
      out = std::move(s.WithPlugin(name));
      Observe(Point::kPermit, out, start);
      return out;
    }
    if (s.IsWait()) {
      timeout = std::min<std::chrono::milliseconds>(timeout, kMaxPermitTimeout);
      deadlines[name] = WaitingPodImpl::Clock::now() + timeout;
      continue;
    }
    out = AsError("running Permit plugin", name, s);
    Observe(Point::kPermit, out, start);
    return out;
  }
  if (!deadlines.empty()) {
    auto pod_ptr = std::make_shared<const api::Pod>(pod);
    deps_.waiting_pods->Add(pod.meta.uid,
                            std::make_shared<WaitingPodImpl>(pod_ptr, std::move(deadlines)));
    out = Status(Code::kWait, "one or more plugins asked to wait and no plugin rejected pod \"" +
                                  pod.meta.name + "\"");
  }
  Observe(Point::kPermit, out, start);
  return out;
}

void Framework::WhenPermitDecided(const api::Pod& pod, std::function<void()> then) {
  auto waiting = deps_.waiting_pods->Get(pod.meta.uid);
  if (!waiting) return then();
  waiting->OnDecided(std::move(then));
}

Status Framework::WaitOnPermit(const api::Pod& pod) {
  auto waiting = deps_.waiting_pods->Get(pod.meta.uid);
  if (!waiting) return {};
  Status s = waiting->Wait();
  deps_.waiting_pods->Remove(pod.meta.uid);
  if (deps_.observer) {
    deps_.observer->ObservePermitWait(s,
                                      std::chrono::duration<double>(waiting->WaitedFor()).count());
  }
  return s;
}

bool Framework::PreBindHasWork(CycleState& state, const api::Pod& pod, const std::string& node) {
  for (const auto& entry : pre_bind_) {
    if (!entry.plugin->PreBindPreFlight(state, pod, node).IsSkip()) return true;
  }
  return false;
}

Status Framework::RunPreBindPlugins(CycleState& state, const api::Pod& pod,
                                    const std::string& node) {
  auto start = Clock::now();
  Status out;
  for (const auto& [name, plugin, metrics] : pre_bind_) {
    auto plugin_start = PluginStart(state);
    Status s = plugin->PreBind(state, pod, node);
    ObservePlugin(state, metrics, s, plugin_start);
    if (s.IsSuccess() || s.IsSkip()) continue;
    out =
        s.IsRejected() ? std::move(s.WithPlugin(name)) : AsError("running PreBind plugin", name, s);
    break;
  }
  Observe(Point::kPreBind, out, start);
  return out;
}

void Framework::SkipPreBindPlugins() { Observe(Point::kPreBind, Status(), Clock::now()); }

Status Framework::RunBindPlugins(CycleState& state, const api::Pod& pod, const std::string& node) {
  auto start = Clock::now();
  Status out = Status::Skip();
  for (const auto& [name, plugin, metrics] : bind_) {
    auto plugin_start = PluginStart(state);
    Status s = plugin->Bind(state, pod, node);
    ObservePlugin(state, metrics, s, plugin_start);
    if (s.IsSkip()) continue;
    if (s.IsSuccess()) {
      out = std::move(s);
    } else {
      out =
          s.IsRejected() ? std::move(s.WithPlugin(name)) : AsError("running Bind plugin", name, s);
    }
    break;
  }
  Observe(Point::kBind, out, start);
  return out;
}

bool Framework::RunBindPluginsAsync(CycleState& state, const api::Pod& pod, const std::string& node,
                                    std::function<void(std::optional<Status>)> done) {
  if (bind_.empty()) return false;
  const Entry<BindPlugin>& first = bind_.front();
  auto* async = dynamic_cast<AsyncBindPlugin*>(first.plugin);
  if (async == nullptr) return false;
  const auto start = Clock::now();
  return async->BindAsync(
      pod, node,
      [this, &state, &first, start, done = std::move(done)](std::optional<Status> outcome) {
        if (outcome) {
          ObservePlugin(state, first.metrics, *outcome, start);
          if (outcome->IsRejected()) {
            outcome->WithPlugin(first.name);
          } else if (!outcome->IsSuccess()) {
            *outcome = AsError("running Bind plugin", first.name, *outcome);
          }
          Observe(Point::kBind, *outcome, start);
        }
        done(std::move(outcome));
      });
}

void Framework::RunPostBindPlugins(CycleState& state, const api::Pod& pod,
                                   const std::string& node) {
  auto start = Clock::now();
  for (const auto& [name, plugin, metrics] : post_bind_) {
    auto plugin_start = PluginStart(state);
    plugin->PostBind(state, pod, node);
    ObservePlugin(state, metrics, {}, plugin_start);
  }
  Observe(Point::kPostBind, {}, start);
}

// Pods waiting at Permit, for plugins that release or reject them.
std::shared_ptr<WaitingPod> Framework::GetWaitingPod(const std::string& uid) {
  return deps_.waiting_pods->Get(uid);
}

void Framework::IterateOverWaitingPods(const std::function<void(WaitingPod&)>& fn) {
  deps_.waiting_pods->Iterate(fn);
}

std::string Framework::AllowWaitingPods(const std::vector<std::string>& uids,
                                        const std::string& plugin) {
  return deps_.waiting_pods->AllowAll(uids, plugin);
}

void Framework::RejectWaitingPod(const std::string& uid) {
  if (auto pod = deps_.waiting_pods->Get(uid)) pod->Reject("", "removed");
}

}  // namespace berth::framework::runtime
