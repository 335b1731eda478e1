#include "pkg/plugins/interpodaffinity/interpodaffinity.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"

namespace berth::plugins::interpodaffinity {
namespace {

using nlohmann::json;

constexpr int64_t kMaxHardPodAffinityWeight = 100;
// The three maps of the filter state.
constexpr size_t kExisting = 0, kAffinity = 1, kAntiAffinity = 2;

const framework::StateKey& PreFilterKey() {
  static const framework::StateKey key("PreFilterInterPodAffinity");
  return key;
}

const framework::StateKey& PreScoreKey() {
  static const framework::StateKey key("PreScoreInterPodAffinity");
  return key;
}

const framework::StateKey& SyncedKey() {
  static const framework::StateKey key("SyncedInterPodAffinity");
  return key;
}

// Marks a cycle whose snapshot the plugin's NodeListTracker was synced with, at this epoch: the
// snapshot does not change within a cycle, so PreScore need not compare it again after PreFilter.
class Synced final : public framework::StateData {
 public:
  explicit Synced(uint64_t epoch) : epoch(epoch) {}
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<Synced>(*this);
  }
  const uint64_t epoch;
};

const TopologyCounts& NoCounts() {
  static const TopologyCounts kEmpty;
  return kEmpty;
}

// A CountsEntry's version when it was read, to tell a state kept past its cycle.
struct EntryRef {
  std::shared_ptr<const CountsEntry> entry;
  uint64_t version = 0;

  void Set(std::shared_ptr<const CountsEntry> e) {
    entry = std::move(e);
    version = entry->version;
  }
  bool Stale() const { return entry != nullptr && entry->version != version; }
  const TopologyCounts& Map(size_t i) const { return entry ? entry->maps[i] : NoCounts(); }
};

// What Filter reads, computed in PreFilter.
class PreFilterState final : public framework::StateData {
 public:
  std::vector<IncomingTerm> affinity_terms;
  std::vector<IncomingTerm> anti_affinity_terms;
  // The pod matches all its own affinity terms (the first pod of a group may go anywhere).
  bool matches_own_affinity = false;
  std::shared_ptr<const api::Namespace> pod_namespace;
  EntryRef existing;
  EntryRef incoming;
  // Copies of the maps once AddPod or RemovePod changed them; null until then.
  std::shared_ptr<TopologyCounts> changed[3];

  // Filter reads a node's label for each distinct topology key once, in this order, and finds
  // the pairs without comparing key text: IndexKeys() fills these whenever the maps change.
  std::vector<std::string> keys;
  // Per map (kExisting, kAffinity, kAntiAffinity) and key of `keys`: the key's index in the map
  // (-1: not in the map).
  std::vector<int32_t> map_keys[3];
  // Per term: its key in `keys`.
  std::vector<uint32_t> affinity_slots;
  std::vector<uint32_t> anti_affinity_slots;
  // Per key of the existing pods' map: its key in `keys`.
  std::vector<uint32_t> existing_slots;
  // Per key of `keys`: the tracker's column of the key in this cycle.
  std::vector<std::shared_ptr<const helper::KeyColumn>> columns;
  // Every key of the maps Filter reads is bound to the column in `columns` (no AddPod or
  // RemovePod changed the maps): Filter may read a listed node's amounts by its position.
  bool by_node = false;

  void IndexKeys() {
    by_node = false;
    keys.clear();
    auto slot = [&](std::string_view key) {
      for (size_t i = 0; i < keys.size(); i++) {
        if (keys[i] == key) return static_cast<uint32_t>(i);
      }
      keys.emplace_back(key);
      return static_cast<uint32_t>(keys.size() - 1);
    };
    affinity_slots.clear();
    for (const IncomingTerm& term : affinity_terms)
      affinity_slots.push_back(slot(term.topology_key));
    anti_affinity_slots.clear();
    for (const IncomingTerm& term : anti_affinity_terms) {
      anti_affinity_slots.push_back(slot(term.topology_key));
    }
    existing_slots.clear();
    for (const TopologyCounts::Key& key : Counts(kExisting).keys()) {
      existing_slots.push_back(slot(key.key));
    }
    for (size_t m = 0; m < 3; m++) {
      map_keys[m].clear();
      for (const std::string& key : keys) map_keys[m].push_back(Counts(m).FindKey(key));
    }
  }

