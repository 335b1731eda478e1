#include "pkg/scheduler/dry_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pkg/explain/groups.h"
#include "pkg/informer/factory.h"
#include "pkg/scheduler/cluster_events.h"
#include "pkg/scheduler/dry_run_internal.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/scheduler/unsupported_fields.h"
#include "pkg/util/clock.h"
#include "pkg/util/strings.h"

// What one answer costs is bounded whatever the objects say: a gang's missing members are a
// number, with at most explain::kMaxStandIns copies of the pod placed for them, and every dry run
// after the pod's own starts only within the dry-run budget (DryRunBudget).

namespace berth::scheduler {
namespace {

using framework::Code;
using framework::Status;

// Changes checked per explanation: each is a dry run over every node.
constexpr size_t kMaxChanges = 6;
constexpr int kFilterRun = 16;

// Pods the nodes still admit: each node's allocatable pods less the pods on it (assumed ones
// included). The kubelet refuses a pod beyond its node's allocatable pods whatever the plugins say,
// so no group needing more pods placed than this fits. Saturates: a node's status may say anything.
int64_t FreePodSlots(std::span<const framework::NodeInfo* const> nodes) {
  int64_t total = 0;
  for (const auto* node : nodes) {
    const int64_t free = node->allocatable().pods - static_cast<int64_t>(node->pods().size());
    if (free > 0 && __builtin_add_overflow(total, free, &total)) {
      return std::numeric_limits<int64_t>::max();
    }
  }
  return total;
}

std::string FormatBudget(std::chrono::milliseconds budget) {
  if (budget.count() % 1000 == 0) return std::to_string(budget.count() / 1000) + "s";
  return std::to_string(budget.count()) + "ms";
}

}  // namespace

namespace dry_run {

size_t BestScored(const std::vector<framework::runtime::NodePluginScores>& scores) {
  size_t best = 0;
  for (size_t i = 1; i < scores.size(); i++) {
    const auto& s = scores[i];
    if (s.total > scores[best].total ||
        (s.total == scores[best].total && s.name < scores[best].name)) {
      best = i;
    }
  }
  return best;
}

}  // namespace dry_run

using dry_run::BestScored;
using util::Join;

DryRunner::DryRunner(DryRunnerDeps deps, std::chrono::milliseconds budget,
                     std::shared_ptr<const util::Clock> clock)
    : deps_(deps),
      budget_(budget),
      clock_(clock ? std::move(clock) : std::make_shared<util::RealClock>()) {}

DryRunner::~DryRunner() = default;

framework::runtime::Framework* DryRunner::FrameworkFor(const std::string& scheduler_name) const {
  auto it = deps_.profiles.find(scheduler_name);
  return it == deps_.profiles.end() ? nullptr : it->second.get();
}

std::unique_ptr<DryRunner::DryRun> DryRunner::RunDry(
    framework::runtime::Framework& fwk, const api::Pod& pod, const framework::PluginSet& ignored,
    bool score, const std::vector<DryPlacement>& placed, const std::vector<Prepare>& prepare) {
  auto run = std::make_unique<DryRun>();
  run->state = std::make_unique<framework::CycleState>();
  run->state->dry_run = true;
  run->state->ignored_plugins = ignored;
  for (const Prepare& p : prepare) p(*run->state);
  if (Status snap = deps_.cache.UpdateSnapshot(deps_.snapshot); !snap.IsSuccess()) {
    run->pre_filter = snap;
    run->pre_filter_note = "error: " + snap.Message();
    return run;
  }
  const auto& all = deps_.snapshot.List();
  run->nodes.reserve(all.size());
  for (const auto& n : all) run->nodes.push_back(n.get());
  run->statuses.assign(all.size(), Status());
  run->excluded.assign(all.size(), 0);
  if (auto unsupported = FindUnsupportedField(pod)) {
    run->pre_filter = Status(Code::kUnschedulableAndUnresolvable, unsupported->message);
    if (!unsupported->plugins.empty()) run->pre_filter.WithPlugin(unsupported->plugins.front());
    run->pre_filter_note = unsupported->message;
    return run;
  }
  framework::PreFilterResult pre;
  Status s = fwk.RunPreFilterPlugins(*run->state, pod, all, &pre, &run->narrowed_by);
  // Pods placed before this one go onto copies of their nodes, and into the state as a nominated
  // pod would: through the PreFilter extensions.
  if (s.IsSuccess() && !placed.empty()) {
    std::map<std::string_view, size_t> position;
    for (const auto& p : placed) position.emplace(p.node, all.size());
    for (size_t i = 0; i < all.size(); i++) {
      if (auto it = position.find(all[i]->name()); it != position.end()) it->second = i;
    }
    std::vector<framework::NodeInfo*> copy_at(all.size(), nullptr);
    for (const auto& p : placed) {
      const size_t i = position.at(p.node);
      if (i == all.size()) continue;  // The node is gone.
      if (copy_at[i] == nullptr) {
        run->copies.push_back(all[i]->Clone());
        copy_at[i] = run->copies.back().get();
        run->nodes[i] = copy_at[i];
      }
      auto info = std::make_shared<framework::PodInfo>(p.pod);
      copy_at[i]->AddPod(info);
      s = fwk.RunPreFilterExtensionAddPod(*run->state, pod, *info, *copy_at[i]);
      if (!s.IsSuccess()) break;
    }
  }
  if (!s.IsSuccess()) {
    run->pre_filter_note =
        (s.IsRejected() ? "rejected by " : "error in ") + s.plugin() + ": " + s.Message();
    run->pre_filter = std::move(s);
    return run;
  }
  std::vector<const framework::NodeInfo*> to_filter;
  std::vector<size_t> positions;
  to_filter.reserve(all.size());
  positions.reserve(all.size());
  const std::string narrowed = Join(run->narrowed_by, " ");
  for (size_t i = 0; i < all.size(); i++) {
    if (!pre.AllNodes() && !pre.node_names->count(all[i]->name())) {
      run->excluded[i] = 1;
      run->num_excluded++;
      run->statuses[i] =
          Status::Unresolvable("node(s) didn't satisfy plugin(s) [" + narrowed + "]");
      continue;
    }
    to_filter.push_back(run->nodes[i]);
    positions.push_back(i);
  }
  if (!pre.AllNodes()) {
    run->pre_filter_note = "kept " + std::to_string(to_filter.size()) + " of " +
                           std::to_string(all.size()) + " nodes (" + narrowed + ")";
  }
  if (fwk.HasFilterPlugins() && !to_filter.empty()) {
    std::vector<Status> filtered(to_filter.size());
    const int count = static_cast<int>(to_filter.size());
    deps_.parallelizer.Until((count + kFilterRun - 1) / kFilterRun, [&](int piece) {
      const int begin = piece * kFilterRun;
      const size_t n = static_cast<size_t>(std::min(count, begin + kFilterRun) - begin);
      fwk.RunFilterPluginsOnNodes(*run->state, pod,
                                  std::span<const framework::NodeInfo* const>(&to_filter[begin], n),
                                  begin, std::span<Status>(&filtered[begin], n));
    });
    for (size_t k = 0; k < positions.size(); k++) {
      run->statuses[positions[k]] = std::move(filtered[k]);
    }
  }
  for (size_t k = 0; k < positions.size(); k++) {
    if (run->statuses[positions[k]].IsSuccess()) run->feasible.push_back(to_filter[k]);
  }
  // Extenders have their say as in a real cycle: a node one rejects is not a place the pod fits.
  const Extenders& extenders = fwk.Extenders();
  if (ExtendersFilter(extenders, pod) && !run->feasible.empty()) {
    std::unordered_map<const framework::NodeInfo*, size_t> position_of;
    for (size_t k = 0; k < positions.size(); k++) position_of[to_filter[k]] = positions[k];
    const std::vector<const framework::NodeInfo*> before = run->feasible;
    bool rejected_some = false;
    Status s = RunExtenderFilters(
        extenders, pod, &run->feasible,
        [&](const framework::NodeInfo& node, Status status) {
          run->statuses[position_of.at(&node)] = std::move(status);
        },
        &rejected_some);
    if (!s.IsSuccess()) {
      run->error = std::move(s);
      run->feasible.clear();
      return run;
    }
    // A node an extender dropped without a reason still fits nowhere here.
    std::unordered_set<const framework::NodeInfo*> kept(run->feasible.begin(), run->feasible.end());
    for (const framework::NodeInfo* node : before) {
      Status& status = run->statuses[position_of.at(node)];
      if (!kept.count(node) && status.IsSuccess()) {
        status = Status::Unschedulable("dropped by an extender without a reason")
                     .WithPlugin(std::string(kExtenderRejector));
      }
    }
  }
  if (!score || run->feasible.empty()) return run;
  PendingExtenderScores extender_scores = StartExtenderScores(extenders, pod, run->feasible);
  if (!fwk.HasScorePlugins() && extender_scores.empty()) return run;
  if (fwk.HasScorePlugins()) {
    Status pre_score = fwk.RunPreScorePlugins(*run->state, pod, run->feasible);
    if (!pre_score.IsSuccess()) {
      run->error = std::move(pre_score);
      return run;
    }
    if (Status sc = fwk.RunScorePlugins(*run->state, pod, run->feasible, &run->scores);
        !sc.IsSuccess()) {
      run->error = std::move(sc);
      run->scores.clear();
      return run;
    }
  } else {
    run->scores.clear();
    for (const auto* n : run->feasible) run->scores.push_back({n->name(), {}, 0});
  }
  AddExtenderScores(pod, extender_scores, &run->scores);
  return run;
}

std::shared_ptr<explain::Attempt> DryRunner::AttemptOf(const framework::runtime::Framework& fwk,
                                                       const api::Pod& pod, const DryRun& run) {
  auto attempt = std::make_shared<explain::Attempt>();
  attempt->pod = pod.Key();
  attempt->uid = pod.meta.uid;
  attempt->profile = fwk.ProfileName();
  attempt->time = std::chrono::system_clock::now();
  attempt->num_nodes = static_cast<int>(run.nodes.size());
  attempt->pre_filter = explain::Bounded(run.pre_filter_note);
  explain::GroupBuilder groups;
  Diagnosis diagnosis;
  if (!run.pre_filter.IsSuccess()) {
    groups.AddMany(attempt->num_nodes, run.pre_filter.plugin(), run.pre_filter);
    diagnosis.pre_filter_msg = run.pre_filter.Message();
    diagnosis.node_to_status.set_absent_nodes_status(run.pre_filter);
  } else {
    const std::string narrowed = Join(run.narrowed_by, " ");
    std::vector<std::string_view> examples;
    for (size_t i = 0; i < run.nodes.size(); i++) {
      const std::string& name = run.nodes[i]->name();
      if (run.excluded[i]) {
        if (examples.size() < explain::kExamplesPerGroup) examples.push_back(name);
        continue;
      }
      attempt->evaluated++;
      if (run.statuses[i].IsSuccess()) continue;
      groups.Add(name, run.statuses[i]);
      if (run.feasible.empty() && run.statuses[i].IsRejected()) {
        diagnosis.node_to_status.Set(name, run.statuses[i]);
      }
    }
    if (run.num_excluded > 0) {
      const Status excluded =
          Status::Unresolvable("node(s) didn't satisfy plugin(s) [" + narrowed + "]");
      groups.AddMany(run.num_excluded, narrowed, excluded, examples);
      diagnosis.node_to_status.set_absent_nodes_status(excluded);
    }
  }
  groups.Build(attempt.get());
  attempt->feasible = static_cast<int>(run.feasible.size());
  if (!run.error.IsSuccess() || (!run.pre_filter.IsSuccess() && !run.pre_filter.IsRejected())) {
    attempt->outcome = explain::Outcome::kError;
    attempt->message =
        explain::Bounded(run.error.IsSuccess() ? run.pre_filter.Message() : run.error.Message());
    return attempt;
  }
  if (run.feasible.empty()) {
    attempt->outcome = explain::Outcome::kUnschedulable;
    attempt->message =
        explain::Bounded(run.nodes.empty() ? std::string("no nodes available to schedule pods")
                                           : FitErrorMessage(attempt->num_nodes, diagnosis));
    return attempt;
  }
  attempt->outcome = explain::Outcome::kBound;
  // The node a cycle would choose, but for its random tie-break: of the best, the first by name.
  std::string_view chosen = run.feasible.front()->name();
  if (!run.scores.empty()) {
    const size_t best = BestScored(run.scores);
    chosen = run.scores[best].name;
    // The best others, by total and then name.
    std::vector<size_t> order;
    for (size_t i = 0; i < run.scores.size(); i++) {
      if (i != best) order.push_back(i);
    }
    const size_t kept = std::min(order.size(), explain::kAlternatives);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept), order.end(),
                      [&](size_t a, size_t b) {
                        const auto& x = run.scores[a];
                        const auto& y = run.scores[b];
                        return x.total != y.total ? x.total > y.total : x.name < y.name;
                      });
    RecordScores(fwk, run.scores, best, std::span<const size_t>(order.data(), kept), attempt.get());
  }
  attempt->node = std::string(chosen);
  return attempt;
}

