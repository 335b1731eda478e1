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
#include "pkg/scheduler/scheduler.h"
#include "pkg/scheduler/unsupported_fields.h"
#include "pkg/util/clock.h"

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

std::string JoinNames(const std::vector<std::string>& names, std::string_view sep) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += sep;
    out += n;
  }
  return out;
}

// Of the best-scored nodes, the first by name: the node a cycle would choose, but for its random
// tie-break. Index into `scores`.
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

// The time one answer (an explain or a simulate) may spend in dry runs. Asked before every dry
// run but the pod's own first one, which is one scheduling cycle's work and gives the answer its
// attempt: a dry run is bounded by the cluster's nodes, but how many of them an answer makes (one
// per change, one per pod of a gang, a gang's pods again per change) is what hostile input
// drives. Not thread-safe: one answer, one thread.
struct DryRunner::DryRunBudget {
  const util::Clock& clock;
  util::Clock::TimePoint deadline;
  bool cut_short = false;

  // Whether another dry run may start. Once it may not, none may: an answer is cut at one point.
  bool Allows() {
    if (!cut_short && clock.Now() >= deadline) cut_short = true;
    return !cut_short;
  }
};

// The pods a group's dry run places, in order: the group's pending pods, then copies of one pod
// standing in for members no one has created yet, each made only when it is tried.
struct DryRunner::GroupPods {
  std::vector<api::PodPtr> pending;
  // What each copy is made from; copies are named and identified after it and their number.
  api::PodPtr stand_in;
  // Copies to try, at most; at most explain::kMaxStandIns.
  int stand_ins = 0;
  // Written into each pod's cycle state first (the changes being checked).
  std::vector<Prepare> prepare;
};

struct DryRunner::DryRun {
  std::unique_ptr<framework::CycleState> state;
  // Every node of the snapshot, in its order; statuses[i] is nodes[i]'s verdict (success: it
  // passed Filter). Valid until the snapshot is next updated, that is, for the turn.
  std::vector<const framework::NodeInfo*> nodes;
  std::vector<Status> statuses;
  // Nodes PreFilter's result left out; their status says which plugins did.
  std::vector<char> excluded;
  int num_excluded = 0;
  // PreFilter's rejection or error, which stopped the run before Filter; success otherwise.
  Status pre_filter;
  std::string pre_filter_note;
  std::vector<std::string> narrowed_by;
  std::vector<const framework::NodeInfo*> feasible;
  // Over `feasible`, when scored.
  std::vector<framework::runtime::NodePluginScores> scores;
  // A PreScore or Score error.
  Status error;
  // Copies of the nodes the run's placed pods are on, with them added; `nodes` points at these
  // in place of the snapshot's.
  std::vector<std::shared_ptr<framework::NodeInfo>> copies;
};

struct DryRunner::GroupRun {
  // Pods placed, in the order given, and which of the pending ones were (parallel to them).
  int placed = 0;
  std::vector<char> fitted;
  // Copies of the stand-in tried, the last of them perhaps fitting no node.
  int stand_ins = 0;
  std::vector<DryPlacement> placements;
  // The first pod that fitted no node, why, and what the plugins proposed for it (with
  // `suggest`).
  api::PodPtr failed;
  std::string failed_message;
  std::vector<std::pair<std::string, framework::PodChange>> changes;

  int Nodes() const {
    std::set<std::string_view> nodes;
    for (const auto& p : placements) nodes.insert(p.node);
    return static_cast<int>(nodes.size());
  }
};

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
  const std::string narrowed = JoinNames(run->narrowed_by, " ");
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
    const std::string narrowed = JoinNames(run.narrowed_by, " ");
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
    ExplainGroup(fwk, pod, *group, group_plugin, own_pre_filter, free_pod_slots, budget, &e);
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
      e.hints.push_back({JoinNames(plugins, "+"), JoinNames(descriptions, ", and "), nodes, {}});
    }
  }
  std::stable_sort(
      e.hints.begin(), e.hints.end(),
      [](const explain::Hint& a, const explain::Hint& b) { return a.nodes > b.nodes; });
}