  std::shared_ptr<framework::StateData> Clone() const override {
    auto copy = std::make_shared<PreFilterState>(*this);
    for (auto& c : copy->changed) {
      if (c) c = std::make_shared<TopologyCounts>(*c);
    }
    return copy;
  }

  const TopologyCounts& Counts(size_t which) const {
    if (changed[which]) return *changed[which];
    return which == kExisting ? existing.Map(0) : incoming.Map(which - 1);
  }
  TopologyCounts& MutableCounts(size_t which) {
    if (!changed[which]) changed[which] = std::make_shared<TopologyCounts>(Counts(which));
    return *changed[which];
  }
  bool Stale() const { return existing.Stale() || incoming.Stale(); }
  // Sets `columns` and `by_node` for this cycle (after IndexKeys).
  void IndexColumns(NodeListTracker& tracker) {
    columns.clear();
    for (const std::string& key : keys) columns.push_back(tracker.Column(key));
    by_node = true;
    for (size_t m = 0; m < 3; m++) {
      if (changed[m]) by_node = false;
      for (size_t k = 0; k < keys.size(); k++) {
        const int32_t key = map_keys[m][k];
        if (key >= 0 && Counts(m).keys()[static_cast<size_t>(key)].column != columns[k]) {
          by_node = false;
        }
      }
    }
  }
  const api::Labels* NamespaceLabels() const {
    return pod_namespace ? &pod_namespace->meta.labels : nullptr;
  }
};

// What Score reads, computed in PreScore. Never changed after PreScore, so clones share it.
class PreScoreState final : public framework::StateData {
 public:
  EntryRef scores;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreScoreState>(*this);
  }
};

framework::Status StaleState() {
  return framework::Status::Error(
      "InterPodAffinity: cycle state read after a later cycle updated its counts");
}

// The pod's namespace, labels and namespace labels, on which other pods' terms matching it
// depend. With `label_keys`, only the labels with those keys (all a set of selectors reads).
void AppendNamespaceSignature(const api::Pod& pod, const api::Namespace* ns, std::string* out,
                              const ValueTable* label_keys = nullptr) {
  out->append(pod.meta.namespace_);
  out->push_back('\0');
  if (label_keys == nullptr) {
    AppendLabelsSignature(pod.meta.labels, out);
  } else {
    std::vector<api::StringMap::Entry> read;
    for (const auto& entry : pod.meta.labels) {
      if (label_keys->Find(entry.first) != nullptr) read.push_back(entry);
    }
    AppendLabelsSignature(api::Labels(std::move(read)), out);
  }
  if (ns == nullptr) {
    out->push_back('-');
  } else {
    out->push_back('+');
    AppendLabelsSignature(ns->meta.labels, out);
  }
}

// A node's value of one of the state's keys (null: no such label), with its ValueTable::Hash.
struct NodeValue {
  const std::string* value = nullptr;
  uint64_t hash = 0;
};

// How Filter finds a node's amounts: by the node's label values, or by its position.
class ByValue {
 public:
  ByValue(const PreFilterState& s, const NodeValue* values) : s_(s), values_(values) {}
  bool Has(uint32_t slot) const { return values_[slot].value != nullptr; }
  int64_t Amount(size_t map, uint32_t slot) const {
    return s_.Counts(map).AmountAt(s_.map_keys[map][slot], *values_[slot].value,
                                   values_[slot].hash);
  }

 private:
  const PreFilterState& s_;
  const NodeValue* values_;
};

class ByNode {
 public:
  ByNode(const PreFilterState& s, uint32_t position) : s_(s), position_(position) {}
  bool Has(uint32_t slot) const { return Id(slot) >= 0; }
  int64_t Amount(size_t map, uint32_t slot) const {
    const int32_t key = s_.map_keys[map][slot];
    if (key < 0) return 0;
    return s_.Counts(map).keys()[static_cast<size_t>(key)].AmountById(Id(slot));
  }

 private:
  int32_t Id(uint32_t slot) const { return s_.columns[slot]->node_values[position_]; }
  const PreFilterState& s_;
  uint32_t position_;
};

