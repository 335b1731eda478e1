#include "pkg/plugins/coscheduling/coscheduling.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "pkg/api/requests.h"
#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/coscheduling/podgroup_source.h"
#include "pkg/plugins/coscheduling/workload_podgroup_source.h"

namespace berth::plugins::coscheduling {
namespace {

using framework::Code;
using framework::Status;
using json = nlohmann::json;

// Marks a cycle whose pod PreFilter turned away: its PostFilter is no failed attempt.
const framework::StateKey& RefusedKey() {
  static const framework::StateKey key("Coscheduling/refused");
  return key;
}
struct Refused : framework::StateData {
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<Refused>();
  }
};

// How messages name a gang: `pod group "ns/name"`.
std::string GangText(const GangKey& key) { return "pod group \"" + key.Display() + "\""; }

// The gang's members counting `pod`, which may not have reached the gang through the informer
// yet. Requires the state's lock.
int32_t MembersWith(const Gang* gang, const api::Pod& pod) {
  if (gang == nullptr) return 1;
  return static_cast<int32_t>(gang->members.size() + (gang->members.count(pod.meta.uid) ? 0 : 1));
}

std::string Amount(std::string_view resource, int64_t amount) {
  if (resource == api::kResourceCPU) {
    return amount % 1000 == 0 ? std::to_string(amount / 1000) : std::to_string(amount) + "m";
  }
  return std::to_string(amount);
}

// Each named amount of `need` that `have` lacks: "cpu 8 (6 free)".
std::string Shortfall(const api::ResourceList& need, const api::ResourceList& have) {
  std::string out;
  auto check = [&](std::string_view name, int64_t needed, int64_t free) {
    // A saturated minimum is more than int64 holds: never known to be free (kSaturatedAmount).
    if (needed <= free && needed != api::kSaturatedAmount) return;
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + Amount(name, needed) + " (" +
           Amount(name, std::max<int64_t>(free, 0)) + " free)";
  };
  check(api::kResourceCPU, need.milli_cpu, have.milli_cpu);
  check(api::kResourceMemory, need.memory, have.memory);
  check(api::kResourceEphemeralStorage, need.ephemeral_storage, have.ephemeral_storage);
  check(api::kResourcePods, need.pods, have.pods);
  for (const auto& [name, amount] : need.scalar) check(name, amount, have.Get(name));
  return out;
}

const char* PolicyName(api::PreemptionPolicy policy) {
  return policy == api::PreemptionPolicy::kNever ? "Never" : "PreemptLowerPriority";
}

// What of the pod differs from what its gang requires of every member; empty when nothing.
std::string Mismatch(const GangSpec& spec, const api::Pod& pod) {
  if (spec.priority && *spec.priority != pod.spec.priority) {
    return "requires priority " + std::to_string(*spec.priority) + " of its pods; pod \"" +
           pod.meta.name + "\" has " + std::to_string(pod.spec.priority);
  }
  if (spec.preemption_policy && *spec.preemption_policy != pod.spec.preemption_policy) {
    return std::string("requires preemptionPolicy ") + PolicyName(*spec.preemption_policy) +
           " of its pods; pod \"" + pod.meta.name + "\" has " +
           PolicyName(pod.spec.preemption_policy);
  }
  return "";
}

void ClampAtZero(api::ResourceList& list) {
  list.milli_cpu = std::max<int64_t>(list.milli_cpu, 0);
  list.memory = std::max<int64_t>(list.memory, 0);
  list.ephemeral_storage = std::max<int64_t>(list.ephemeral_storage, 0);
  list.pods = std::max<int64_t>(list.pods, 0);
  for (auto& [name, amount] : list.scalar) amount = std::max<int64_t>(amount, 0);
}

}  // namespace

const char* RejectionName(Rejection reason) {
  switch (reason) {
    case Rejection::kUnschedulable:
      return "Unschedulable";
    case Rejection::kTimeout:
      return "Timeout";
    case Rejection::kMemberDeleted:
      return "MemberDeleted";
    case Rejection::kMemberRejected:
      return "MemberRejected";
    case Rejection::kMinResources:
      return "MinResources";
  }
  return "Unknown";
}

