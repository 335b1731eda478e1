#include "pkg/plugins/defaultpreemption/defaultpreemption.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/defaultpreemption/victim_gangs.h"

namespace berth::plugins::defaultpreemption {
namespace {

using json = nlohmann::json;

const framework::FixedReasons& Waiting() {
  static const framework::FixedReasons reasons(kErrReasonWaiting);
  return reasons;
}

// Reads an int32 member of the args into `out`; returns false (having said why) when it is not one.
bool ReadInt32(const json& args, std::string_view field, framework::ArgsErrors& errors,
               int32_t* out) {
  if (auto it = args.find(field); it != args.end() && !it->is_null() && !it->is_number_integer()) {
    errors.Invalid(std::string(field), *it, "must be a 32-bit integer");
    return false;
  }
  int64_t value = *out;
  if (!errors.ReadInt(args, field, "", std::numeric_limits<int32_t>::min(),
                      std::numeric_limits<int32_t>::max(), "must be a 32-bit integer", &value)) {
    return false;
  }
  *out = static_cast<int32_t>(value);
  return true;
}

// One node's outcome in the dry run.
struct Trial {
  bool done = false;
  bool candidate = false;
  Candidate result;
  framework::Status status;
};

}  // namespace

Args ParseArgs(const json& args) {
  framework::ArgsErrors errors;
  Args out;
  if (errors.CheckObject(args, {"minCandidateNodesPercentage", "minCandidateNodesAbsolute"})) {
    const bool percentage_read =
        ReadInt32(args, "minCandidateNodesPercentage", errors, &out.min_candidate_nodes_percentage);
    const bool absolute_read =
        ReadInt32(args, "minCandidateNodesAbsolute", errors, &out.min_candidate_nodes_absolute);
    const int32_t percentage = out.min_candidate_nodes_percentage;
    const int32_t absolute = out.min_candidate_nodes_absolute;
    if (percentage_read && (percentage < 0 || percentage > 100)) {
      errors.Invalid("minCandidateNodesPercentage", percentage, "not in valid range [0, 100]");
    }
    if (absolute_read && absolute < 0) {
      errors.Invalid("minCandidateNodesAbsolute", absolute, "not in valid range [0, inf)");
    }
    if (percentage_read && absolute_read && percentage == 0 && absolute == 0) {
      errors.Invalid("minCandidateNodesPercentage", 0,
                     "cannot be zero at the same time as minCandidateNodesAbsolute");
      errors.Invalid("minCandidateNodesAbsolute", 0,
                     "cannot be zero at the same time as minCandidateNodesPercentage");
    }
  }
  errors.ThrowIfAny();
  return out;
}

DefaultPreemption::DefaultPreemption(Args args, framework::Handle& handle,
                                     informer::Lister<api::Pod> pods,
                                     informer::Lister<api::PodDisruptionBudget> pdbs,
                                     OffsetFn offset)
    : args_(args),
      handle_(handle),
      pods_(pods),
      pdbs_(pdbs),
      offset_(std::move(offset)),
      executor_(handle, std::string(kName), pods) {
  if (!offset_) {
    offset_ = [this](int32_t n) { return static_cast<int32_t>(rng_() % static_cast<uint64_t>(n)); };
  }
}

int32_t DefaultPreemption::NumCandidates(int32_t num_nodes) const {
  const int64_t share = int64_t{num_nodes} * args_.min_candidate_nodes_percentage / 100;
  return static_cast<int32_t>(
      std::min<int64_t>(std::max<int64_t>(share, args_.min_candidate_nodes_absolute), num_nodes));
}

framework::Status DefaultPreemption::PostFilter(framework::CycleState& state, const api::Pod& pod,
                                                const framework::NodeToStatus& filtered,
                                                framework::PostFilterResult* result) {
  handle_.GetPreemptionMetrics().ObserveAttempt();
  framework::Status status = Preempt(state, pod, filtered, result);
  if (status.reasons().empty()) return status;
  return framework::Status(status.code(), "preemption: " + status.Message());
}

framework::Status DefaultPreemption::PreEnqueue(const api::Pod& pod) {
  if (executor_.IsPodRunningPreemption(pod.meta.uid)) {
    return framework::Status::Unresolvable(Waiting());
  }
  return {};
}

std::vector<framework::ClusterEventWithHint> DefaultPreemption::EventsToRegister() const {
  return {{{framework::EventResource::kPod, framework::kDelete, "AssignedPodDelete"},
           [](const api::Pod&, const framework::EventObjects&) {
             return framework::QueueingHint::kSkip;
           }}};
}

std::string_view DefaultPreemption::NotEligibleReason(
    const api::Pod& pod, const framework::NodeToStatus& filtered) const {
  if (pod.spec.preemption_policy == api::PreemptionPolicy::kNever) return kErrReasonNever;
  const std::string& nominated = pod.status.nominated_node_name;
  if (nominated.empty()) return {};
  // The nominated node cannot take the pod whatever is evicted: preempt elsewhere.
  if (filtered.Get(nominated).code() == framework::Code::kUnschedulableAndUnresolvable) return {};
  // An earlier preemption for this pod is still under way there: wait for it.
  if (auto node = handle_.SnapshotSharedLister().Get(nominated)) {
    for (const auto& p : node->pods()) {
      if (p->pod->spec.priority < pod.spec.priority && TerminatingByPreemption(*p->pod)) {
        return kErrReasonTerminating;
      }
    }
  }
  return {};
}

framework::Status DefaultPreemption::Preempt(framework::CycleState& state, const api::Pod& pod,
                                             const framework::NodeToStatus& filtered,
                                             framework::PostFilterResult* result) {
  // The pod as the informer has it now, with the nomination it carries; the scheduler's own copy
  // when the informer does not hold it (offline runs, or the pod was just deleted).
  api::PodPtr latest = pods_.Get(pod.meta.namespace_, pod.meta.name);
  if (latest && latest->meta.uid != pod.meta.uid) latest = nullptr;
  const api::Pod& preemptor = latest ? *latest : pod;
  if (std::optional<framework::PodGroupHint> group = handle_.GroupOf(preemptor);
      group && group->min_member > group->placed) {
    return PreemptForGroup(state, latest ? latest : std::make_shared<const api::Pod>(pod), *group,
                           filtered, result);
  }
  if (std::string_view reason = NotEligibleReason(preemptor, filtered); !reason.empty()) {
    return framework::Status::Unschedulable(std::string(reason));
  }

  const framework::NodeInfoLister& lister = handle_.SnapshotSharedLister();
  const auto& all_nodes = lister.List();
  if (all_nodes.empty()) return framework::Status::Error("no nodes available");
  // Only nodes a victim's removal can help: those Filter rejected as Unschedulable. Most often
  // the nodes without a status of their own were ruled out together, and only the others need
  // a look: a pod that fits nowhere for good is rejected on every node of a large cluster.
  std::vector<const framework::NodeInfo*> potential;
  if (filtered.absent_nodes_status().code() == framework::Code::kUnschedulable) {
    for (const auto& node : all_nodes) {
      if (filtered.Get(node->name()).code() == framework::Code::kUnschedulable) {
        potential.push_back(node.get());
      }
    }
  } else {
    for (const auto& entry : filtered.entries()) {
      if (entry.status.code() != framework::Code::kUnschedulable) continue;
      // The snapshot keeps the node for the cycle.
      if (auto node = lister.Get(std::string(entry.node)); node && node->node()) {
        potential.push_back(node.get());
      }
    }
  }
  framework::NodeToStatus statuses;
  std::vector<Candidate> candidates;
  if (!potential.empty()) {
    std::vector<api::PodDisruptionBudgetPtr> pdbs = pdbs_.List();
    // The store's order is a hash's; sorted, a pod covered by several budgets charges them in
    // the same order every time.
    std::sort(pdbs.begin(), pdbs.end(),
              [](const auto& a, const auto& b) { return a->meta.Key() < b->meta.Key(); });
    const auto n = static_cast<int32_t>(potential.size());
    framework::Status s = DryRun(state, preemptor, potential, pdbs, offset_(n), NumCandidates(n),
                                 &candidates, &statuses);
    if (!s.IsSuccess() && candidates.empty()) return s;
    KeepVictimGangsWhole(preemptor, pdbs, &candidates);
  }

  if (candidates.empty()) {
    statuses.set_absent_nodes_status(
        framework::Status::Unresolvable(std::string(kErrReasonNotHelpful)));
    const int num_all = static_cast<int>(all_nodes.size());
    std::string message = "0/" + std::to_string(num_all) + " nodes are available:";
    if (std::string reasons = framework::CountNodeReasons(num_all, statuses); !reasons.empty()) {
      message += " " + reasons + ".";
    }
    result->clear_nomination = true;
    return framework::Status::Unschedulable(std::move(message));
  }

  if (framework::Status s = CallExtenders(preemptor, lister, &candidates); !s.IsSuccess()) {
    return s;
  }
  if (candidates.empty()) {
    return framework::Status::Unschedulable("no candidate node for preemption");
  }
  const Candidate& best = candidates[PickOneNodeForPreemption(candidates)];
  std::vector<api::PodPtr> victims;
  victims.reserve(best.victims.size());
  for (const auto& victim : best.victims) victims.push_back(victim->pod);
  handle_.GetPreemptionMetrics().ObserveVictims(victims.size());
  executor_.Preempt(latest ? latest : std::make_shared<const api::Pod>(pod), best.node, victims);
  result->nominated_node_name = best.node;
  return framework::Status(framework::Code::kSuccess,
                           "found a potential placement for pod on node " + best.node +
                               ", preempting " + std::to_string(victims.size()) + " victims");
}

void DefaultPreemption::KeepVictimGangsWhole(const api::Pod& preemptor,
                                             const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                                             std::vector<Candidate>* candidates) const {
  // Where each pod is, looked up only when a victim belongs to a gang.
  std::unordered_map<std::string, framework::PodInfoPtr> by_uid;
  const framework::NodeInfoLister& lister = handle_.SnapshotSharedLister();
  auto find = [&](const std::string& uid) -> std::pair<framework::PodInfoPtr, size_t> {
    if (by_uid.empty()) {
      for (const auto& node : lister.List()) {
        for (const auto& p : node->pods()) by_uid.emplace(p->pod->meta.uid, p);
      }
    }
    auto it = by_uid.find(uid);
    return {it == by_uid.end() ? nullptr : it->second, 0};
  };
  VictimGangs gangs(handle_);
  std::vector<Candidate> kept;
  kept.reserve(candidates->size());
  for (Candidate& c : *candidates) {
    if (gangs.Extend(c, preemptor.spec.priority, {}, pdbs, find)) {
      kept.push_back(std::move(c));
    }
  }
  *candidates = std::move(kept);
}

framework::Status DefaultPreemption::CallExtenders(const api::Pod& pod,
                                                   const framework::NodeInfoLister& lister,
                                                   std::vector<Candidate>* candidates) const {
  const auto& extenders = handle_.Extenders();
  if (extenders.empty() || candidates->empty()) return {};
  std::map<std::string, framework::ExtenderVictims> victims;
  for (const Candidate& c : *candidates) {
    framework::ExtenderVictims& v = victims[c.node];
    v.pods = c.victims;
    v.num_pdb_violations = c.num_pdb_violations;
  }
  for (const auto& extender : extenders) {
    if (!extender->SupportsPreemption() || !extender->IsInterested(pod)) continue;
    std::map<std::string, framework::ExtenderVictims> answer;
    framework::Status s = extender->ProcessPreemption(pod, victims, lister, &answer);
    if (!s.IsSuccess()) {
      if (extender->IsIgnorable()) continue;
      return s;
    }
    // A node without victims is no candidate: an ignorable extender's such nodes are dropped,
    // anyone else's answer is wrong.
    for (auto it = answer.begin(); it != answer.end();) {
      if (!it->second.pods.empty()) {
        ++it;
        continue;
      }
      if (!extender->IsIgnorable()) {
        return framework::Status::Error("expected at least one victim pod on node \"" + it->first +
                                        "\"");
      }
      it = answer.erase(it);
    }
    victims = std::move(answer);
    if (victims.empty()) break;
  }
  candidates->clear();
  for (auto& [node, v] : victims) {
    candidates->push_back({node, std::move(v.pods), v.num_pdb_violations});
  }
  return {};
}

framework::Status DefaultPreemption::DryRun(const framework::CycleState& state, const api::Pod& pod,
                                            const std::vector<const framework::NodeInfo*>& nodes,
                                            const std::vector<api::PodDisruptionBudgetPtr>& pdbs,
                                            int32_t offset, int32_t wanted,
                                            std::vector<Candidate>* candidates,
                                            framework::NodeToStatus* statuses) {
  const int n = static_cast<int>(nodes.size());
  auto node_at = [&](int i) { return nodes[static_cast<size_t>((offset + i) % n)]; };
  std::vector<Trial> trials(static_cast<size_t>(n));
  auto try_node = [&](int i) {
    const framework::NodeInfo& node = *node_at(i);
    Trial& trial = trials[static_cast<size_t>(i)];
    // Copies: victims are removed from these, and each node's trial starts from the cycle's.
    std::unique_ptr<framework::CycleState> state_copy = state.Clone();
    std::shared_ptr<framework::NodeInfo> node_copy = node.Clone();
    trial.status = SelectVictimsOnNode(handle_, *state_copy, pod, *node_copy, pdbs, &trial.result);
    if (trial.status.IsSuccess() && trial.result.victims.empty()) {
      trial.status = framework::Status::Error("expected at least one victim pod on node \"" +
                                              node.name() + "\"");
    }
    trial.candidate = trial.status.IsSuccess();
    trial.done = true;
  };

  // Workers stop taking nodes once enough candidates were found, with at least one that violates
  // no budget.
  std::atomic<int> non_violating{0};
  std::atomic<int> violating{0};
  std::atomic<bool> stop{false};
  handle_.GetParallelizer().Until(
      n,
      [&](int i) {
        try_node(i);
        const Trial& trial = trials[static_cast<size_t>(i)];
        if (!trial.candidate) return;
        (trial.result.num_pdb_violations == 0 ? non_violating : violating)++;
        const int clean = non_violating.load();
        if (clean > 0 && clean + violating.load() >= wanted) stop = true;
      },
      &stop);

  // The outcome is read in node order, and the nodes a worker skipped before that order reaches
  // enough candidates are tried here: so the candidates do not depend on worker timing.
  std::vector<Candidate> clean;
  std::vector<Candidate> with_violations;
  std::string errors;
  for (int i = 0; i < n; i++) {
    if (!clean.empty() && static_cast<int32_t>(clean.size() + with_violations.size()) >= wanted) {
      break;
    }
    Trial& trial = trials[static_cast<size_t>(i)];
    if (!trial.done) try_node(i);
    if (trial.candidate) {
      auto& list = trial.result.num_pdb_violations == 0 ? clean : with_violations;
      if (static_cast<int32_t>(list.size()) < wanted) list.push_back(std::move(trial.result));
      continue;
    }
    if (trial.status.code() == framework::Code::kError) {
      errors += (errors.empty() ? "" : ", ") + trial.status.Message();
    }
    statuses->Set(node_at(i)->name(), std::move(trial.status));
  }
  candidates->clear();
  for (auto* list : {&clean, &with_violations}) {
    for (auto& c : *list) candidates->push_back(std::move(c));
  }
  if (!errors.empty()) return framework::Status::Error(errors);
  return {};
}

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  auto& informers = handle.SharedInformerFactory();
  return std::make_shared<DefaultPreemption>(ParseArgs(args), handle,
                                             informers.ListerFor<api::Pod>(),
                                             informers.ListerFor<api::PodDisruptionBudget>());
}

}  // namespace berth::plugins::defaultpreemption
