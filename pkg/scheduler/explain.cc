#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/informer/factory.h"
#include "pkg/scheduler/cluster_events.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/scheduler/unsupported_fields.h"

// Dry runs for explain and simulate: PreFilter, Filter over every node, PreScore and Score of a
// pod on the scheduler's own snapshot and profiles, between scheduling cycles (CycleGate), with
// the CycleState marked dry_run so that no plugin changes anything. Nothing is assumed, reserved
// or bound; no event, condition or metric is written.

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

}  // namespace

struct Scheduler::DryRun {
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

struct Scheduler::GroupRun {
  // Pods placed, in the order given, and which of them were (parallel to the pods).
  int placed = 0;
  std::vector<char> fitted;
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

std::unique_ptr<Scheduler::DryRun> Scheduler::RunDry(framework::runtime::Framework& fwk,
                                                     const api::Pod& pod,
                                                     const framework::PluginSet& ignored,
                                                     bool score,
                                                     const std::vector<DryPlacement>& placed) {
  auto run = std::make_unique<DryRun>();
  run->state = std::make_unique<framework::CycleState>();
  run->state->dry_run = true;
  run->state->ignored_plugins = ignored;
  if (Status snap = cache_.UpdateSnapshot(snapshot_); !snap.IsSuccess()) {
    run->pre_filter = snap;
    run->pre_filter_note = "error: " + snap.Message();
    return run;
  }
  const auto& all = snapshot_.List();
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
    parallelizer_.Until((count + kFilterRun - 1) / kFilterRun, [&](int piece) {
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
  if (!score || run->feasible.empty() || !fwk.HasScorePlugins()) return run;
  Status pre_score = fwk.RunPreScorePlugins(*run->state, pod, run->feasible);
  if (!pre_score.IsSuccess()) {
    run->error = std::move(pre_score);
    return run;
  }
  if (Status sc = fwk.RunScorePlugins(*run->state, pod, run->feasible, &run->scores);
      !sc.IsSuccess()) {
    run->error = std::move(sc);
    run->scores.clear();
  }
  return run;
}

std::shared_ptr<explain::Attempt> Scheduler::AttemptOf(const framework::runtime::Framework& fwk,
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

std::vector<std::pair<std::string, framework::PodChange>> Scheduler::SuggestChanges(
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

explain::Explanation Scheduler::ExplainPod(framework::runtime::Framework& fwk, const api::Pod& pod,
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
  {
    CycleGate::SideTurn turn(gate_);
    auto run = RunDry(fwk, pod, {}, recorded == nullptr);
    e.attempt = recorded ? std::move(recorded) : AttemptOf(fwk, pod, *run);
    e.hints_time = std::chrono::system_clock::now();
    e.hints_nodes = static_cast<int>(run->nodes.size());
    e.hints_computed = true;
    e.feasible_now = static_cast<int>(run->feasible.size());
    own_pre_filter = run->pre_filter;
    if (run->feasible.empty() && !group) changes = SuggestChanges(fwk, pod, *run);
  }
  if (group) {
    ExplainGroup(fwk, pod, *group, group_plugin, own_pre_filter, &e);
    return e;
  }
  // Each change is checked in a turn of its own, so that the scheduling thread waits for one
  // dry run at most, however many changes there are.
  auto check = [&](const std::vector<const std::pair<std::string, framework::PodChange>*>& set) {
    api::Pod changed = pod;
    framework::PluginSet ignored;
    for (const auto* c : set) {
      if (c->second.apply) {
        c->second.apply(changed);
      } else {
        ignored.insert(framework::PluginName(c->first));
      }
    }
    CycleGate::SideTurn turn(gate_);
    return static_cast<int>(RunDry(fwk, changed, ignored, false)->feasible.size());
  };
  for (const auto& change : changes) {
    if (change.second.note_only) {
      e.notes.push_back(change.second.description);
      continue;
    }
    const int nodes = check({&change});
    if (nodes == 0) continue;
    e.hints.push_back({change.first, change.second.description, nodes, change.second.details});
  }
  // No single change opens a node: all of them together may (a node both tainted and short of
  // cpu needs both).
  std::erase_if(changes, [](const auto& c) { return c.second.note_only; });
  if (e.hints.empty() && changes.size() > 1) {
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
  return e;
}

Scheduler::GroupRun Scheduler::PlaceGroup(framework::runtime::Framework& fwk,
                                          const std::vector<api::PodPtr>& pods,
                                          const framework::PluginSet& ignored, int enough,
                                          bool suggest) {
  GroupRun out;
  out.fitted.assign(pods.size(), 0);
  for (size_t k = 0; k < pods.size() && out.placed < enough; k++) {
    // A turn per pod: the scheduling thread waits for one pod's dry run at most.
    CycleGate::SideTurn turn(gate_);
    auto run = RunDry(fwk, *pods[k], ignored, true, out.placements);
    if (run->feasible.empty() || !run->error.IsSuccess()) {
      if (out.failed) continue;
      out.failed = pods[k];
      out.failed_message = AttemptOf(fwk, *pods[k], *run)->message;
      if (suggest && run->error.IsSuccess()) out.changes = SuggestChanges(fwk, *pods[k], *run);
      continue;
    }
    const std::string_view node = run->scores.empty() ? run->feasible.front()->name()
                                                      : run->scores[BestScored(run->scores)].name;
    out.placements.push_back({pods[k], std::string(node)});
    out.fitted[k] = 1;
    out.placed++;
  }
  return out;
}

void Scheduler::ExplainGroup(framework::runtime::Framework& fwk, const api::Pod& pod,
                             const framework::PodGroupHint& group, const std::string& plugin,
                             const Status& own_pre_filter, explain::Explanation* e) {
  framework::PluginSet ignored;
  ignored.insert(framework::PluginName(plugin));
  // The pending pods, then copies of this one standing in for the pods the group lacks.
  std::vector<api::PodPtr> pods = group.pending;
  const int real = static_cast<int>(pods.size());
  const int needed = group.min_member - group.placed;
  const int lacking = std::max(0, needed - real);
  for (int k = 0; k < lacking; k++) {
    auto stand_in = std::make_shared<api::Pod>(pod);
    stand_in->meta.name = pod.meta.name + " (stand-in " + std::to_string(k + 1) + ")";
    stand_in->meta.uid = pod.meta.uid + "/stand-in-" + std::to_string(k + 1);
    pods.push_back(std::move(stand_in));
  }
  const GroupRun now = PlaceGroup(fwk, pods, ignored, needed, true);
  int real_placed = 0;
  for (int k = 0; k < real; k++) real_placed += now.fitted[static_cast<size_t>(k)];
  e->group = group.name;
  e->group_needs = group.min_member;
  e->group_fit_now = group.placed + real_placed;
  const std::string lacks = lacking == 0 ? std::string()
                                         : group.name + " lacks " + std::to_string(lacking) +
                                               (lacking == 1 ? " pod" : " pods") + ": it has " +
                                               std::to_string(group.placed + real) +
                                               " of minMember " + std::to_string(group.min_member);
  if (group.placed + now.placed >= group.min_member) {
    if (lacking > 0) {
      e->hints.push_back({plugin, lacks, now.Nodes(), {}, group.placed + now.placed});
    } else if (own_pre_filter.IsRejected() && own_pre_filter.plugin() == plugin) {
      // Its pods fit together, but the gate holds them for another reason (a backoff, its
      // minResources).
      e->notes.push_back(plugin + ": " + own_pre_filter.Message());
    }
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
    std::vector<api::PodPtr> changed;
    changed.reserve(pods.size());
    for (const auto& p : pods) {
      auto copy = std::make_shared<api::Pod>(*p);
      for (const auto* c : set) c->second.apply(*copy);
      changed.push_back(std::move(copy));
    }
    return PlaceGroup(fwk, changed, ignored, needed, false);
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
    if (group.placed + r.placed < group.min_member) continue;
    e->hints.push_back({change->first, change->second.description + each, r.Nodes(),
                        change->second.details, group.placed + r.placed});
  }
  if (e->hints.empty() && usable.size() > 1) {
    const GroupRun r = check(usable);
    if (group.placed + r.placed >= group.min_member) {
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
                          group.placed + r.placed});
    }
  }
  std::stable_sort(
      e->hints.begin(), e->hints.end(),
      [](const explain::Hint& a, const explain::Hint& b) { return a.nodes > b.nodes; });
  if (lacking > 0) e->notes.push_back(lacks);
  if (e->hints.empty()) {
    const std::string failed = now.failed ? "pod \"" + now.failed->meta.name + "\"" : "a pod";
    e->notes.push_back(group.name + ": " + std::to_string(group.placed + now.placed) + " of the " +
                       std::to_string(group.min_member) + " pods it needs fit together" +
                       (lacking > 0 ? ", counting copies of this pod for those it lacks" : "") +
                       "; then " + failed + " fits no node: " + now.failed_message);
  }
}

std::optional<explain::Explanation> Scheduler::Explain(const std::string& pod_key) {
  explain::AttemptPtr recorded = attempts_.Find(pod_key);
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

explain::Explanation Scheduler::Simulate(const api::Pod& pod) {
  auto* fwk = FrameworkFor(pod.spec.scheduler_name);
  if (fwk == nullptr) {
    std::string profiles;
    for (const auto& [name, f] : profiles_) profiles += (profiles.empty() ? "" : ", ") + name;
    throw std::invalid_argument("spec.schedulerName: \"" + pod.spec.scheduler_name +
                                "\" is not a profile of this scheduler (profiles: " + profiles +
                                ")");
  }
  return ExplainPod(*fwk, pod, nullptr);
}

std::vector<explain::AttemptPtr> Scheduler::PendingAttempts() {
  std::vector<explain::AttemptPtr> out = attempts_.Pending();
  if (!deps_.informers) return out;
  auto& store = deps_.informers->Pods().store();
  std::erase_if(out, [&](const explain::AttemptPtr& a) {
    api::PodPtr pod = store.Get(a->pod);
    if (pod && pod->meta.uid == a->uid && !Assigned(*pod)) return false;
    attempts_.Forget(a->uid);
    return true;
  });
  return out;
}

}  // namespace berth::scheduler