Args ParseArgs(const json& args) {
  Args out;
  framework::ArgsErrors errors;
  if (errors.CheckObject(args, {"permitWaitingTimeSeconds", "podGroupBackoffSeconds",
                                "topologyPlacement", "podGroupPodsCountWeight",
                                "placementResourcesWeight", "percentageOfPlacementsToScore"})) {
    constexpr int64_t kMaxWait =
        std::chrono::duration_cast<std::chrono::seconds>(framework::kMaxPermitTimeout).count();
    constexpr int64_t kMaxBackoff = 3600;
    int64_t wait = out.permit_waiting_time.count();
    errors.ReadInt(args, "permitWaitingTimeSeconds", "", 1, kMaxWait,
                   "not in valid range [1, " + std::to_string(kMaxWait) + "]", &wait);
    out.permit_waiting_time = std::chrono::seconds(wait);
    int64_t backoff = out.pod_group_backoff.count();
    errors.ReadInt(args, "podGroupBackoffSeconds", "", 0, kMaxBackoff,
                   "not in valid range [0, " + std::to_string(kMaxBackoff) + "]", &backoff);
    out.pod_group_backoff = std::chrono::seconds(backoff);
    if (auto it = args.find("topologyPlacement"); it != args.end() && !it->is_null()) {
      if (it->is_boolean()) {
        out.topology_placement = it->get<bool>();
      } else {
        errors.Invalid("topologyPlacement", *it, "must be true or false");
      }
    }
    errors.ReadInt(args, "podGroupPodsCountWeight", "", 0, 100, "not in valid range [0, 100]",
                   &out.pods_count_weight);
    errors.ReadInt(args, "placementResourcesWeight", "", 0, 100, "not in valid range [0, 100]",
                   &out.resources_weight);
    int64_t percentage = out.percentage_of_placements_to_score;
    errors.ReadInt(args, "percentageOfPlacementsToScore", "", 0, 100, "not in valid range [0, 100]",
                   &percentage);
    out.percentage_of_placements_to_score = static_cast<int32_t>(percentage);
  }
  errors.ThrowIfAny();
  return out;
}

Coscheduling::Coscheduling(Args args, framework::Handle& handle,
                           std::vector<std::unique_ptr<GangSource>> sources)
    : args_(args),
      handle_(handle),
      state_(std::make_shared<GangState>(handle.ProfileName(), std::move(sources))),
      placer_(handle, PlacementWeights{args.pods_count_weight, args.resources_weight,
                                       args.percentage_of_placements_to_score > 0
                                           ? args.percentage_of_placements_to_score
                                           : kDefaultPercentageOfPlacements}) {
  if (prometheus::Registry* registry = handle.MetricsRegistry()) {
    const std::string& profile = handle.ProfileName();
    metrics_.waiting =
        &prometheus::BuildGauge()
             .Name("berth_gang_waiting_groups")
             .Help("Gangs whose placed pods wait at Permit for the rest of their minMember.")
             .Register(*registry)
             .Add({{"profile", profile}});
    auto& wait = prometheus::BuildHistogram()
                     .Name("berth_gang_wait_duration_seconds")
                     .Help(
                         "Time from a gang's first pod waiting at Permit until the gang was "
                         "allowed to bind (result=allowed) or rejected (result=rejected).")
                     .Register(*registry);
    const prometheus::Histogram::BucketBoundaries buckets = {
        0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900};
    metrics_.wait_allowed = &wait.Add({{"profile", profile}, {"result", "allowed"}}, buckets);
    metrics_.wait_rejected = &wait.Add({{"profile", profile}, {"result", "rejected"}}, buckets);
    auto& rejections = prometheus::BuildCounter()
                           .Name("berth_gang_rejections_total")
                           .Help("Gang attempts that ended without binding, by reason.")
                           .Register(*registry);
    for (size_t i = 0; i < kRejections; i++) {
      metrics_.rejections[i] = &rejections.Add(
          {{"profile", profile}, {"reason", RejectionName(static_cast<Rejection>(i))}});
    }
  }

  // The handlers share the state (which owns the sources): informers may call them after the
  // plugin is gone, and they then only keep books nobody reads.
  informer::EventHandler<api::Pod> pods;
  pods.on_add = [state = state_](const api::PodPtr& pod) { state->OnPod(nullptr, pod); };
  pods.on_update = [state = state_](const api::PodPtr& old_pod, const api::PodPtr& pod) {
    state->OnPod(old_pod, pod);
  };
  pods.on_delete = [state = state_](const api::PodPtr& pod) { state->OnPod(pod, nullptr); };
  handle.SharedInformerFactory().Pods().AddEventHandler(std::move(pods));
  for (const auto& source : state_->sources()) {
    source->OnChange([state = state_, source = source.get()](const std::string& namespace_,
                                                             const std::string& name) {
      state->OnGangChange(source, namespace_, name);
    });
  }
  worker_ = std::make_unique<GangWorker>(state_, handle_, std::string(kName));
}

