// DryRunner's explanation of a pod that binds with its group or not at all (dry_runner.h): the
// group's pods placed together, the changes that fit all of them, and what preemption would take.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pkg/framework/group_preemption.h"
#include "pkg/scheduler/dry_run_internal.h"
#include "pkg/util/strings.h"

namespace berth::scheduler {

using dry_run::BestScored;
using framework::Status;
using util::Join;

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

bool DryRunner::ExplainGroup(framework::runtime::Framework& fwk, const api::Pod& pod,
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
    return true;
  }
  if (no_room) {
    if (lacking > 0) e->notes.push_back(lacks);
    e->notes.push_back(group.name + ": it needs " + std::to_string(needed) +
                       " more pods placed at once, and the nodes have room for " +
                       std::to_string(free_pod_slots) +
                       " (allocatable pods less the pods on them)");
    return false;
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
      e->hints.push_back({Join(plugins, "+"),
                          Join(descriptions, ", and ") + each,
                          r.Nodes(),
                          {},
                          static_cast<int>(placed + r.placed)});
    }
  }
  std::stable_sort(
      e->hints.begin(), e->hints.end(),
      [](const explain::Hint& a, const explain::Hint& b) { return a.nodes > b.nodes; });
  if (lacking > 0) e->notes.push_back(lacks);
  if (!e->hints.empty()) return false;
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
  return false;
}

void DryRunner::ExplainGroupPreemption(framework::runtime::Framework& fwk, const api::Pod& pod,
                                       const framework::PodGroupHint& group,
                                       const std::string& plugin, DryRunBudget& budget,
                                       explain::Explanation* e) {
  // Only what a cycle's PostFilter would do: for a pod that may preempt, in a profile whose
  // PostFilter plugins preempt for gangs.
  if (pod.spec.preemption_policy == api::PreemptionPolicy::kNever) return;
  // A group short of pods: no eviction completes it, and its cycles do not preempt for it (its
  // gate turns its pods away first); the note that it lacks pods says what does.
  if (int64_t{group.placed} + static_cast<int64_t>(group.pending.size()) < group.min_member) return;
  framework::GroupPreemptionPreviewer* previewer = nullptr;
  for (const auto& [point, names] : fwk.ListPlugins()) {
    if (point != "PostFilter") continue;
    for (const auto& name : names) {
      if (previewer == nullptr) {
        previewer = dynamic_cast<framework::GroupPreemptionPreviewer*>(fwk.GetPlugin(name).get());
      }
    }
  }
  if (previewer == nullptr || !budget.Allows()) return;
  framework::PluginSet ignored;
  ignored.insert(framework::PluginName(plugin));
  framework::PodGroupHint hint = group;
  hint.plugin = plugin;
  // One turn for the pod's dry run and the plan made from it: the plan reads the snapshot that dry
  // run brought up to date.
  CycleGate::SideTurn turn(deps_.gate);
  auto run = RunDry(fwk, pod, ignored, false);
  framework::NodeToStatus filtered;
  if (!run->pre_filter.IsSuccess()) {
    filtered.set_absent_nodes_status(run->pre_filter);
  } else if (!run->feasible.empty()) {
    // The pod fits alone; it is the gang that does not, and its preemption is what a member that
    // fits no node would start.
    filtered.set_absent_nodes_status(Status::Unschedulable("the gang does not fit"));
  } else {
    for (size_t i = 0; i < run->nodes.size(); i++) {
      filtered.Set(run->nodes[i]->name(), run->statuses[i]);
    }
  }
  const framework::GroupPreemptionPreview preview =
      previewer->PreviewGroupPreemption(*run->state, pod, hint, filtered);
  if (preview.status.code() == framework::Code::kError) {
    e->notes.push_back("preemption could not be planned: " + preview.status.Message());
  } else if (!preview.status.IsSuccess()) {
    e->notes.push_back("preemption cannot help: " + preview.status.Message());
  } else {
    e->notes.push_back("preemption would evict " + std::to_string(preview.victims) +
                       (preview.victims == 1 ? " pod on " : " pods on ") +
                       std::to_string(preview.nodes) + (preview.nodes == 1 ? " node" : " nodes") +
                       (preview.domain.empty() ? std::string() : " (in " + preview.domain + ")") +
                       " for " + group.name);
  }
}

}  // namespace berth::scheduler
