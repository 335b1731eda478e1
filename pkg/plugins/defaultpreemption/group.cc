// DefaultPreemption for a pod of a gang that still lacks members (see defaultpreemption.h): one
// dry run that places, in turn, every member the gang needs on a working copy of the snapshot,
// and evicts only when all of them found a place.

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pkg/plugins/defaultpreemption/defaultpreemption.h"
#include "pkg/plugins/defaultpreemption/victim_gangs.h"

namespace berth::plugins::defaultpreemption {
namespace {

// One change the dry run made to its copy of the snapshot, replayed into each later member's
// cycle state (PreFilter extensions) so that the member sees the nodes as they now are.
struct Change {
  bool added = false;
  framework::PodInfoPtr pod;
  size_t node = 0;
};

// One dry run's outcome: the members placed (pod, node), the victims that make room for them, and
// the budgets those victims break; `error` when the dry run could not be made.
struct GroupAttempt {
  std::vector<std::pair<api::PodPtr, std::string>> placed;
  std::vector<framework::PodInfoPtr> victims;
  std::map<std::string, framework::ExtenderVictims> victims_by_node;
  int64_t violations = 0;
  std::optional<framework::Status> error;
};

// Whether attempt `a` (both placing the whole gang) disrupts less than `b`: fewer budgets broken,
// then a lower highest victim priority, then fewer victims.
bool LessDisruptive(const GroupAttempt& a, const GroupAttempt& b) {
  if (a.violations != b.violations) return a.violations < b.violations;
  auto highest = [](const GroupAttempt& x) {
    int32_t p = INT32_MIN;
    for (const auto& v : x.victims) p = std::max(p, v->pod->spec.priority);
    return p;
  };
  if (highest(a) != highest(b)) return highest(a) < highest(b);
  return a.victims.size() < b.victims.size();
}

// Domains a gang's preemption tries at most per topology key, those with the most room held by
// lower-priority pods first: each is a dry run of the whole gang.
constexpr size_t kMaxPreemptionDomains = 16;

}  // namespace

GroupPlan DefaultPreemption::PlanForGroup(const framework::CycleState& state,
                                          const api::PodPtr& preemptor,
                                          const framework::PodGroupHint& group,
                                          const framework::NodeToStatus& filtered) {
  GroupPlan plan;
  auto fail = [&plan](framework::Status status, bool clear_nomination = false) {
    plan.status = std::move(status);
    plan.clear_nomination = clear_nomination;
    return std::move(plan);
  };
  const int32_t needed = group.min_member - group.placed;
  if (preemptor->spec.preemption_policy == api::PreemptionPolicy::kNever) {
    return fail(framework::Status::Unschedulable(std::string(kErrReasonNever)));
  }
  const framework::NodeInfoLister& lister = handle_.SnapshotSharedLister();
  const auto& all_nodes = lister.List();
  if (all_nodes.empty()) return fail(framework::Status::Error("no nodes available"));

  // An earlier preemption for the gang still under way (its evictions not all sent, or its last
  // victim not yet seen going), or its victims still terminating on a member's nominated node:
  // wait for it. Another dry run now would count the victims' room as taken and evict more.
  for (const auto& member : group.pending) {
    if (executor_.IsPodRunningPreemption(member->meta.uid)) {
      return fail(framework::Status::Unschedulable(std::string(kErrReasonTerminating)));
    }
    const std::string& nominated = member->status.nominated_node_name;
    if (nominated.empty()) continue;
    if (auto node = lister.Get(nominated)) {
      for (const auto& p : node->pods()) {
        if (p->pod->spec.priority < preemptor->spec.priority && TerminatingByPreemption(*p->pod)) {
          return fail(framework::Status::Unschedulable(std::string(kErrReasonTerminating)));
        }
      }
    }
  }

  // Nothing can help the cycle's pod (its PreFilter turned it away, the gang backing off among
  // other reasons): said as for any pod, but the nomination stays, since it may be the room an
  // earlier preemption freed for the gang.
  bool helpable = filtered.absent_nodes_status().code() == framework::Code::kUnschedulable;
  for (const auto& entry : filtered.entries()) {
    if (entry.status.code() == framework::Code::kUnschedulable) helpable = true;
  }
  if (!helpable) {
    framework::NodeToStatus statuses;
    statuses.set_absent_nodes_status(
        framework::Status::Unresolvable(std::string(kErrReasonNotHelpful)));
    const int num_all = static_cast<int>(all_nodes.size());
    return fail(framework::Status::Unschedulable(
        "0/" + std::to_string(num_all) +
        " nodes are available: " + framework::CountNodeReasons(num_all, statuses) + "."));
  }

  // One dry run for the gang, on every node or (`domain`) on one domain's nodes only.
  auto dry_run = [&](const std::unordered_set<std::string>* domain) {
    GroupAttempt attempt;
    std::vector<framework::PodInfoPtr>& victims = attempt.victims;
    std::vector<std::pair<api::PodPtr, std::string>>& placed = attempt.placed;
    // The working copy: every node, without the gang's pending members that the snapshot may still
    // hold as placed (a waiting attempt Coscheduling's PostFilter just gave back).
    std::vector<std::shared_ptr<framework::NodeInfo>> work;
    work.reserve(all_nodes.size());
    std::unordered_map<std::string, size_t> index;
    for (const auto& node : all_nodes) {
      index.emplace(node->name(), work.size());
      work.push_back(node->Clone());
    }
    std::unordered_set<std::string> pending_uids;
    for (const auto& member : group.pending) pending_uids.insert(member->meta.uid);
    std::vector<Change> changes;
    for (size_t i = 0; i < work.size(); i++) {
      std::vector<framework::PodInfoPtr> stale;
      for (const auto& p : work[i]->pods()) {
        if (pending_uids.contains(p->pod->meta.uid)) stale.push_back(p);
      }
      for (const auto& p : stale) {
        work[i]->RemovePod(*p->pod);
        changes.push_back({false, p, i});
      }
    }

    std::vector<api::PodDisruptionBudgetPtr> pdbs = pdbs_.List();
    std::sort(pdbs.begin(), pdbs.end(),
              [](const auto& a, const auto& b) { return a->meta.Key() < b->meta.Key(); });

    VictimGangs victim_gangs(handle_);
    // Where each pod of the copy is: pods only leave it (victims) or join it (members) after this.
    std::unordered_map<std::string, size_t> node_of;
    for (size_t i = 0; i < work.size(); i++) {
      for (const auto& p : work[i]->pods()) node_of.emplace(p->pod->meta.uid, i);
    }
    auto find_pod = [&](const std::string& uid) -> std::pair<framework::PodInfoPtr, size_t> {
      auto it = node_of.find(uid);
      if (it == node_of.end()) return {nullptr, 0};
      for (const auto& p : work[it->second]->pods()) {
        if (p->pod->meta.uid == uid) return {p, it->second};
      }
      return {nullptr, 0};
    };

    std::unordered_set<std::string> victim_uids;
    for (const api::PodPtr& member : group.pending) {
      if (static_cast<int32_t>(placed.size()) >= needed) break;
      // Not to be placed now: nominating it would hold room for nothing.
      if (!member->spec.scheduling_gates.empty() || member->IsTerminating()) continue;
      // The member's cycle state: the cycle's own for the cycle's pod, else its PreFilter with the
      // gang's plugin left out (the gang's attempt has just failed and is backing off).
      std::unique_ptr<framework::CycleState> member_state;
      framework::PreFilterResult pre;
      if (member->meta.uid == preemptor->meta.uid) {
        member_state = state.Clone();
      } else {
        member_state = std::make_unique<framework::CycleState>();
        member_state->dry_run = true;
        member_state->ignored_plugins.insert(framework::PluginName(group.plugin));
        if (!handle_.RunPreFilterForPod(*member_state, *member, &pre).IsSuccess()) continue;
      }
      for (const Change& c : changes) {
        framework::Status s = c.added ? handle_.RunPreFilterExtensionAddPod(*member_state, *member,
                                                                            *c.pod, *work[c.node])
                                      : handle_.RunPreFilterExtensionRemovePod(
                                            *member_state, *member, *c.pod, *work[c.node]);
        if (!s.IsSuccess()) {
          attempt.error = s;
          return attempt;
        }
      }
      const int n = static_cast<int>(work.size());
      std::vector<framework::Status> statuses(work.size());
      handle_.GetParallelizer().Until(n, [&](int i) {
        const framework::NodeInfo& node = *work[static_cast<size_t>(i)];
        if (domain != nullptr && !domain->contains(node.name())) {
          statuses[static_cast<size_t>(i)] =
              framework::Status::Unresolvable("node(s) outside the gang's topology domain");
          return;
        }
        if (!pre.AllNodes() && !pre.node_names->contains(node.name())) {
          statuses[static_cast<size_t>(i)] = framework::Status::Unresolvable(
              "node(s) didn't satisfy the PreFilter plugins' node set");
          return;
        }
        statuses[static_cast<size_t>(i)] =
            handle_.RunFilterPluginsWithNominatedPods(*member_state, *member, node, i);
      });
      auto place = [&](size_t node) {
        auto copy = std::make_shared<api::Pod>(*member);
        copy->spec.node_name = work[node]->name();
        copy->status.nominated_node_name.clear();
        auto info = std::make_shared<const framework::PodInfo>(std::move(copy));
        work[node]->AddPod(info);
        changes.push_back({true, info, node});
        placed.emplace_back(member, work[node]->name());
      };
      // Room without evicting anything: taken before any eviction is considered.
      if (auto fits = std::find_if(statuses.begin(), statuses.end(),
                                   [](const framework::Status& s) { return s.IsSuccess(); });
          fits != statuses.end()) {
        place(static_cast<size_t>(fits - statuses.begin()));
        continue;
      }
      std::vector<const framework::NodeInfo*> potential;
      for (size_t i = 0; i < work.size(); i++) {
        if (statuses[i].code() == framework::Code::kUnschedulable)
          potential.push_back(work[i].get());
      }
      if (potential.empty()) continue;
      std::vector<Candidate> candidates;
      framework::NodeToStatus unused;
      const auto num = static_cast<int32_t>(potential.size());
      framework::Status s = DryRun(*member_state, *member, potential, pdbs, offset_(num),
                                   NumCandidates(num), &candidates, &unused);
      if (!s.IsSuccess() && candidates.empty()) {
        attempt.error = s;
        return attempt;
      }

      // A victim of a gang takes the gang's other placed members with it when the gang would be
      // left below its minimum; a gang with a member the member may not preempt cannot go.
      std::vector<Candidate> picks;
      picks.reserve(candidates.size());
      for (Candidate& c : candidates) {
        if (victim_gangs.Extend(c, member->spec.priority, victim_uids, pdbs, find_pod)) {
          picks.push_back(std::move(c));
        }
      }
      if (picks.empty()) continue;
      const Candidate& best = picks[PickOneNodeForPreemption(picks)];
      std::vector<framework::PodInfoPtr> chosen;
      for (const auto& v : best.victims) {
        if (!victim_uids.insert(v->pod->meta.uid).second) continue;
        auto [pod, node] = find_pod(v->pod->meta.uid);
        if (pod == nullptr) continue;
        work[node]->RemovePod(*pod->pod);
        changes.push_back({false, pod, node});
        chosen.push_back(pod);
        attempt.victims_by_node[work[node]->name()].pods.push_back(pod);
      }
      if (auto it = attempt.victims_by_node.find(best.node); it != attempt.victims_by_node.end()) {
        it->second.num_pdb_violations += best.num_pdb_violations;
      }
      pdbs = Spend(pdbs, chosen);
      attempt.violations += best.num_pdb_violations;
      victims.insert(victims.end(), chosen.begin(), chosen.end());
      place(index.at(best.node));
    }

    return attempt;
  };
  GroupAttempt chosen;
  if (!group.topology) {
    chosen = dry_run(nullptr);
  } else {
    // Room freed inside one domain: each domain of the first key where the whole gang can be
    // placed is a candidate, the least disruptive wins; else the next key's; a preferred
    // constraint then falls back to anywhere.
    std::unordered_set<std::string> placed_uids(group.placed_uids.begin(), group.placed_uids.end());
    bool found = false;
    for (const std::string& key : group.topology->keys) {
      std::map<std::string, std::unordered_set<std::string>> domains;
      std::map<std::string, int64_t> room;
      std::optional<std::string> required;
      for (const auto& node : all_nodes) {
        if (node->node() == nullptr) continue;
        const std::string* value = node->node()->meta.labels.Find(key);
        for (const auto& p : node->pods()) {
          if (placed_uids.contains(p->pod->meta.uid) && value != nullptr) required = *value;
        }
        if (value == nullptr) continue;
        domains[*value].insert(node->name());
        int64_t& r = room[*value];
        r += std::max<int64_t>(0, node->allocatable().milli_cpu - node->requested().milli_cpu);
        for (const auto& p : node->pods()) {
          if (p->pod->spec.priority < preemptor->spec.priority) r += p->pod->requests.milli_cpu;
        }
      }
      std::vector<std::string> order;
      for (const auto& [value, nodes] : domains) {
        if (!required || *required == value) order.push_back(value);
      }
      std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
        return room[a] > room[b];
      });
      if (order.size() > kMaxPreemptionDomains) order.resize(kMaxPreemptionDomains);
      for (const std::string& value : order) {
        GroupAttempt attempt = dry_run(&domains[value]);
        if (attempt.error) return fail(*attempt.error);
        if (static_cast<int32_t>(attempt.placed.size()) < needed) {
          if (!found && attempt.placed.size() > chosen.placed.size()) chosen = std::move(attempt);
          continue;
        }
        if (!found || LessDisruptive(attempt, chosen)) {
          chosen = std::move(attempt);
          plan.domain = key;
          plan.domain.append("=").append(value);
          found = true;
        }
      }
      if (found) break;
    }
    if (!found && group.topology->preferred) {
      chosen = dry_run(nullptr);
    } else if (!found) {
      return fail(framework::Status::Unschedulable("gang needs " + std::to_string(needed) +
                                                   " places in one topology domain, at most " +
                                                   std::to_string(chosen.placed.size()) +
                                                   " can be freed in any"),
                  true);
    }
  }
  if (chosen.error) return fail(*chosen.error);
  if (static_cast<int32_t>(chosen.placed.size()) < needed) {
    return fail(framework::Status::Unschedulable(
                    "gang needs " + std::to_string(needed) + " places, at most " +
                    std::to_string(chosen.placed.size()) + " can be freed"),
                true);
  }
  if (chosen.victims.empty()) {
    // The room its pods held before they were given back is enough: its next attempt evicts none.
    return fail(framework::Status::Unschedulable("the gang fits without evicting any pod"));
  }
  plan.placed = std::move(chosen.placed);
  plan.victims.reserve(chosen.victims.size());
  for (const auto& v : chosen.victims) plan.victims.push_back(v->pod);
  plan.victims_by_node = std::move(chosen.victims_by_node);
  return plan;
}