Coscheduling::~Coscheduling() = default;

bool Coscheduling::Less(const framework::QueuedPodInfo& a,
                        const framework::QueuedPodInfo& b) const {
  const api::Pod& pa = a.pod();
  const api::Pod& pb = b.pod();
  if (pa.spec.priority != pb.spec.priority) return pa.spec.priority > pb.spec.priority;
  GangKeyView ka;
  GangKeyView kb;
  const bool ga = state_->ViewOf(pa, &ka);
  const bool gb = state_->ViewOf(pb, &kb);
  const SteadyClock::time_point ta = ga ? state_->SortTime(ka, a.timestamp) : a.timestamp;
  const SteadyClock::time_point tb = gb ? state_->SortTime(kb, b.timestamp) : b.timestamp;
  if (ta != tb) return ta < tb;
  // At the same time a gang's pods stay together; pods outside gangs sort as a gang of their own.
  const std::string_view na = ga ? ka.name : std::string_view();
  const std::string_view nb = gb ? kb.name : std::string_view();
  return std::tie(pa.meta.namespace_, na, pa.meta.name) <
         std::tie(pb.meta.namespace_, nb, pb.meta.name);
}

Status Coscheduling::Refuse(framework::CycleState& state, const GangKey& key,
                            const std::string& message, bool on_object) {
  state.Write(RefusedKey(), std::make_shared<Refused>());
  // Every refused attempt of every pod of the gang notes the same words: the recorder folds the
  // repeats into one Event's series. A dry run notes nothing.
  if (on_object && !state.dry_run) RecordEvent(key, "Warning", "FailedScheduling", message);
  return Status::Unresolvable(message);
}

Status Coscheduling::PreFilter(framework::CycleState& state, const api::Pod& pod,
                               const std::vector<framework::NodeInfoPtr>& nodes,
                               framework::PreFilterResult* result) {
  const std::optional<GangKey> key = state_->KeyOf(pod);
  if (!key) return Status::Skip();
  const std::string gang_text = GangText(*key);
  GangSpec spec;
  std::string why;
  switch (key->source->Get(key->namespace_, key->name, &spec, &why)) {
    case Lookup::kUnavailable:
      return Refuse(state, *key, gang_text + " cannot be read: " + why, false);
    case Lookup::kNotFound:
      return Refuse(state, *key, gang_text + " does not exist", false);
    case Lookup::kFound:
      break;
  }
  if (!spec.problem.empty()) {
    return Refuse(state, *key, gang_text + " is invalid: " + spec.problem, true);
  }
  if (std::string mismatch = Mismatch(spec, pod); !mismatch.empty()) {
    return Refuse(state, *key, gang_text + " " + mismatch, true);
  }

  bool check_resources = false;
  std::string too_few;
  {
    std::lock_guard lock(state_->mu);
    // A dry run reads the gang and leaves it as it is.
    Gang* gang = nullptr;
    if (state.dry_run) {
      if (auto it = state_->gangs.find(*key); it != state_->gangs.end()) gang = &it->second;
    } else {
      gang = &state_->gangs[*key];
      gang->min_member = spec.min_member;
    }
    const int32_t members = MembersWith(gang, pod);
    if (members < spec.min_member) {
      too_few = gang_text + " has " + std::to_string(members) + " of " +
                std::to_string(spec.min_member) + " required pods";
    } else if (gang != nullptr && SteadyClock::now() < gang->backoff_until) {
      if (!state.dry_run) gang->held.insert(pod.meta.uid);
      state.Write(RefusedKey(), std::make_shared<Refused>());
      return Status::Unresolvable(gang_text + " is backing off after a failed attempt");
    } else {
      check_resources =
          spec.min_resources.has_value() && (gang == nullptr || gang->assumed.empty());
    }
  }
  if (!too_few.empty()) return Refuse(state, *key, too_few, true);
  if (!check_resources) return InDomain(state, *key, spec, pod, nodes, result);
  const std::string missing = MissingResources(*key, spec, nodes);
  if (state.dry_run) {
    if (missing.empty()) return InDomain(state, *key, spec, pod, nodes, result);
    return Refuse(state, *key, gang_text + " needs more than the cluster has free: " + missing,
                  true);
  }
  bool first_refusal = false;
  {
    std::lock_guard lock(state_->mu);
    Gang& gang = state_->gangs[*key];
    first_refusal = !missing.empty() && !gang.min_resources_refused;
    gang.min_resources_refused = !missing.empty();
  }
  if (missing.empty()) return InDomain(state, *key, spec, pod, nodes, result);
  if (first_refusal && metrics_.rejections[static_cast<size_t>(Rejection::kMinResources)]) {
    metrics_.rejections[static_cast<size_t>(Rejection::kMinResources)]->Increment();
  }
  return Refuse(state, *key, gang_text + " needs more than the cluster has free: " + missing, true);
}