std::vector<std::pair<std::string, framework::PodChange>> DryRunner::SuggestChanges(
    framework::runtime::Framework& fwk, const api::Pod& pod, const DryRun& run) {
  // Plugin -> the nodes it rejected.
  std::map<std::string, std::vector<size_t>> rejected_by;
  if (!run.pre_filter.IsSuccess()) {
    if (run.pre_filter.IsRejected() && !run.pre_filter.plugin().empty()) {
      rejected_by[run.pre_filter.plugin()];
    }
  } else {
    for (size_t i = 0; i < run.nodes.size(); i++) {
      if (run.excluded[i]) {
        for (const auto& p : run.narrowed_by) rejected_by[p].push_back(i);
      } else if (run.statuses[i].IsRejected()) {
        rejected_by[run.statuses[i].plugin()].push_back(i);
      }
    }
  }
  std::vector<std::pair<std::string, const std::vector<size_t>*>> order;
  order.reserve(rejected_by.size());
  for (const auto& [plugin, nodes] : rejected_by) order.emplace_back(plugin, &nodes);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->size() > b.second->size();
  });
  std::vector<std::pair<std::string, framework::PodChange>> out;
  for (const auto& [plugin, indexes] : order) {
    framework::PluginPtr p = fwk.GetPlugin(plugin);
    const auto* hinting = dynamic_cast<const framework::HintPlugin*>(p.get());
    if (hinting == nullptr) continue;
    std::vector<const framework::NodeInfo*> nodes;
    std::vector<const Status*> statuses;
    nodes.reserve(indexes->size());
    statuses.reserve(indexes->size());
    for (size_t i : *indexes) {
      nodes.push_back(run.nodes[i]);
      statuses.push_back(&run.statuses[i]);
    }
    const bool at_pre_filter = !run.pre_filter.IsSuccess() && run.pre_filter.plugin() == plugin;
    for (auto& change : hinting->SuggestChanges(*run.state, pod, nodes, statuses,
                                                at_pre_filter ? &run.pre_filter : nullptr)) {
      if (out.size() == kMaxChanges) return out;
      out.emplace_back(plugin, std::move(change));
    }
  }
  return out;
}