DryRunner::GroupRun DryRunner::PlaceGroup(framework::runtime::Framework& fwk, const GroupPods& pods,
                                          const framework::PluginSet& ignored, int64_t enough,
                                          bool suggest, DryRunBudget& budget) {
  GroupRun out;
  out.fitted.assign(pods.pending.size(), 0);
  const size_t total = pods.pending.size() + static_cast<size_t>(std::max(0, pods.stand_ins));
  for (size_t k = 0; k < total && out.placed < enough; k++) {
    // Once a pod fits no node the group does not fit, and a change being checked has its answer.
    // For the answer itself, the other pending pods are still tried (how many of them fit is part
    // of it), but no copy after one that fit no node: each would meet what the last one met.
    if (out.failed && !suggest) break;
    if (!budget.Allows()) break;
    api::PodPtr pod;
    if (k < pods.pending.size()) {
      pod = pods.pending[k];
    } else {
      const std::string n = std::to_string(k - pods.pending.size() + 1);
      auto copy = std::make_shared<api::Pod>(*pods.stand_in);
      copy->meta.name = pods.stand_in->meta.name + " (stand-in " + n + ")";
      copy->meta.uid = pods.stand_in->meta.uid + "/stand-in-" + n;
      pod = std::move(copy);
      out.stand_ins++;
    }
    // A turn per pod: the scheduling thread waits for one pod's dry run at most.
    CycleGate::SideTurn turn(deps_.gate);
    auto run = RunDry(fwk, *pod, ignored, true, out.placements, pods.prepare);
    if (run->feasible.empty() || !run->error.IsSuccess()) {
      const bool copy = k >= pods.pending.size();
      if (!out.failed) {
        out.failed = pod;
        out.failed_message = AttemptOf(fwk, *pod, *run)->message;
        if (suggest && run->error.IsSuccess()) out.changes = SuggestChanges(fwk, *pod, *run);
      }
      if (copy) break;
      continue;
    }
    const std::string_view node = run->scores.empty() ? run->feasible.front()->name()
                                                      : run->scores[BestScored(run->scores)].name;
    out.placements.push_back({pod, std::string(node)});
    if (k < pods.pending.size()) out.fitted[k] = 1;
    out.placed++;
  }
  return out;
}