Status Coscheduling::InDomain(framework::CycleState& state, const GangKey& key,
                              const GangSpec& spec, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) {
  if (!spec.topology) return {};
  const std::string gang_text = GangText(key);
  if (!args_.topology_placement) {
    return Refuse(state, key,
                  gang_text +
                      " has a topology constraint, and topology placement "
                      "(TopologyPlacementGenerator) is disabled in this profile",
                  true);
  }
  // The domain, or while the attempt lacks its quorum the planned node: the simulation placed
  // every pod of the attempt together, and a pod placed elsewhere could leave no room for the
  // rest. Once the quorum is placed, later pods only keep to the domain.
  auto apply = [&](const TopologyPlan& plan, bool pin) -> Status {
    if (plan.key.empty()) return {};
    std::set<std::string> names;
    auto it = plan.node_of.find(pod.meta.uid);
    if (pin && plan.pinned && it != plan.node_of.end()) {
      names.insert(it->second);
    } else {
      names.insert(plan.nodes.begin(), plan.nodes.end());
    }
    result->node_names = std::move(names);
    return {};
  };
  {
    // A plan serves while some pod of the gang is placed by it or bound; with none (the gang's
    // pods deleted and made anew, say) it is stale, and the gang is planned again.
    std::lock_guard lock(state_->mu);
    auto it = state_->gangs.find(key);
    if (it != state_->gangs.end() && it->second.plan && it->second.Placed() > 0) {
      return apply(*it->second.plan, it->second.Placed() < it->second.min_member);
    }
  }
  PlacementRequest request;
  framework::PodGroupHint members = Members(key, spec, pod, &request.placed_nodes);
  request.topology = &*spec.topology;
  request.placed = members.placed;
  request.pending = std::move(members.pending);
  request.needed = spec.all_or_nothing ? std::max<int32_t>(1, spec.min_member - members.placed) : 1;
  request.ignored_plugin = std::string(kName);
  request.gang_text = gang_text;
  PlacementOutcome outcome = placer_.Place(request, nodes);
  if (outcome.plan) {
    if (state.dry_run) return apply(*outcome.plan, true);
    std::lock_guard lock(state_->mu);
    Gang& gang = state_->gangs[key];
    gang.plan = std::move(*outcome.plan);
    return apply(*gang.plan, gang.Placed() < gang.min_member);
  }
  // No domain can take the gang: its attempt fails here (and backs off), and preemption may look
  // for room; Coscheduling's own PostFilter has nothing left to do.
  state.Write(RefusedKey(), std::make_shared<Refused>());
  if (!state.dry_run) {
    std::vector<std::string> uids;
    {
      std::lock_guard lock(state_->mu);
      uids = RejectLocked(key, state_->gangs[key], outcome.failure, Rejection::kUnschedulable,
                          SteadyClock::now());
    }
    Release(key, uids, outcome.failure);
  }
  return Status::Unschedulable(outcome.failure);
}