framework::Status DefaultPreemption::CheckGroupPlan(const api::Pod& preemptor,
                                                    const GroupPlan& plan) const {
  for (const auto& extender : handle_.Extenders()) {
    if (!extender->SupportsPreemption() || !extender->IsInterested(preemptor)) continue;
    std::map<std::string, framework::ExtenderVictims> answer;
    framework::Status s = extender->ProcessPreemption(preemptor, plan.victims_by_node,
                                                      handle_.SnapshotSharedLister(), &answer);
    if (!s.IsSuccess()) {
      if (extender->IsIgnorable()) continue;
      return s;
    }
    // The gang's dry run placed each member with exactly these victims gone: any other victims on
    // a node (fewer, or others) leave a member without its room, so the plan stands or falls whole.
    for (const auto& [node, victims] : plan.victims_by_node) {
      auto it = answer.find(node);
      bool same = it != answer.end() && it->second.pods.size() == victims.pods.size();
      if (same) {
        std::set<std::string_view> uids;
        for (const auto& p : victims.pods) uids.insert(p->pod->meta.uid);
        for (const auto& p : it->second.pods) same = same && uids.contains(p->pod->meta.uid);
      }
      if (!same) {
        return framework::Status::Unschedulable("extender \"" + extender->Name().str() +
                                                "\" did not accept the gang's victims on node \"" +
                                                node + "\"");
      }
    }
  }
  return {};
}