// Whether the node satisfies the pod's required affinity: one pod in each term's topology domain
// of the node matches all the terms, or no pod anywhere does and the pod matches them itself
// (then only the topology labels are needed).
template <typename Lookup>
bool SatisfiesAffinity(const PreFilterState& s, const Lookup& node) {
  if (s.affinity_terms.empty()) return true;
  bool pods_exist = true;
  for (uint32_t slot : s.affinity_slots) {
    if (!node.Has(slot)) return false;
    if (node.Amount(kAffinity, slot) <= 0) pods_exist = false;
  }
  return pods_exist || (s.Counts(kAffinity).empty() && s.matches_own_affinity);
}

template <typename Lookup>
bool SatisfiesAntiAffinity(const PreFilterState& s, const Lookup& node) {
  if (s.Counts(kAntiAffinity).empty()) return true;
  for (uint32_t slot : s.anti_affinity_slots) {
    if (node.Has(slot) && node.Amount(kAntiAffinity, slot) > 0) return false;
  }
  return true;
}

// Upstream walks the node's labels and looks each pair up; walking the map's keys instead finds
// the same pairs.
template <typename Lookup>
bool SatisfiesExistingAntiAffinity(const PreFilterState& s, const Lookup& node) {
  if (s.Counts(kExisting).empty()) return true;
  for (uint32_t slot : s.existing_slots) {
    if (node.Has(slot) && node.Amount(kExisting, slot) > 0) return false;
  }
  return true;
}

template <typename Lookup>
framework::Status FilterNode(const PreFilterState& s, const Lookup& node) {
  if (!SatisfiesAffinity(s, node)) {
    static const framework::FixedReasons kReason(kErrReasonAffinityRulesNotMatch);
    return framework::Status::Unresolvable(kReason);
  }
  if (!SatisfiesAntiAffinity(s, node)) {
    static const framework::FixedReasons kReason(kErrReasonAntiAffinityRulesNotMatch);
    return framework::Status::Unschedulable(kReason);
  }
  if (!SatisfiesExistingAntiAffinity(s, node)) {
    static const framework::FixedReasons kReason(kErrReasonExistingAntiAffinityRulesNotMatch);
    return framework::Status::Unschedulable(kReason);
  }
  return framework::Status::Success();
}

int64_t ScoreWithCounts(const TopologyCounts& counts, const api::Labels& labels) {
  int64_t score = 0;
  for (const TopologyCounts::Key& key : counts.keys()) {
    const std::string* value = labels.Find(key.key);
    if (value == nullptr) continue;
    if (const TopologyCounts::Cell* cell = key.values.Find(*value)) score += cell->amount;
  }
  return score;
}

void EmitSelectorKeys(const api::PodAffinityTerm& term, const CountsEntry::Emit& emit) {
  if (!term.label_selector) return;
  for (const api::Requirement& r : term.label_selector->requirements) emit(0, "", r.key, 1);
}

// The label keys of `entry` (made by EmitSelectorKeys), for AppendNamespaceSignature.
const ValueTable* SelectorKeys(const CountsEntry& entry) {
  static const ValueTable kNoKeys;
  const TopologyCounts& keys = entry.maps[0];
  return keys.keys().empty() ? &kNoKeys : &keys.keys()[0].values;
}

}  // namespace

Args ParseArgs(const json& args) {
  Args out;
  framework::ArgsErrors errors;
  if (errors.CheckObject(args, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})) {
    int64_t weight = out.hard_pod_affinity_weight;
    errors.ReadInt(args, "hardPodAffinityWeight", "", 0, kMaxHardPodAffinityWeight,
                   "not in valid range [0, " + std::to_string(kMaxHardPodAffinityWeight) + "]",
                   &weight);
    out.hard_pod_affinity_weight = static_cast<int32_t>(weight);
    auto ignore = args.find("ignorePreferredTermsOfExistingPods");
    if (ignore != args.end() && !ignore->is_null()) {
      if (ignore->is_boolean()) {
        out.ignore_preferred_terms_of_existing_pods = ignore->get<bool>();
      } else {
        errors.Invalid("ignorePreferredTermsOfExistingPods", *ignore, "must be a boolean");
      }
    }
  }
  errors.ThrowIfAny();
  return out;
}

InterPodAffinity::InterPodAffinity(Args args, const framework::NodeInfoLister& lister,
                                   informer::Lister<api::Namespace> namespaces)
    : args_(args), lister_(lister), namespaces_(namespaces) {}