std::string Coscheduling::MissingResources(const GangKey& key, const GangSpec& spec,
                                           const std::vector<framework::NodeInfoPtr>& nodes) const {
  api::ResourceList need = *spec.min_resources;
  need.pods = std::max<int64_t>(need.pods, spec.min_member);
  bool gang_on_nodes = false;
  {
    std::lock_guard lock(state_->mu);
    auto it = state_->gangs.find(key);
    gang_on_nodes = it != state_->gangs.end() && it->second.Placed() > 0;
  }
  // Exact across nodes: saturating adds would make a few huge nodes look like any amount free.
  api::ResourceSum free;
  for (const auto& node : nodes) {
    if (node == nullptr || node->node() == nullptr) continue;
    api::ResourceList left = node->allocatable();
    int64_t gang_pods = 0;
    // The gang's own pods hold room that is the gang's to use. They come out of the node's exact
    // sum before it is clamped: adding them back to a clamped sum would count room twice where
    // the node's requests sum past int64.
    std::optional<api::ResourceSum> others;
    if (gang_on_nodes) {
      for (const auto& pod : node->pods()) {
        GangKeyView view;
        if (state_->ViewOf(*pod->pod, &view) && view.source == key.source &&
            view.namespace_ == key.namespace_ && view.name == key.name) {
          if (!others) others = node->requested_sum();
          others->Subtract(pod->pod->requests);
          gang_pods++;
        }
      }
    }
    left.Subtract(others ? others->clamped() : node->requested());
    left.pods = node->allocatable().pods - static_cast<int64_t>(node->pods().size()) + gang_pods;
    ClampAtZero(left);
    free.Add(left);
  }
  return Shortfall(need, free.clamped());
}

void Coscheduling::EndWaitLocked(Gang& gang, bool allowed, SteadyClock::time_point now) {
  if (!gang.wait_started) return;
  if (metrics_.waiting) {
    metrics_.waiting->Decrement();
    (allowed ? metrics_.wait_allowed : metrics_.wait_rejected)
        ->Observe(std::chrono::duration<double>(now - *gang.wait_started).count());
  }
  gang.wait_started.reset();
}

std::vector<std::string> Coscheduling::RejectLocked(const GangKey& key, Gang& gang,
                                                    const std::string& message, Rejection reason,
                                                    SteadyClock::time_point now) {
  std::vector<std::string> uids;
  for (auto it = gang.assumed.begin(); it != gang.assumed.end();) {
    if (it->second.allowed) {
      ++it;
      continue;
    }
    uids.push_back(it->first);
    it = gang.assumed.erase(it);
  }
  gang.plan.reset();
  gang.last_rejection = message;
  EndWaitLocked(gang, false, now);
  state_->RecordFailureLocked(
      key, gang, now,
      std::chrono::duration_cast<std::chrono::milliseconds>(args_.pod_group_backoff));
  if (auto* counter = metrics_.rejections[static_cast<size_t>(reason)]) counter->Increment();
  return uids;
}

void Coscheduling::Release(const GangKey& key, const std::vector<std::string>& uids,
                           const std::string& message) {
  std::vector<std::string> unreached;
  for (const std::string& uid : uids) {
    if (auto waiting = handle_.GetWaitingPod(uid)) {
      waiting->Reject(std::string(kName), message);
    } else {
      unreached.push_back(uid);
    }
  }
  if (!unreached.empty()) {
    // Between this pod's Permit and its parking: the worker rejects it once it is parked.
    std::lock_guard lock(state_->mu);
    for (std::string& uid : unreached) {
      state_->orphans.push_back(
          {key, std::move(uid), message, SteadyClock::now() + GangWorker::kOrphanRetry, 0});
    }
    state_->wake.notify_all();
  }
  RecordEvent(key, "Warning", "FailedScheduling", message);
}

Status Coscheduling::PostFilter(framework::CycleState& state, const api::Pod& pod,
                                const framework::NodeToStatus&, framework::PostFilterResult*) {
  const std::optional<GangKey> key = state_->KeyOf(pod);
  // Rejected without a reason: nothing to add to the pod's own, and the next PostFilter runs.
  auto no_help = [] { return Status(Code::kUnschedulable, std::vector<std::string>{}); };
  // Not attempted at all (PreFilter turned it away): nothing of the gang failed.
  if (!key || state.Read<Refused>(RefusedKey()) != nullptr) return no_help();
  GangSpec spec;
  std::string why;
  if (key->source->Get(key->namespace_, key->name, &spec, &why) == Lookup::kFound &&
      !spec.all_or_nothing) {
    return no_help();
  }
  const auto now = SteadyClock::now();
  std::string message;
  std::vector<std::string> uids;
  {
    std::lock_guard lock(state_->mu);
    Gang& gang = state_->gangs[*key];
    const int32_t placed = gang.Placed();
    // The gang has its quorum: this pod waits for room like any other pod.
    if (placed >= gang.min_member) return no_help();
    message = GangText(*key) + " rejected: pod \"" + pod.meta.name + "\" fits no node, with " +
              std::to_string(placed) + " of " + std::to_string(gang.min_member) +
              " required pods placed";
    uids = RejectLocked(*key, gang, message, Rejection::kUnschedulable, now);
  }
  Release(*key, uids, message);
  return Status::Unschedulable(message);
}

