#include "pkg/scheduler/extenders.h"

#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pkg/log/log.h"
#include "pkg/scheduler/scheduler.h"

namespace berth::scheduler {
namespace {

using framework::Code;
using framework::Status;

// Upstream's MaxExtenderPriority: extender scores run 0..10 and are scaled to plugin scores.
constexpr int64_t kMaxExtenderPriority = 10;

int64_t SaturatingMultiply(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                              : std::numeric_limits<int64_t>::max();
  }
  return out;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    return b < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  return out;
}

}  // namespace

bool ExtendersFilter(const Extenders& extenders, const api::Pod& pod) {
  for (const auto& e : extenders) {
    if (e->IsFilter() && e->IsInterested(pod)) return true;
  }
  return false;
}

Status RunExtenderFilters(
    const Extenders& extenders, const api::Pod& pod,
    std::vector<const framework::NodeInfo*>* feasible,
    const std::function<void(const framework::NodeInfo& node, Status status)>& rejected,
    bool* rejected_some) {
  *rejected_some = false;
  for (const auto& extender : extenders) {
    if (feasible->empty()) break;
    if (!extender->IsFilter() || !extender->IsInterested(pod)) continue;
    framework::Extender::FilterResult result;
    Status s = extender->Filter(pod, *feasible, &result);
    if (!s.IsSuccess()) {
      if (extender->IsIgnorable()) {
        log::Info(
            "skipping an ignorable extender that failed",
            {{"extender", extender->Name().str()}, {"pod", pod.Key()}, {"error", s.Message()}});
        continue;
      }
      return s;
    }
    // The nodes it was given but did not keep get its reasons (unresolvable ones first, as
    // upstream lets them win); names it was not given are not nodes of this cycle.
    std::unordered_set<const framework::NodeInfo*> kept(result.feasible.begin(),
                                                        result.feasible.end());
    std::unordered_map<std::string_view, const std::string*> unresolvable, failed;
    for (const auto& [node, reason] : result.failed_and_unresolvable) unresolvable[node] = &reason;
    for (const auto& [node, reason] : result.failed) failed[node] = &reason;
    for (const framework::NodeInfo* node : *feasible) {
      if (kept.count(node)) continue;
      *rejected_some = true;
      Status status;
      if (auto it = unresolvable.find(node->name()); it != unresolvable.end()) {
        status = Status::Unresolvable(*it->second);
      } else if (auto f = failed.find(node->name()); f != failed.end()) {
        status = Status::Unschedulable(*f->second);
      } else {
        continue;  // Dropped without a reason: no status, as upstream.
      }
      status.WithPlugin(extender->Name());
      rejected(*node, std::move(status));
    }
    *feasible = std::move(result.feasible);
  }
  return {};
}

Status Scheduler::FindNodesThatPassExtenders(const api::Pod& pod, Diagnosis* diagnosis,
                                             std::vector<const framework::NodeInfo*>* feasible) {
  const size_t before = feasible->size();
  bool rejected_some = false;
  Status s = RunExtenderFilters(
      deps_.extenders, pod, feasible,
      [&](const framework::NodeInfo& node, Status status) {
        if (diagnosis->groups) diagnosis->groups->Add(node.name(), status);
        diagnosis->node_to_status.Set(node.name(), std::move(status));
      },
      &rejected_some);
  if (!s.IsSuccess()) return s;
  diagnosis->filter_rejected += static_cast<int>(before - feasible->size());
  // The rejection can be undone by any change in the cluster: extenders have no queueing hints,
  // so "Extender" (upstream's name for them) requeues the pod on every event.
  if (rejected_some) diagnosis->unschedulable_plugins.insert(std::string(kExtenderRejector));
  return {};
}

PendingExtenderScores StartExtenderScores(const Extenders& extenders, const api::Pod& pod,
                                          const std::vector<const framework::NodeInfo*>& feasible) {
  PendingExtenderScores pending;
  for (const auto& e : extenders) {
    if (!e->IsPrioritizer() || !e->IsInterested(pod)) continue;
    pending.emplace_back(e.get(), e->StartPrioritize(pod, feasible));
  }
  return pending;
}

void AddExtenderScores(const api::Pod& pod, PendingExtenderScores& pending,
                       std::vector<framework::NodePluginScores>* scores) {
  if (pending.empty()) return;
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(scores->size());
  for (size_t i = 0; i < scores->size(); i++) index.emplace((*scores)[i].name, i);
  std::vector<framework::ExtenderScore> answer;
  for (auto& [extender, call] : pending) {
    Status s = call->Wait(&answer);
    if (!s.IsSuccess()) {
      // As upstream: the extender gives no score, the others decide.
      log::Verbose(
          5, "extender gave no scores",
          {{"extender", extender->Name().str()}, {"pod", pod.Key()}, {"error", s.Message()}});
      continue;
    }
    const int64_t scale =
        SaturatingMultiply(extender->Weight(), framework::kMaxNodeScore / kMaxExtenderPriority);
    for (const framework::ExtenderScore& host : answer) {
      auto it = index.find(host.host);
      if (it == index.end()) continue;
      framework::NodePluginScores& node = (*scores)[it->second];
      const int64_t score = SaturatingMultiply(host.score, scale);
      node.scores.push_back({extender->Name().str(), score});
      node.total = SaturatingAdd(node.total, score);
    }
  }
}

std::optional<Status> BindByExtender(const Extenders& extenders, const api::Pod& pod,
                                     const std::string& node) {
  for (const auto& e : extenders) {
    if (!e->IsBinder() || !e->IsInterested(pod)) continue;
    Status s = e->Bind(pod, node);
    if (!s.IsSuccess() && e->IsIgnorable()) {
      log::Info("skipping an ignorable extender that failed to bind",
                {{"extender", e->Name().str()}, {"pod", pod.Key()}, {"error", s.Message()}});
      continue;
    }
    return s;
  }
  return std::nullopt;
}

}  // namespace berth::scheduler