void InterPodAffinity::SyncNodes(framework::CycleState& state,
                                 const std::vector<framework::NodeInfoPtr>& nodes) {
  const auto* synced = state.Read<Synced>(SyncedKey());
  if (synced != nullptr && synced->epoch == tracker_.epoch()) return;
  tracker_.Sync(nodes);
  state.Write(SyncedKey(), std::make_shared<Synced>(tracker_.epoch()));
}

framework::Status InterPodAffinity::PreFilter(framework::CycleState& cycle_state,
                                              const api::Pod& pod,
                                              const std::vector<framework::NodeInfoPtr>& nodes,
                                              framework::PreFilterResult*) {
  auto s = std::make_shared<PreFilterState>();
  s->affinity_terms = CompileTerms(pod, RequiredAffinity(pod), &namespaces_);
  s->anti_affinity_terms = CompileTerms(pod, RequiredAntiAffinity(pod), &namespaces_);
  s->pod_namespace = namespaces_.Get(pod.meta.namespace_);

  const bool has_terms = !s->affinity_terms.empty() || !s->anti_affinity_terms.empty();
  if (has_terms || !lister_.HavePodsWithRequiredAntiAffinityList().empty()) {
    SyncNodes(cycle_state, nodes);
  }
  if (!lister_.HavePodsWithRequiredAntiAffinityList().empty()) {
    // Whether an assigned pod's term matches this pod depends on this pod's labels only through
    // the keys the terms' selectors read; leaving the others out of the signature lets pods that
    // differ only there (a StatefulSet's, which carry their own name) share the counts.
    auto selector_keys = selector_keys_cache_.Get(
        "", tracker_, nodes, lister_.HavePodsWithRequiredAntiAffinityList(),
        [](const framework::NodeInfo& node_info, const CountsEntry::Emit& emit) {
          for (const framework::PodInfoPtr& existing :
               node_info.pods_with_required_anti_affinity()) {
            for (const api::PodAffinityTerm& term : RequiredAntiAffinity(*existing->pod)) {
              EmitSelectorKeys(term, emit);
            }
          }
        });
    std::string signature;
    AppendNamespaceSignature(pod, s->pod_namespace.get(), &signature, SelectorKeys(*selector_keys));
    const api::Labels* ns_labels = s->NamespaceLabels();
    s->existing.Set(existing_anti_affinity_cache_.Get(
        std::move(signature), tracker_, nodes, lister_.HavePodsWithRequiredAntiAffinityList(),
        [&](const framework::NodeInfo& node_info, const CountsEntry::Emit& emit) {
          const api::Node* node = node_info.node();
          if (node == nullptr) return;
          for (const framework::PodInfoPtr& existing :
               node_info.pods_with_required_anti_affinity()) {
            for (const api::PodAffinityTerm& term : RequiredAntiAffinity(*existing->pod)) {
              if (!TermMatches(term, existing->pod->meta.namespace_, pod, ns_labels)) continue;
              if (const std::string* value = node->meta.labels.Find(term.topology_key)) {
                emit(0, term.topology_key, *value, 1);
              }
            }
          }
        }));
  }

  if (has_terms) {
    std::string signature;
    for (const IncomingTerm& term : s->affinity_terms) term.AppendSignature(&signature);
    signature.push_back('|');
    for (const IncomingTerm& term : s->anti_affinity_terms) term.AppendSignature(&signature);
    const auto& affinity = s->affinity_terms;
    const auto& anti_affinity = s->anti_affinity_terms;
    s->incoming.Set(incoming_terms_cache_.Get(
        std::move(signature), tracker_, nodes, nodes,
        [&](const framework::NodeInfo& node_info, const CountsEntry::Emit& emit) {
          const api::Node* node = node_info.node();
          if (node == nullptr) return;
          const api::Labels& labels = node->meta.labels;
          for (const framework::PodInfoPtr& existing : node_info.pods()) {
            if (MatchesAll(affinity, *existing->pod)) {
              for (const IncomingTerm& term : affinity) {
                if (const std::string* value = labels.Find(term.topology_key)) {
                  emit(0, term.topology_key, *value, 1);
                }
              }
            }
            for (const IncomingTerm& term : anti_affinity) {
              if (!term.Matches(*existing->pod)) continue;
              if (const std::string* value = labels.Find(term.topology_key)) {
                emit(1, term.topology_key, *value, 1);
              }
            }
          }
        }));
  }

  if (s->Counts(kExisting).empty() && !has_terms) return framework::Status::Skip();
  s->matches_own_affinity = MatchesAll(s->affinity_terms, pod);
  s->IndexKeys();
  s->IndexColumns(tracker_);
  cycle_state.Write(PreFilterKey(), std::move(s));
  return framework::Status::Success();
}

