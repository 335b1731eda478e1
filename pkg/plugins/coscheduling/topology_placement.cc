#include "pkg/plugins/coscheduling/topology_placement.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>

namespace berth::plugins::coscheduling {
namespace {

using framework::NodeInfo;
using framework::Status;

// One pending pod of the gang, with its PreFilter run once (the gang's plugin left out) and
// replayed into each domain's simulation.
struct Member {
  api::PodPtr pod;
  std::unique_ptr<framework::CycleState> state;
  framework::PreFilterResult pre;
  bool usable = false;
  // Whether a PreFilter extension reads `state` and so must be told of the pods placed before.
  bool replays = false;
};

struct Domain {
  std::string value;
  // Indexes into the nodes given to Place.
  const std::vector<int32_t>* nodes = nullptr;
  // How full its nodes would be with the gang's needed pods added (the larger of cpu and
  // memory, as a share): the order domains are tried in, tightest first.
  double tightness = 0;
};

struct Trial {
  const Domain* domain = nullptr;
  int32_t fit = 0;
  std::unordered_map<std::string, std::string> node_of;
  // NodeResourcesFit's MostAllocated over the domain with the simulated pods, 0..100.
  int64_t resources_score = 0;
};

// requested over allocatable as a score of 0..100 (requests past allocatable count as full).
int64_t Share(double requested, double allocatable) {
  if (allocatable <= 0) return 0;
  return static_cast<int64_t>(std::min(requested, allocatable) * 100 / allocatable);
}

// Sums in double: amounts near 2^63 on many nodes must not overflow, and a score needs no more
// precision than that.
int64_t MostAllocated(const std::vector<const NodeInfo*>& nodes) {
  double cpu_requested = 0, cpu_allocatable = 0, memory_requested = 0, memory_allocatable = 0;
  for (const auto& node : nodes) {
    cpu_requested += static_cast<double>(node->requested().milli_cpu);
    cpu_allocatable += static_cast<double>(node->allocatable().milli_cpu);
    memory_requested += static_cast<double>(node->requested().memory);
    memory_allocatable += static_cast<double>(node->allocatable().memory);
  }
  return (Share(cpu_requested, cpu_allocatable) + Share(memory_requested, memory_allocatable)) / 2;
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

const TopologyPlacer::DomainIndex& TopologyPlacer::IndexFor(
    const std::string& key, const std::vector<framework::NodeInfoPtr>& nodes) const {
  DomainIndex& index = indexes_[key];
  bool current = index.nodes.size() == nodes.size();
  for (size_t i = 0; current && i < nodes.size(); i++) {
    current = index.nodes[i] == nodes[i]->node_ptr();
  }
  if (current) return index;
  index = DomainIndex{};
  index.nodes.reserve(nodes.size());
  index.domain_of.reserve(nodes.size());
  std::unordered_map<std::string_view, int32_t> seen;
  for (const auto& node : nodes) {
    index.nodes.push_back(node->node_ptr());
    const std::string* value = node->node() ? node->node()->meta.labels.Find(key) : nullptr;
    if (value == nullptr) {
      index.domain_of.push_back(-1);
      continue;
    }
    // Views into the node objects the index holds.
    auto [it, added] = seen.emplace(*value, static_cast<int32_t>(index.values.size()));
    if (added) {
      index.values.push_back(*value);
      index.members.emplace_back();
    }
    index.domain_of.push_back(it->second);
    index.members[static_cast<size_t>(it->second)].push_back(
        static_cast<int32_t>(index.domain_of.size() - 1));
  }
  return index;
}

PlacementOutcome TopologyPlacer::Place(const PlacementRequest& request,
                                       const std::vector<framework::NodeInfoPtr>& nodes) const {
  PlacementOutcome outcome;
  const api::PodGroupTopology& topology = *request.topology;

  std::vector<Member> members;
  members.reserve(request.pending.size());
  const framework::PluginName ignored(request.ignored_plugin);
  for (const api::PodPtr& pod : request.pending) {
    Member m;
    m.pod = pod;
    m.state = std::make_unique<framework::CycleState>();
    m.state->dry_run = true;
    m.state->ignored_plugins.insert(ignored);
    m.usable = handle_.RunPreFilterForPod(*m.state, *pod, &m.pre).IsSuccess() &&
               pod->spec.scheduling_gates.empty() && !pod->IsTerminating();
    m.replays = m.usable && handle_.HasActivePreFilterExtensions(*m.state);
    members.push_back(std::move(m));
  }
  // What the needed pods ask for in all: a domain with less free than that cannot take them.
  double need_cpu = 0, need_memory = 0;
  int32_t counted = 0;
  for (const Member& m : members) {
    if (!m.usable || counted >= request.needed) continue;
    need_cpu += static_cast<double>(m.pod->requests.milli_cpu);
    need_memory += static_cast<double>(m.pod->requests.memory);
    counted++;
  }
  std::unordered_set<std::string_view> pending_uids;
  int32_t priority = 0;
  for (const api::PodPtr& pod : request.pending) {
    pending_uids.insert(pod->meta.uid);
    priority =
        pending_uids.size() == 1 ? pod->spec.priority : std::min(priority, pod->spec.priority);
  }
  // Only a gang with pods placed already needs nodes by name.
  std::unordered_map<std::string_view, const NodeInfo*> by_name;
  if (!request.placed_nodes.empty()) {
    for (const auto& node : nodes) by_name.emplace(node->name(), node.get());
  }
  std::lock_guard lock(mu_);

  // One domain's simulation: the members in turn, each where Filter and Score put it among the
  // domain's nodes as the earlier ones left them. Stops once too few members can still fit.
  auto simulate = [&](const Domain& domain) {
    Trial trial;
    trial.domain = &domain;
    // The domain's nodes as the simulation leaves them: the snapshot's until a pod is added, then
    // a copy (most nodes of a domain take none of a small gang's pods).
    std::vector<const NodeInfo*> work;
    std::vector<std::shared_ptr<NodeInfo>> copies(domain.nodes->size());
    work.reserve(domain.nodes->size());
    for (int32_t i : *domain.nodes) work.push_back(nodes[static_cast<size_t>(i)].get());
    auto writable = [&](size_t k) -> NodeInfo& {
      if (!copies[k]) {
        copies[k] = work[k]->Clone();
        work[k] = copies[k].get();
      }
      return *copies[k];
    };
    // Pods nominated to the domain's nodes (by preemption) that are not the gang's own hold their
    // room: they go in the copies first, as pods the members must fit beside. The gang's own
    // nominations are where its members will go, and must not count twice.
    std::vector<std::pair<framework::PodInfoPtr, size_t>> added;
    if (handle_.Nominator().HasNominatedPods()) {
      for (size_t i = 0; i < work.size(); i++) {
        for (auto& p : handle_.Nominator().NominatedPodsForNode(work[i]->name())) {
          if (pending_uids.contains(p->pod->meta.uid) || p->pod->spec.priority < priority) continue;
          writable(i).AddPod(p);
          added.emplace_back(std::move(p), i);
        }
      }
    }
    const auto total = static_cast<int32_t>(members.size());
    int32_t tried = 0;
    // Reused from member to member: a domain's simulation runs Filter and Score once per member,
    // and allocating these (a score entry per node, each with a vector per plugin) for every one
    // of a large gang's members cost more than the scoring itself.
    std::vector<char> fits;
    std::vector<const NodeInfo*> feasible;
    std::vector<size_t> feasible_index;
    std::vector<framework::NodePluginScores> scores;
    for (const Member& m : members) {
      tried++;
      const int32_t left = total - tried;
      auto failed = [&] { return trial.fit + left < request.needed; };
      if (!m.usable) {
        if (failed()) return trial;
        continue;
      }
      std::unique_ptr<framework::CycleState> state = m.state->Clone();
      // Telling the member's state of every pod placed before it is quadratic in the gang's size;
      // a member whose state no PreFilter extension reads (no affinity, no spread) skips it.
      if (m.replays) {
        for (const auto& [info, index] : added) {
          if (!handle_.RunPreFilterExtensionAddPod(*state, *m.pod, *info, *work[index])
                   .IsSuccess()) {
            return trial;
          }
        }
      }
      fits.assign(work.size(), 0);
      handle_.GetParallelizer().Until(static_cast<int>(work.size()), [&](int i) {
        const NodeInfo& node = *work[static_cast<size_t>(i)];
        if (!m.pre.AllNodes() && !m.pre.node_names->contains(node.name())) return;
        fits[static_cast<size_t>(i)] =
            handle_.RunFilterPlugins(*state, *m.pod, node, i).IsSuccess() ? 1 : 0;
      });
      feasible.clear();
      feasible_index.clear();
      for (size_t i = 0; i < work.size(); i++) {
        if (fits[i] == 0) continue;
        feasible.push_back(work[i]);
        feasible_index.push_back(i);
      }
      if (feasible.empty()) {
        if (failed()) return trial;
        continue;
      }
      size_t chosen = 0;
      if (feasible.size() > 1 && handle_.RunPreScorePlugins(*state, *m.pod, feasible).IsSuccess()) {
        if (handle_.RunScorePlugins(*state, *m.pod, feasible, &scores).IsSuccess() &&
            scores.size() == feasible.size()) {
          for (size_t i = 1; i < scores.size(); i++) {
            if (scores[i].total > scores[chosen].total) chosen = i;
          }
        }
      }
      const size_t index = feasible_index[chosen];
      auto copy = std::make_shared<api::Pod>(*m.pod);
      copy->spec.node_name = work[index]->name();
      copy->status.nominated_node_name.clear();
      auto info = std::make_shared<const framework::PodInfo>(std::move(copy));
      writable(index).AddPod(info);
      added.emplace_back(std::move(info), index);
      trial.node_of[m.pod->meta.uid] = work[index]->name();
      trial.fit++;
    }
    trial.resources_score = MostAllocated(work);
    return trial;
  };

  std::vector<std::string> failures;
  for (const std::string& key : topology.keys) {
    // The gang's placed pods fix its domain: all of them must be in one.
    std::optional<std::string> required;
    bool split = false;
    for (const std::string& name : request.placed_nodes) {
      auto it = by_name.find(name);
      const std::string* value = it == by_name.end() || it->second->node() == nullptr
                                     ? nullptr
                                     : it->second->node()->meta.labels.Find(key);
      if (value == nullptr || (required && *required != *value)) {
        split = true;
        break;
      }
      required = *value;
    }
    if (split) {
      failures.push_back("its placed pods are not in one domain of " + Quoted(key));
      continue;
    }
    const DomainIndex& index = IndexFor(key, nodes);
    std::vector<Domain> domains;
    domains.reserve(index.values.size());
    for (size_t d = 0; d < index.values.size(); d++) {
      if (required && *required != index.values[d]) continue;
      domains.push_back({index.values[d], &index.members[d], 0});
    }
    // Ties in tightness go to the lower value, whatever order the nodes came in.
    std::sort(domains.begin(), domains.end(),
              [](const Domain& a, const Domain& b) { return a.value < b.value; });
    if (domains.empty()) {
      failures.push_back(required ? "the domain " + Quoted(*required) + " of " + Quoted(key) +
                                        " has no nodes left"
                                  : "no node has the label " + Quoted(key));
      continue;
    }
    std::vector<Domain*> candidates;
    for (Domain& d : domains) {
      double free_cpu = 0, free_memory = 0, cpu = 0, memory = 0;
      int64_t free_pods = 0;
      for (int32_t i : *d.nodes) {
        const NodeInfo& node = *nodes[static_cast<size_t>(i)];
        const double alloc_cpu = static_cast<double>(node.allocatable().milli_cpu);
        const double alloc_memory = static_cast<double>(node.allocatable().memory);
        cpu += alloc_cpu;
        memory += alloc_memory;
        free_cpu += std::max(0.0, alloc_cpu - static_cast<double>(node.requested().milli_cpu));
        free_memory += std::max(0.0, alloc_memory - static_cast<double>(node.requested().memory));
        // Saturating: nodes of near int64-max pod slots must not wrap the sum below the gang's
        // size and prune a domain that holds it.
        const int64_t slots = node.allocatable().pods;
        const auto used = static_cast<int64_t>(node.pods().size());
        const int64_t left = slots > used ? slots - used : 0;
        free_pods = free_pods > std::numeric_limits<int64_t>::max() - left
                        ? std::numeric_limits<int64_t>::max()
                        : free_pods + left;
      }
      if (free_cpu < need_cpu || free_memory < need_memory || free_pods < request.needed) {
        outcome.pruned++;
        continue;
      }
      const double used_cpu = cpu > 0 ? (cpu - free_cpu + need_cpu) / cpu : 0;
      const double used_memory = memory > 0 ? (memory - free_memory + need_memory) / memory : 0;
      d.tightness = std::max(used_cpu, used_memory);
      candidates.push_back(&d);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Domain* a, const Domain* b) { return a->tightness > b->tightness; });
    const auto share = static_cast<size_t>(
        (candidates.size() * static_cast<size_t>(weights_.percentage_to_score) + 99) / 100);
    const size_t enough = std::max<size_t>(1, share);
    std::vector<Trial> feasible;
    Trial closest;
    for (const Domain* d : candidates) {
      Trial trial = simulate(*d);
      outcome.simulated++;
      if (trial.fit >= request.needed) {
        feasible.push_back(std::move(trial));
        if (feasible.size() >= enough) break;
      } else if (closest.domain == nullptr || trial.fit > closest.fit) {
        closest = std::move(trial);
      }
    }
    if (feasible.empty()) {
      std::string failure = "0/" + std::to_string(domains.size()) + " domains of " + Quoted(key) +
                            " can take " + std::to_string(request.needed) +
                            (request.needed == 1 ? " pod" : " pods");
      if (closest.domain != nullptr && closest.fit > 0) {
        failure += " (" + Quoted(closest.domain->value) + " came closest, with " +
                   std::to_string(closest.fit) + ")";
      }
      failures.push_back(std::move(failure));
      continue;
    }
    // The placement scores: pods the domain takes (normalized to the most any feasible domain
    // takes) and how full it leaves its nodes; the tighter, then the name, breaks ties.
    int64_t most = 0;
    for (const Trial& t : feasible) most = std::max<int64_t>(most, request.placed + t.fit);
    size_t best = 0;
    int64_t best_total = -1;
    for (size_t i = 0; i < feasible.size(); i++) {
      const Trial& t = feasible[i];
      const int64_t pods =
          most > 0 ? (request.placed + t.fit) * framework::kMaxNodeScore / most : 0;
      const int64_t total = weights_.pods_count * pods + weights_.resources * t.resources_score;
      const Trial& b = feasible[best];
      if (best_total < 0 || total > best_total ||
          (total == best_total &&
           (t.resources_score > b.resources_score ||
            (t.resources_score == b.resources_score && t.domain->value < b.domain->value)))) {
        best = i;
        best_total = total;
      }
    }
    Trial& chosen = feasible[best];
    TopologyPlan plan;
    plan.key = key;
    plan.domain = chosen.domain->value;
    for (int32_t i : *chosen.domain->nodes)
      plan.nodes.insert(nodes[static_cast<size_t>(i)]->name());
    plan.node_of = std::move(chosen.node_of);
    plan.pinned =
        std::none_of(request.pending.begin(), request.pending.end(),
                     [](const api::PodPtr& p) { return !p->status.nominated_node_name.empty(); });
    outcome.plan = std::move(plan);
    return outcome;
  }
  if (topology.preferred) {
    outcome.plan = TopologyPlan{};
    return outcome;
  }
  std::string text = request.gang_text + " fits in no single topology domain: ";
  for (size_t i = 0; i < failures.size(); i++) text += (i > 0 ? "; " : "") + failures[i];
  outcome.failure = std::move(text);
  return outcome;
}

}  // namespace berth::plugins::coscheduling