Status Coscheduling::Reserve(framework::CycleState&, const api::Pod& pod, const std::string& node) {
  const std::optional<GangKey> key = state_->KeyOf(pod);
  if (!key) return {};
  std::lock_guard lock(state_->mu);
  Gang& gang = state_->gangs[*key];
  gang.assumed[pod.meta.uid] = Placement{pod.meta.name, false, SteadyClock::now(), {}, node};
  if (!gang.schedule_start) gang.schedule_start = std::chrono::system_clock::now();
  gang.min_resources_refused = false;
  state_->MarkDirtyLocked(*key);
  return {};
}

Status Coscheduling::Permit(framework::CycleState&, const api::Pod& pod, const std::string&,
                            std::chrono::milliseconds* timeout) {
  const std::optional<GangKey> key = state_->KeyOf(pod);
  if (!key) return {};
  const std::string gang_text = GangText(*key);
  GangSpec spec;
  std::string why;
  switch (key->source->Get(key->namespace_, key->name, &spec, &why)) {
    case Lookup::kUnavailable:
      return Status::Unresolvable(gang_text + " cannot be read: " + why);
    case Lookup::kNotFound:
      return Status::Unresolvable(gang_text + " does not exist");
    case Lookup::kFound:
      break;
  }
  if (!spec.problem.empty())
    return Status::Unresolvable(gang_text + " is invalid: " + spec.problem);
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
      spec.wait.value_or(args_.permit_waiting_time));
  const auto now = SteadyClock::now();
  std::vector<std::string> allow;
  std::vector<std::string> siblings;
  bool waits = false;
  bool quorum = false;
  std::string turned_away_message;
  std::vector<std::string> released;
  {
    std::lock_guard lock(state_->mu);
    Gang& gang = state_->gangs[*key];
    gang.min_member = spec.min_member;
    auto self = gang.assumed.find(pod.meta.uid);
    if (self == gang.assumed.end()) {
      // The attempt was rejected between this pod's Reserve and now.
      return Status::Unschedulable(gang.last_rejection.empty() ? gang_text + " rejected"
                                                               : gang.last_rejection);
    }
    state_->MarkDirtyLocked(*key);
    if (gang.Placed() >= gang.min_member) {
      for (const auto& [uid, placement] : gang.assumed) {
        if (!placement.allowed && uid != pod.meta.uid) allow.push_back(uid);
      }
      // Under the lock, and all or none: a waiting pod that a timeout, a preemption or its
      // deletion turned away still counts as placed until its Unreserve runs, and allowing the
      // rest would bind the gang short.
      const std::string turned_away = handle_.AllowWaitingPods(allow, std::string(kName));
      if (!turned_away.empty()) {
        auto member = gang.members.find(turned_away);
        turned_away_message = gang_text + " rejected: pod \"" +
                              (member == gang.members.end() ? turned_away : member->second.first) +
                              "\" was turned away while waiting";
        released = RejectLocked(*key, gang, turned_away_message, Rejection::kMemberRejected, now);
      } else {
        for (auto& [uid, placement] : gang.assumed) placement.allowed = true;
        // Pods were waiting: this one completes the gang. Otherwise it is one more pod of a gang
        // that had its quorum already.
        quorum = gang.wait_started.has_value();
        EndWaitLocked(gang, true, now);
      }
    } else {
      waits = true;
      self->second.since = now;
      self->second.wait = wait;
      if (!gang.wait_started) {
        gang.wait_started = now;
        if (metrics_.waiting) metrics_.waiting->Increment();
        // The rest of the gang is tried right after this pod rather than after its backoff.
        siblings = GangState::PendingLocked(gang);
      }
    }
  }
  if (waits) {
    handle_.Activate(siblings);
    *timeout = wait;
    return Status::Wait();
  }
  if (!turned_away_message.empty()) {
    Release(*key, released, turned_away_message);
    return Status::Unschedulable(turned_away_message);
  }
  if (quorum) {
    RecordEvent(*key, "Normal", "Scheduled",
                "all " + std::to_string(spec.min_member) + " required pods placed; binding them");
  }
  return {};
}