explain::Explanation DryRunner::ExplainPod(framework::runtime::Framework& fwk, const api::Pod& pod,
                                           explain::AttemptPtr recorded) {
  explain::Explanation e;
  e.dry_run = recorded == nullptr;
  // A pod that binds with its group or not at all is explained as the group.
  std::string group_plugin;
  std::optional<framework::PodGroupHint> group;
  for (const auto& [point, names] : fwk.ListPlugins()) {
    for (const auto& name : names) {
      const auto* hinting = dynamic_cast<const framework::HintPlugin*>(fwk.GetPlugin(name).get());
      if (hinting == nullptr || group) continue;
      group = hinting->GroupOf(pod);
      if (group) group_plugin = name;
    }
  }
  std::vector<std::pair<std::string, framework::PodChange>> changes;
  Status own_pre_filter;
  int64_t free_pod_slots = 0;
  const util::Clock& clock = *clock_;
  const util::Clock::TimePoint start = clock.Now();
  // Saturates: a budget longer than the clock can count is no budget.
  const auto room =
      std::chrono::duration_cast<std::chrono::milliseconds>(util::Clock::TimePoint::max() - start);
  const util::Clock::TimePoint deadline =
      budget_ >= room ? util::Clock::TimePoint::max() : start + budget_;
  DryRunBudget budget{clock, deadline};
  {
    CycleGate::SideTurn turn(deps_.gate);
    auto run = RunDry(fwk, pod, {}, recorded == nullptr);
    e.attempt = recorded ? std::move(recorded) : AttemptOf(fwk, pod, *run);
    e.hints_time = std::chrono::system_clock::now();
    e.hints_nodes = static_cast<int>(run->nodes.size());
    e.hints_computed = true;
    e.feasible_now = static_cast<int>(run->feasible.size());
    own_pre_filter = run->pre_filter;
    // A snapshot that could not be brought up to date leaves the run without nodes: that says
    // nothing of their room.
    const bool no_snapshot =
        run->nodes.empty() && !run->pre_filter.IsSuccess() && !run->pre_filter.IsRejected();
    free_pod_slots = no_snapshot ? std::numeric_limits<int64_t>::max() : FreePodSlots(run->nodes);
    if (run->feasible.empty() && !group) changes = SuggestChanges(fwk, pod, *run);
  }
  if (group) {
    if (!ExplainGroup(fwk, pod, *group, group_plugin, own_pre_filter, free_pod_slots, budget, &e)) {
      ExplainGroupPreemption(fwk, pod, *group, group_plugin, budget, &e);
    }
  } else {
    ExplainChanges(fwk, pod, std::move(changes), budget, &e);
  }
  if (budget.cut_short) {
    e.cut_short = true;
    e.notes.push_back("the dry runs were cut short at their budget of " + FormatBudget(budget_) +
                      ": the hints and notes cover only the checks that ran");
  }
  return e;
}