framework::GroupPreemptionPreview DefaultPreemption::PreviewGroupPreemption(
    const framework::CycleState& state, const api::Pod& pod, const framework::PodGroupHint& group,
    const framework::NodeToStatus& filtered) {
  framework::GroupPreemptionPreview preview;
  const GroupPlan plan =
      PlanForGroup(state, std::make_shared<const api::Pod>(pod), group, filtered);
  preview.status = plan.status;
  if (preview.status.IsSuccess()) preview.status = CheckGroupPlan(pod, plan);
  if (!preview.status.IsSuccess()) return preview;
  preview.victims = static_cast<int64_t>(plan.victims.size());
  preview.nodes = static_cast<int64_t>(plan.victims_by_node.size());
  preview.domain = plan.domain;
  return preview;
}

framework::Status DefaultPreemption::PreemptForGroup(const framework::CycleState& state,
                                                     const api::PodPtr& preemptor,
                                                     const framework::PodGroupHint& group,
                                                     const framework::NodeToStatus& filtered,
                                                     framework::PostFilterResult* result) {
  GroupPlan plan = PlanForGroup(state, preemptor, group, filtered);
  if (!plan.status.IsSuccess()) {
    result->clear_nomination = plan.clear_nomination;
    return plan.status;
  }
  if (framework::Status s = CheckGroupPlan(*preemptor, plan); !s.IsSuccess()) {
    // A refused plan cannot help now; an extender's error is returned as for a single pod.
    result->clear_nomination = s.code() == framework::Code::kUnschedulable;
    return s;
  }
  handle_.GetPreemptionMetrics().ObserveVictims(plan.victims.size());
  executor_.PreemptGroup(preemptor, plan.placed, plan.victims);
  std::set<std::string> nodes;
  for (const auto& [member, node] : plan.placed) {
    nodes.insert(node);
    if (member->meta.uid == preemptor->meta.uid) {
      result->nominated_node_name = node;
    } else {
      result->group_nominations.emplace_back(member, node);
    }
  }
  return framework::Status(framework::Code::kSuccess,
                           "found a potential placement for " + group.name + " on " +
                               std::to_string(nodes.size()) + " nodes" +
                               (plan.domain.empty() ? "" : " in " + plan.domain) + ", preempting " +
                               std::to_string(plan.victims.size()) + " victims");
}

}  // namespace berth::plugins::defaultpreemption