void Coscheduling::Unreserve(framework::CycleState&, const api::Pod& pod, const std::string&) {
  const std::optional<GangKey> key = state_->KeyOf(pod);
  if (!key) return;
  const auto now = SteadyClock::now();
  std::string message;
  std::vector<std::string> uids;
  {
    std::lock_guard lock(state_->mu);
    auto it = state_->gangs.find(*key);
    if (it == state_->gangs.end()) return;
    Gang& gang = it->second;
    auto self = gang.assumed.find(pod.meta.uid);
    // Already taken back with its gang's attempt.
    if (self == gang.assumed.end()) return;
    const Placement placement = self->second;
    const int32_t placed = gang.Placed();
    gang.assumed.erase(self);
    state_->MarkDirtyLocked(*key);
    // Allowed to bind and failed to: the gang keeps its quorum; the pod is retried on its own.
    if (placement.allowed) return;
    Rejection reason = Rejection::kMemberRejected;
    message = GangText(*key) + " rejected: ";
    if (gang.members.count(pod.meta.uid) == 0) {
      reason = Rejection::kMemberDeleted;
      message += "pod \"" + pod.meta.name + "\" was deleted while waiting";
    } else if (placement.wait.count() > 0 && now - placement.since >= placement.wait) {
      reason = Rejection::kTimeout;
      message +=
          std::to_string(placed) + " of " + std::to_string(gang.min_member) +
          " required pods were placed within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(placement.wait).count()) +
          "s";
    } else {
      message += "pod \"" + pod.meta.name + "\" could not be placed";
    }
    uids = RejectLocked(*key, gang, message, reason, now);
  }
  Release(*key, uids, message);
}

std::vector<framework::PodChange> Coscheduling::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod, std::span<const framework::NodeInfo* const>,
    std::span<const framework::Status* const>, const framework::Status* pre_filter) const {
  if (pre_filter == nullptr) return {};
  const std::optional<GangKey> key = state_->KeyOf(pod);
  if (!key) return {};
  GangSpec spec;
  std::string why;
  framework::PodChange change;
  switch (key->source->Get(key->namespace_, key->name, &spec, &why)) {
    case Lookup::kUnavailable:
      return {};
    case Lookup::kNotFound:
      change.description = "create " + GangText(*key);
      return {std::move(change)};
    case Lookup::kFound:
      break;
  }
  int32_t members = 0;
  {
    std::lock_guard lock(state_->mu);
    auto it = state_->gangs.find(*key);
    members = MembersWith(it == state_->gangs.end() ? nullptr : &it->second, pod);
  }
  if (members >= spec.min_member) return {};
  const int32_t lacking = spec.min_member - members;
  change.description = GangText(*key) + " lacks " + std::to_string(lacking) +
                       (lacking == 1 ? " pod" : " pods") + ": it has " + std::to_string(members) +
                       " of minMember " + std::to_string(spec.min_member);
  return {std::move(change)};
}

std::optional<framework::PodGroupHint> Coscheduling::GroupOf(const api::Pod& pod) const {
  return Group(pod, false);
}

std::optional<framework::PodGroupHint> Coscheduling::VictimGroupOf(const api::Pod& pod) const {
  return Group(pod, true);
}

std::optional<framework::PodGroupHint> Coscheduling::Group(const api::Pod& pod,
                                                           bool as_victim) const {
  const std::optional<GangKey> key = state_->KeyOf(pod);
  if (!key) return std::nullopt;
  GangSpec spec;
  std::string why;
  if (key->source->Get(key->namespace_, key->name, &spec, &why) != Lookup::kFound ||
      !spec.problem.empty()) {
    return std::nullopt;
  }
  // A basic group's pods are placed one by one whatever its disruption mode; only a preemption
  // that takes one of them must take the rest when they may only be disrupted together.
  if (!spec.all_or_nothing && !(as_victim && spec.disrupted_whole)) return std::nullopt;
  return Members(*key, spec, pod, nullptr);
}