void DryRunner::ExplainChanges(framework::runtime::Framework& fwk, const api::Pod& pod,
                               std::vector<std::pair<std::string, framework::PodChange>> changes,
                               DryRunBudget& budget, explain::Explanation* out) {
  explain::Explanation& e = *out;
  // Each change is checked in a turn of its own, so that the scheduling thread waits for one
  // dry run at most, however many changes there are.
  auto check = [&](const std::vector<const std::pair<std::string, framework::PodChange>*>& set) {
    api::Pod changed = pod;
    framework::PluginSet ignored;
    std::vector<Prepare> prepare;
    for (const auto* c : set) {
      if (c->second.apply) {
        c->second.apply(changed);
        if (c->second.prepare) prepare.push_back(c->second.prepare);
      } else {
        ignored.insert(framework::PluginName(c->first));
      }
    }
    CycleGate::SideTurn turn(deps_.gate);
    return static_cast<int>(RunDry(fwk, changed, ignored, false, {}, prepare)->feasible.size());
  };
  for (const auto& change : changes) {
    if (change.second.note_only) {
      e.notes.push_back(change.second.description);
      continue;
    }
    if (!budget.Allows()) continue;
    const int nodes = check({&change});
    if (nodes == 0) continue;
    e.hints.push_back({change.first, change.second.description, nodes, change.second.details});
  }
  // No single change opens a node: all of them together may (a node both tainted and short of
  // cpu needs both).
  std::erase_if(changes, [](const auto& c) { return c.second.note_only; });
  if (e.hints.empty() && changes.size() > 1 && budget.Allows()) {
    std::vector<const std::pair<std::string, framework::PodChange>*> all;
    std::vector<std::string> plugins;
    std::vector<std::string> descriptions;
    for (const auto& c : changes) {
      all.push_back(&c);
      if (std::find(plugins.begin(), plugins.end(), c.first) == plugins.end()) {
        plugins.push_back(c.first);
      }
      descriptions.push_back(c.second.description);
    }
    if (const int nodes = check(all); nodes > 0) {
      e.hints.push_back({Join(plugins, "+"), Join(descriptions, ", and "), nodes, {}});
    }
  }
  std::stable_sort(
      e.hints.begin(), e.hints.end(),
      [](const explain::Hint& a, const explain::Hint& b) { return a.nodes > b.nodes; });
}