void DryRunner::ExplainGroup(framework::runtime::Framework& fwk, const api::Pod& pod,
                             const framework::PodGroupHint& group, const std::string& plugin,
                             const Status& own_pre_filter, int64_t free_pod_slots,
                             DryRunBudget& budget, explain::Explanation* e) {
  framework::PluginSet ignored;
  ignored.insert(framework::PluginName(plugin));
  // In 64 bits: minMember is any int32 a PodGroup's author writes, and these are its sums and
  // differences. The members the group lacks are a count, never a pod each: copies of this pod
  // stand in for at most kMaxStandIns of them.
  const int64_t placed = group.placed;
  const int64_t real = static_cast<int64_t>(group.pending.size());
  const int64_t needed = int64_t{group.min_member} - placed;
  const int64_t lacking = std::max<int64_t>(0, needed - real);
  // More pods to place at once than the nodes admit: no change to its pods makes room, and
  // copies of this one would only find that out one dry run at a time.
  const bool no_room = needed > free_pod_slots;
  GroupPods pods;
  pods.pending = group.pending;
  pods.stand_in = std::make_shared<const api::Pod>(pod);
  pods.stand_ins =
      no_room ? 0 : static_cast<int>(std::min<int64_t>(lacking, explain::kMaxStandIns));
  const GroupRun now = PlaceGroup(fwk, pods, ignored, needed, true, budget);
  int real_placed = 0;
  for (const char fitted : now.fitted) real_placed += fitted;
  e->group = group.name;
  e->group_needs = group.min_member;
  e->group_fit_now = static_cast<int>(placed + real_placed);
  e->group_stand_ins = now.stand_ins;
  const std::string lacks = lacking == 0 ? std::string()
                                         : group.name + " lacks " + std::to_string(lacking) +
                                               (lacking == 1 ? " pod" : " pods") + ": it has " +
                                               std::to_string(placed + real) + " of minMember " +
                                               std::to_string(group.min_member);
  if (placed + now.placed >= group.min_member) {
    if (lacking > 0) {
      e->hints.push_back({plugin, lacks, now.Nodes(), {}, static_cast<int>(placed + now.placed)});
    } else if (own_pre_filter.IsRejected() && own_pre_filter.plugin() == plugin) {
      // Its pods fit together, but the gate holds them for another reason (a backoff, its
      // minResources).
      e->notes.push_back(plugin + ": " + own_pre_filter.Message());
    }
    return;
  }
  if (no_room) {
    if (lacking > 0) e->notes.push_back(lacks);
    e->notes.push_back(group.name + ": it needs " + std::to_string(needed) +
                       " more pods placed at once, and the nodes have room for " +
                       std::to_string(free_pod_slots) +
                       " (allocatable pods less the pods on them)");
    return;
  }
  // Each change is made to every pod of the group (and to the stand-ins), and kept only if the
  // group then fits together: a change that lets one pod in while the rest stay out schedules
  // none of them.
  const std::string each = " in each pod of " + group.name +
                           (lacking > 0 ? " (and in the " + std::to_string(lacking) +
                                              (lacking == 1 ? " pod it lacks)" : " pods it lacks)")
                                        : std::string());
  auto check = [&](const std::vector<const std::pair<std::string, framework::PodChange>*>& set) {
    GroupPods changed;
    changed.pending.reserve(pods.pending.size());
    for (const auto& p : pods.pending) {
      auto copy = std::make_shared<api::Pod>(*p);
      for (const auto* c : set) c->second.apply(*copy);
      changed.pending.push_back(std::move(copy));
    }
    auto stand_in = std::make_shared<api::Pod>(pod);
    for (const auto* c : set) c->second.apply(*stand_in);
    changed.stand_in = std::move(stand_in);
    changed.stand_ins = pods.stand_ins;
    for (const auto* c : set) {
      if (c->second.prepare) changed.prepare.push_back(c->second.prepare);
    }
    return PlaceGroup(fwk, changed, ignored, needed, false, budget);
  };
  std::vector<const std::pair<std::string, framework::PodChange>*> usable;
  for (const auto& change : now.changes) {
    if (change.second.note_only) {
      e->notes.push_back(change.second.description);
    } else if (change.second.apply) {
      usable.push_back(&change);
    }
  }
  for (const auto* change : usable) {
    const GroupRun r = check({change});
    if (placed + r.placed < group.min_member) continue;
    e->hints.push_back({change->first, change->second.description + each, r.Nodes(),
                        change->second.details, static_cast<int>(placed + r.placed)});
  }
  if (e->hints.empty() && usable.size() > 1) {
    const GroupRun r = check(usable);
    if (placed + r.placed >= group.min_member) {
      std::vector<std::string> plugins;
      std::vector<std::string> descriptions;
      for (const auto* c : usable) {
        if (std::find(plugins.begin(), plugins.end(), c->first) == plugins.end()) {
          plugins.push_back(c->first);
        }
        descriptions.push_back(c->second.description);
      }
      e->hints.push_back({JoinNames(plugins, "+"),
                          JoinNames(descriptions, ", and ") + each,
                          r.Nodes(),
                          {},
                          static_cast<int>(placed + r.placed)});
    }
  }
  std::stable_sort(
      e->hints.begin(), e->hints.end(),
      [](const explain::Hint& a, const explain::Hint& b) { return a.nodes > b.nodes; });
  if (lacking > 0) e->notes.push_back(lacks);
  if (!e->hints.empty()) return;
  const std::string fit = group.name + ": " + std::to_string(placed + now.placed) + " of the " +
                          std::to_string(group.min_member) + " pods it needs fit together";
  if (now.failed) {
    e->notes.push_back(
        fit + (lacking > 0 ? ", counting copies of this pod for those it lacks" : "") +
        "; then pod \"" + now.failed->meta.name + "\" fits no node: " + now.failed_message);
  } else if (!budget.cut_short && now.stand_ins < lacking) {
    e->notes.push_back(fit + ", counting copies of this pod for " + std::to_string(now.stand_ins) +
                       " of the " + std::to_string(lacking) + " it lacks; explain places at most " +
                       std::to_string(explain::kMaxStandIns) + " copies, so whether the other " +
                       std::to_string(lacking - now.stand_ins) + " fit was not checked");
  }
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