framework::PodGroupHint Coscheduling::Members(const GangKey& key, const GangSpec& spec,
                                              const api::Pod& pod,
                                              std::vector<std::string>* placed_nodes) const {
  framework::PodGroupHint group;
  group.name = GangText(key);
  group.min_member = spec.min_member;
  if (spec.topology) group.topology = *spec.topology;
  group.disrupted_whole = spec.disrupted_whole;
  std::vector<std::string> names;
  std::vector<std::string> bound_names;
  bool pod_placed = false;
  {
    std::lock_guard lock(state_->mu);
    if (auto it = state_->gangs.find(key); it != state_->gangs.end()) {
      const Gang& gang = it->second;
      group.placed = gang.Placed();
      for (const auto& [uid, member] : gang.members) {
        const auto& [name, bound] = member;
        const bool placed = bound || gang.assumed.contains(uid);
        if (placed) group.placed_uids.push_back(uid);
        if (bound) bound_names.push_back(name);
        if (uid == pod.meta.uid) {
          pod_placed = placed;
        } else if (!placed) {
          names.push_back(name);
        }
      }
      if (placed_nodes != nullptr) {
        for (const auto& [uid, placement] : gang.assumed) placed_nodes->push_back(placement.node);
      }
    }
  }
  if (!pod_placed) group.pending.push_back(std::make_shared<const api::Pod>(pod));
  // The handle is not called under the lock.
  std::sort(names.begin(), names.end());
  const auto& pods = handle_.SharedInformerFactory().Pods().store();
  for (const auto& name : names) {
    api::PodPtr member = pods.Get(key.namespace_ + "/" + name);
    if (member && member->spec.node_name.empty()) group.pending.push_back(std::move(member));
  }
  if (placed_nodes != nullptr) {
    for (const auto& name : bound_names) {
      api::PodPtr member = pods.Get(key.namespace_ + "/" + name);
      if (member && !member->spec.node_name.empty())
        placed_nodes->push_back(member->spec.node_name);
    }
  }
  return group;
}

std::vector<framework::ClusterEventWithHint> Coscheduling::EventsToRegister() const {
  std::vector<framework::ClusterEventWithHint> events;
  for (const auto& source : state_->sources()) {
    for (auto& event : source->Events()) events.push_back(std::move(event));
  }
  // Room that may let a gang fit: a node added or grown, a pod gone. The gang's own pods that an
  // attempt gave back are no such room.
  events.push_back({{framework::EventResource::kNode,
                     framework::kAdd | framework::kUpdateNodeAllocatable, "NodeAddOrGrow"},
                    nullptr});
  events.push_back({{framework::EventResource::kPod, framework::kDelete, "AssignedPodDelete"},
                    [state = state_](const api::Pod& pod, const framework::EventObjects& objects) {
                      GangKeyView mine;
                      GangKeyView theirs;
                      if (objects.old_pod && state->ViewOf(pod, &mine) &&
                          state->ViewOf(*objects.old_pod, &theirs) &&
                          mine.source == theirs.source && mine.namespace_ == theirs.namespace_ &&
                          mine.name == theirs.name) {
                        return framework::QueueingHint::kSkip;
                      }
                      return framework::QueueingHint::kQueue;
                    }});
  return events;
}

void Coscheduling::RecordEvent(const GangKey& key, const std::string& type,
                               const std::string& reason, const std::string& note) {
  handle_.GetEventRecorder().Eventf(key.source->Reference(key.namespace_, key.name), type, reason,
                                    "Scheduling", note);
}

std::vector<std::unique_ptr<GangSource>> DefaultSources(framework::Handle& handle) {
  std::vector<std::unique_ptr<GangSource>> sources;
  // The pod's own field first: a pod that names an upstream PodGroup is never taken for one
  // outside it, whatever its labels say.
  sources.push_back(
      std::make_unique<WorkloadPodGroupSource>(handle.SharedInformerFactory(), handle.ClientSet()));
  sources.push_back(
      std::make_unique<PodGroupSource>(handle.SharedInformerFactory(), handle.ClientSet()));
  return sources;
}

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  return std::make_shared<Coscheduling>(ParseArgs(args), handle, DefaultSources(handle));
}

}  // namespace berth::plugins::coscheduling