framework::Status InterPodAffinity::UpdateWithPod(framework::CycleState& cycle_state,
                                                  const api::Pod& pod_to_schedule,
                                                  const api::Pod& changed,
                                                  const framework::NodeInfo& node_info,
                                                  int64_t multiplier) {
  auto* s = cycle_state.Read<PreFilterState>(PreFilterKey());
  if (s == nullptr) {
    return framework::Status::Error("InterPodAffinity: no PreFilter state in the cycle");
  }
  if (s->Stale()) return StaleState();
  const api::Node* node = node_info.node();
  if (node == nullptr) return framework::Status::Error("node not found");
  const api::Labels& labels = node->meta.labels;
  auto update = [&](size_t which, std::string_view key) {
    if (const std::string* value = labels.Find(key)) {
      s->MutableCounts(which).Add(key, *value, multiplier, multiplier);
    }
  };
  for (const api::PodAffinityTerm& term : RequiredAntiAffinity(changed)) {
    if (TermMatches(term, changed.meta.namespace_, pod_to_schedule, s->NamespaceLabels())) {
      update(kExisting, term.topology_key);
    }
  }
  if (MatchesAll(s->affinity_terms, changed)) {
    for (const IncomingTerm& term : s->affinity_terms) update(kAffinity, term.topology_key);
  }
  for (const IncomingTerm& term : s->anti_affinity_terms) {
    if (term.Matches(changed)) update(kAntiAffinity, term.topology_key);
  }
  s->IndexKeys();
  return framework::Status::Success();
}

framework::Status InterPodAffinity::AddPod(framework::CycleState& state,
                                           const api::Pod& pod_to_schedule,
                                           const framework::PodInfo& pod_to_add,
                                           const framework::NodeInfo& node) {
  return UpdateWithPod(state, pod_to_schedule, *pod_to_add.pod, node, 1);
}

framework::Status InterPodAffinity::RemovePod(framework::CycleState& state,
                                              const api::Pod& pod_to_schedule,
                                              const framework::PodInfo& pod_to_remove,
                                              const framework::NodeInfo& node) {
  return UpdateWithPod(state, pod_to_schedule, *pod_to_remove.pod, node, -1);
}

framework::Status InterPodAffinity::Filter(const framework::CycleState& state, const api::Pod& pod,
                                           const framework::NodeInfo& node) {
  framework::Status status;
  const framework::NodeInfo* nodes[] = {&node};
  FilterNodes(state, pod, nodes, std::span<framework::Status>(&status, 1));
  return status;
}