std::optional<explain::Explanation> DryRunner::Explain(const std::string& pod_key) {
  explain::AttemptPtr recorded = deps_.attempts.Find(pod_key);
  if (!recorded) return std::nullopt;
  explain::Explanation e;
  e.attempt = recorded;
  if (recorded->outcome == explain::Outcome::kBound) return e;
  api::PodPtr pod = recorded->pod_object;
  if (deps_.informers) {
    api::PodPtr current = deps_.informers->Pods().store().Get(pod_key);
    if (current && current->meta.uid == recorded->uid) pod = current;
  }
  if (!pod || Assigned(*pod)) return e;
  auto* fwk = FrameworkFor(pod->spec.scheduler_name);
  if (fwk == nullptr) return e;
  return ExplainPod(*fwk, *pod, recorded);
}

explain::Explanation DryRunner::Simulate(const api::Pod& pod) {
  auto* fwk = FrameworkFor(pod.spec.scheduler_name);
  if (fwk == nullptr) {
    std::string profiles;
    for (const auto& [name, f] : deps_.profiles) profiles += (profiles.empty() ? "" : ", ") + name;
    throw std::invalid_argument("spec.schedulerName: \"" + pod.spec.scheduler_name +
                                "\" is not a profile of this scheduler (profiles: " + profiles +
                                ")");
  }
  return ExplainPod(*fwk, pod, nullptr);
}

std::vector<explain::AttemptPtr> DryRunner::PendingAttempts() {
  std::vector<explain::AttemptPtr> out = deps_.attempts.Pending();
  if (!deps_.informers) return out;
  auto& store = deps_.informers->Pods().store();
  std::erase_if(out, [&](const explain::AttemptPtr& a) {
    api::PodPtr pod = store.Get(a->pod);
    if (pod && pod->meta.uid == a->uid && !Assigned(*pod)) return false;
    deps_.attempts.Forget(a->uid);
    return true;
  });
  return out;
}

}  // namespace berth::scheduler