void InterPodAffinity::FilterNodes(const framework::CycleState& state, const api::Pod&,
                                   std::span<const framework::NodeInfo* const> nodes,
                                   std::span<framework::Status> statuses) {
  const auto* s = state.Read<PreFilterState>(PreFilterKey());
  if (s == nullptr || s->Stale()) {
    const framework::Status error =
        s == nullptr ? framework::Status::Error("InterPodAffinity: no PreFilter state in the cycle")
                     : StaleState();
    std::fill(statuses.begin(), statuses.end(), error);
    return;
  }
  // A listed node's amounts are read by its position; the others' by their label values.
  thread_local std::vector<size_t> by_value_scratch;
  std::vector<size_t>& by_value = by_value_scratch;
  by_value.clear();
  for (size_t i = 0; i < nodes.size(); i++) {
    const framework::NodeInfo& info = *nodes[i];
    if (info.node() == nullptr) {
      statuses[i] = framework::Status::Error("node not found");
    } else if (s->by_node && tracker_.Listed(info)) {
      framework::Status status = FilterNode(*s, ByNode(*s, info.list_index()));
      if (!status.IsSuccess()) statuses[i] = std::move(status);
    } else {
      by_value.push_back(i);
    }
  }
  if (by_value.empty()) return;

  // Every lookup here is a read of memory no cycle touched since the last: a node's labels, the
  // text of their keys, the slots of the counts. Each step asks for the next one's memory for
  // the whole run first, so that the waits overlap instead of adding up node by node.
  for (size_t i : by_value) nodes[i]->node()->meta.labels.Prefetch();
  const size_t num_keys = s->keys.size();
  for (size_t i : by_value) {
    for (const auto& [key, value] : nodes[i]->node()->meta.labels) {
      for (const std::string& wanted : s->keys) {
        if (key.size() == wanted.size()) __builtin_prefetch(key.data());
      }
    }
  }
  thread_local std::vector<NodeValue> scratch;
  scratch.assign(by_value.size() * num_keys, NodeValue{});
  for (size_t j = 0; j < by_value.size(); j++) {
    const api::Node* node = nodes[by_value[j]]->node();
    for (size_t k = 0; k < num_keys; k++) {
      NodeValue& v = scratch[j * num_keys + k];
      v.value = node->meta.labels.Find(s->keys[k]);
      if (v.value == nullptr) continue;
      v.hash = ValueTable::Hash(*v.value);
      for (size_t m = 0; m < 3; m++) {
        const int32_t key = s->map_keys[m][k];
        if (key >= 0) s->Counts(m).keys()[key].values.Prefetch(v.hash);
      }
    }
  }
  for (size_t j = 0; j < by_value.size(); j++) {
    framework::Status status = FilterNode(*s, ByValue(*s, scratch.data() + j * num_keys));
    if (!status.IsSuccess()) statuses[by_value[j]] = std::move(status);
  }
}

framework::Status InterPodAffinity::PreScore(framework::CycleState& cycle_state,
                                             const api::Pod& pod,
                                             std::span<const framework::NodeInfo* const>) {
  const bool has_constraints =
      !PreferredAffinity(pod).empty() || !PreferredAntiAffinity(pod).empty();
  if (args_.ignore_preferred_terms_of_existing_pods && !has_constraints) {
    return framework::Status::Skip();
  }
  // Without preferred terms of its own, only assigned pods with affinity can score the pod.
  if (!has_constraints && lister_.HavePodsWithAffinityList().empty()) {
    return framework::Status::Skip();
  }

  const std::vector<IncomingTerm> affinity =
      CompileWeightedTerms(pod, PreferredAffinity(pod), &namespaces_);
  const std::vector<IncomingTerm> anti_affinity =
      CompileWeightedTerms(pod, PreferredAntiAffinity(pod), &namespaces_);
  const std::shared_ptr<const api::Namespace> ns = namespaces_.Get(pod.meta.namespace_);
  const api::Labels* ns_labels = ns ? &ns->meta.labels : nullptr;

  const int32_t hard_weight = args_.hard_pod_affinity_weight;
  const auto& all_nodes = lister_.List();
  SyncNodes(cycle_state, all_nodes);
  // As in PreFilter: assigned pods' terms read only some of this pod's labels.
  auto selector_keys = score_selector_keys_cache_.Get(
      "", tracker_, all_nodes, lister_.HavePodsWithAffinityList(),
      [hard_weight](const framework::NodeInfo& node_info, const CountsEntry::Emit& emit) {
        for (const framework::PodInfoPtr& existing : node_info.pods_with_affinity()) {
          if (hard_weight > 0) {
            for (const auto& term : RequiredAffinity(*existing->pod)) EmitSelectorKeys(term, emit);
          }
          for (const auto& term : PreferredAffinity(*existing->pod)) {
            EmitSelectorKeys(term.term, emit);
          }
          for (const auto& term : PreferredAntiAffinity(*existing->pod)) {
            EmitSelectorKeys(term.term, emit);
          }
        }
      });
  std::string signature(has_constraints ? "C" : "A");
  for (const IncomingTerm& term : affinity) term.AppendSignature(&signature);
  signature.push_back('|');
  for (const IncomingTerm& term : anti_affinity) term.AppendSignature(&signature);
  signature.push_back('|');
  AppendNamespaceSignature(pod, ns.get(), &signature, SelectorKeys(*selector_keys));

  auto state = std::make_shared<PreScoreState>();
  state->scores.Set(score_cache_.Get(
      std::move(signature), tracker_, all_nodes,
      has_constraints ? all_nodes : lister_.HavePodsWithAffinityList(),
      [&](const framework::NodeInfo& node_info, const CountsEntry::Emit& emit) {
        const api::Node* node = node_info.node();
        if (node == nullptr || node->meta.labels.empty()) return;
        const api::Labels& labels = node->meta.labels;
        auto add = [&](std::string_view key, int64_t amount) {
          if (const std::string* value = labels.Find(key)) emit(0, key, *value, amount);
        };
        const auto& pods = has_constraints ? node_info.pods() : node_info.pods_with_affinity();
        for (const framework::PodInfoPtr& existing_info : pods) {
          const api::Pod& existing = *existing_info->pod;
          for (const IncomingTerm& term : affinity) {
            if (term.Matches(existing)) add(term.topology_key, term.weight);
          }
          for (const IncomingTerm& term : anti_affinity) {
            if (term.Matches(existing)) add(term.topology_key, -int64_t{term.weight});
          }
          const std::string& owner_ns = existing.meta.namespace_;
          if (hard_weight > 0) {
            for (const api::PodAffinityTerm& term : RequiredAffinity(existing)) {
              if (TermMatches(term, owner_ns, pod, ns_labels)) add(term.topology_key, hard_weight);
            }
          }
          for (const api::WeightedPodAffinityTerm& term : PreferredAffinity(existing)) {
            if (TermMatches(term.term, owner_ns, pod, ns_labels)) {
              add(term.term.topology_key, term.weight);
            }
          }
          for (const api::WeightedPodAffinityTerm& term : PreferredAntiAffinity(existing)) {
            if (TermMatches(term.term, owner_ns, pod, ns_labels)) {
              add(term.term.topology_key, -int64_t{term.weight});
            }
          }
        }
      }));
  if (state->scores.Map(0).empty()) return framework::Status::Skip();
  cycle_state.Write(PreScoreKey(), std::move(state));
  return framework::Status::Success();
}

framework::Status InterPodAffinity::Score(const framework::CycleState& state, const api::Pod& pod,
                                          const framework::NodeInfo& node, int64_t* score) {
  return ScoreAsRunOfOne(state, pod, node, score);
}

framework::Status InterPodAffinity::ScoreNodes(const framework::CycleState& state, const api::Pod&,
                                               std::span<const framework::NodeInfo* const> nodes,
                                               std::span<framework::NodeScore> scores) {
  const auto* s = state.Read<PreScoreState>(PreScoreKey());
  if (s == nullptr)
    return framework::Status::Error("InterPodAffinity: no PreScore state in the cycle");
  if (s->scores.Stale()) return StaleState();
  const TopologyCounts& counts = s->scores.Map(0);
  for (size_t i = 0; i < nodes.size(); i++) {
    const api::Node* node = nodes[i]->node();
    if (node == nullptr) return framework::Status::Error("node not found");
    scores[i].score = ScoreWithCounts(counts, node->meta.labels);
  }
  return framework::Status::Success();
}

framework::Status InterPodAffinity::NormalizeScore(const framework::CycleState& state,
                                                   const api::Pod&,
                                                   framework::NodeScoreList& scores) {
  const auto* s = state.Read<PreScoreState>(PreScoreKey());
  if (s == nullptr)
    return framework::Status::Error("InterPodAffinity: no PreScore state in the cycle");
  if (s->scores.Map(0).empty()) return framework::Status::Success();
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = std::numeric_limits<int64_t>::min();
  for (const framework::NodeScore& score : scores) {
    min = std::min(min, score.score);
    max = std::max(max, score.score);
  }
  const int64_t spread = max - min;
  for (framework::NodeScore& score : scores) {
    double scaled = 0;
    if (spread > 0) {
      scaled = static_cast<double>(framework::kMaxNodeScore) *
               (static_cast<double>(score.score - min) / static_cast<double>(spread));
    }
    score.score = static_cast<int64_t>(scaled);
  }
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> InterPodAffinity::EventsToRegister() const {
  return {
      // A deleted or relabelled pod may have been the one whose anti-affinity (or whose match of
      // the pod's anti-affinity) kept the pod out; an added or relabelled one may be the one the
      // pod's affinity waits for.
      {{framework::EventResource::kPod,
        framework::kAdd | framework::kUpdatePodLabel | framework::kDelete,
        "AssignedPodAddOrUpdatePodLabelOrDelete"},
       IsSchedulableAfterAssignedPodChange},
      // The pod's own new labels may no longer match an assigned pod's anti-affinity.
      {{framework::EventResource::kUnscheduledPod, framework::kUpdatePodLabel,
        "UnscheduledPodUpdatePodLabel"},
       [](const api::Pod&, const framework::EventObjects&) {
         return framework::QueueingHint::kQueue;
       }},
      {{framework::EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel,
        "NodeAddOrUpdateNodeLabel"},
       IsSchedulableAfterNodeChange},
  };
}

framework::QueueingHint IsSchedulableAfterAssignedPodChange(const api::Pod& pod,
                                                            const framework::EventObjects& event) {
  const api::Pod* old_pod = event.old_pod.get();
  const api::Pod* new_pod = event.new_pod.get();
  if (old_pod == nullptr && new_pod == nullptr) return framework::QueueingHint::kQueue;
  auto unassigned = [](const api::Pod* p) {
    return p != nullptr && p->spec.node_name.empty() && p->status.nominated_node_name.empty();
  };
  // A pod's move to or from a node comes as an add or a delete.
  if (unassigned(new_pod) || unassigned(old_pod)) return framework::QueueingHint::kSkip;

  const std::vector<IncomingTerm> affinity = CompileTerms(pod, RequiredAffinity(pod), nullptr);
  const std::vector<IncomingTerm> anti_affinity =
      CompileTerms(pod, RequiredAntiAffinity(pod), nullptr);
  if (old_pod != nullptr && new_pod != nullptr) {
    // Affinity needs one pod that matches every term, so only a pod that now matches them all
    // (and did not) can help.
    if (!MatchesAll(affinity, *old_pod) && MatchesAll(affinity, *new_pod)) {
      return framework::QueueingHint::kQueue;
    }
    if (MatchesAny(anti_affinity, *old_pod) && !MatchesAny(anti_affinity, *new_pod)) {
      return framework::QueueingHint::kQueue;
    }
    return framework::QueueingHint::kSkip;
  }
  if (new_pod != nullptr) {
    return MatchesAll(affinity, *new_pod) ? framework::QueueingHint::kQueue
                                          : framework::QueueingHint::kSkip;
  }
  if (MatchesAny(anti_affinity, *old_pod)) return framework::QueueingHint::kQueue;
  for (const api::PodAffinityTerm& term : RequiredAntiAffinity(*old_pod)) {
    if (TermMatches(term, old_pod->meta.namespace_, pod, nullptr)) {
      return framework::QueueingHint::kQueue;
    }
  }
  return framework::QueueingHint::kSkip;
}

framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event) {
  if (!event.new_node) return framework::QueueingHint::kQueue;
  const api::Labels& now = event.new_node->meta.labels;
  const api::Labels* before = event.old_node ? &event.old_node->meta.labels : nullptr;
  for (const api::PodAffinityTerm& term : RequiredAffinity(pod)) {
    const std::string* value = now.Find(term.topology_key);
    if (before == nullptr) {
      if (value != nullptr) return framework::QueueingHint::kQueue;
      continue;
    }
    const std::string* old_value = before->Find(term.topology_key);
    // The node joined a domain of the term, or moved to another one.
    if (value != nullptr && (old_value == nullptr || *old_value != *value)) {
      return framework::QueueingHint::kQueue;
    }
  }
  for (const api::PodAffinityTerm& term : RequiredAntiAffinity(pod)) {
    // A new node may join a domain free of the pods the pod avoids; there is no telling here.
    if (before == nullptr) return framework::QueueingHint::kQueue;
    const std::string* value = now.Find(term.topology_key);
    const std::string* old_value = before->Find(term.topology_key);
    // A node without the topology label never conflicts; one that moved domains may not now.
    if (old_value != nullptr && (value == nullptr || *old_value != *value)) {
      return framework::QueueingHint::kQueue;
    }
  }
  return framework::QueueingHint::kSkip;
}

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  return std::make_shared<InterPodAffinity>(
      ParseArgs(args), handle.SnapshotSharedLister(),
      handle.SharedInformerFactory().ListerFor<api::Namespace>());
}

}  // namespace berth::plugins::interpodaffinity
