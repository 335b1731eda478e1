#include "pkg/plugins/nodeaffinity/nodeaffinity.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/framework/args.h"
#include "pkg/plugins/helper/normalize_score.h"

namespace berth::plugins::nodeaffinity {
namespace {

using nlohmann::json;

constexpr std::string_view kNodeNameField = "metadata.name";
constexpr int32_t kMaxPreferredWeight = 100;

// The member named `key`, or nullptr when absent or null.
const json* Member(const json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<api::NodeSelector> ParseRequired(const json& value, const std::string& field,
                                               framework::ArgsErrors& errors) {
  if (!errors.CheckObject(value, {"nodeSelectorTerms"}, field)) return std::nullopt;
  const std::string terms_field = field + ".nodeSelectorTerms";
  const json* terms = Member(value, "nodeSelectorTerms");
  if (terms == nullptr) {
    errors.Required(terms_field, "must have at least one node selector term");
    return std::nullopt;
  }
  if (!terms->is_array()) {
    errors.Invalid(terms_field, *terms, "must be a list");
    return std::nullopt;
  }
  // An empty selector would match no node and silently make the profile unschedulable.
  if (terms->empty()) {
    errors.Required(terms_field, "must have at least one node selector term");
    return std::nullopt;
  }
  api::NodeSelector selector;
  for (size_t i = 0; i < terms->size(); i++) {
    try {
      selector.terms.push_back(
          api::DecodeNodeSelectorTerm((*terms)[i], framework::IndexField(terms_field, i)));
    } catch (const api::DecodeError& e) {
      errors.Add(e);
    }
  }
  return selector;
}

std::vector<api::PreferredSchedulingTerm> ParsePreferred(const json& value,
                                                         const std::string& field,
                                                         framework::ArgsErrors& errors) {
  std::vector<api::PreferredSchedulingTerm> terms;
  if (!value.is_array()) {
    errors.Invalid(field, value, "must be a list");
    return terms;
  }
  for (size_t i = 0; i < value.size(); i++) {
    const std::string term_field = framework::IndexField(field, i);
    const json& term = value[i];
    if (term.is_null()) {
      errors.Invalid(term_field, term, "must be an object");
      continue;
    }
    if (!errors.CheckObject(term, {"weight", "preference"}, term_field)) continue;

    if (Member(term, "weight") == nullptr) {
      errors.Required(term_field + ".weight", "must be given");
      continue;
    }
    // Scores must stay non-negative for normalization; 100 is the apiserver's cap for the same
    // field in a pod spec.
    int64_t weight = 0;
    if (!errors.ReadInt(term, "weight", term_field, 0, kMaxPreferredWeight,
                        "not in valid range [0, " + std::to_string(kMaxPreferredWeight) + "]",
                        &weight)) {
      continue;
    }
    api::PreferredSchedulingTerm parsed;
    parsed.weight = static_cast<int32_t>(weight);
    if (const json* preference = Member(term, "preference")) {
      try {
        parsed.preference = api::DecodeNodeSelectorTerm(*preference, term_field + ".preference");
      } catch (const api::DecodeError& e) {
        errors.Add(e);
        continue;
      }
    }
    // A zero weight can never change a score (upstream drops such terms too).
    if (parsed.weight != 0) terms.push_back(std::move(parsed));
  }
  return terms;
}

const api::NodeAffinity* PodNodeAffinity(const api::Pod& pod) {
  if (!pod.spec.affinity || !pod.spec.affinity->node_affinity) return nullptr;
  return &*pod.spec.affinity->node_affinity;
}

const api::NodeSelector* PodRequiredAffinity(const api::Pod& pod) {
  const api::NodeAffinity* affinity = PodNodeAffinity(pod);
  if (affinity == nullptr || !affinity->required) return nullptr;
  return &*affinity->required;
}

const std::vector<api::PreferredSchedulingTerm>* PodPreferredAffinity(const api::Pod& pod) {
  const api::NodeAffinity* affinity = PodNodeAffinity(pod);
  if (affinity == nullptr || affinity->preferred.empty()) return nullptr;
  return &affinity->preferred;
}

bool AddedRequiredMatches(const AddedAffinity& added, const api::Node& node) {
  return !added.required || added.required->Matches(node.meta.labels, node.Name());
}

int64_t SumMatchingWeights(const std::vector<api::PreferredSchedulingTerm>& terms,
                           const api::Node& node) {
  int64_t sum = 0;
  for (const api::PreferredSchedulingTerm& term : terms) {
    if (term.preference.Matches(node.meta.labels, node.Name())) sum += term.weight;
  }
  return sum;
}

framework::QueueingHint NodeChangeHint(const AddedAffinity& added, const api::Pod& pod,
                                       const framework::EventObjects& event) {
  // A missing object is a malformed event; queueing is the safe answer.
  if (!event.new_node) return framework::QueueingHint::kQueue;
  auto matches = [&](const api::Node& node) {
    return AddedRequiredMatches(added, node) && RequiredNodeAffinityMatches(pod, node);
  };
  if (!matches(*event.new_node)) return framework::QueueingHint::kSkip;
  // Only an unmatched -> matched transition can undo a rejection by this plugin.
  if (event.old_node && matches(*event.old_node)) return framework::QueueingHint::kSkip;
  return framework::QueueingHint::kQueue;
}

bool SameRequirements(const std::vector<api::Requirement>& a,
                      const std::vector<api::Requirement>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const api::Requirement& x, const api::Requirement& y) {
                      return x.key == y.key && x.op == y.op && x.values == y.values &&
                             x.number == y.number;
                    });
}

bool SameRequiredAffinity(const api::NodeSelector* a, const api::NodeSelector* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return std::equal(a->terms.begin(), a->terms.end(), b->terms.begin(), b->terms.end(),
                    [](const api::NodeSelectorTerm& x, const api::NodeSelectorTerm& y) {
                      return SameRequirements(x.match_expressions, y.match_expressions) &&
                             SameRequirements(x.match_fields, y.match_fields);
                    });
}

const framework::StateKey& PreFilterKey() {
  static const framework::StateKey key("PreFilterNodeAffinity");
  return key;
}

// The pod's selection column for the cycle; absent when the pod has none.
class PreFilterState final : public framework::StateData {
 public:
  explicit PreFilterState(std::shared_ptr<const SelectionColumns::Column> column)
      : column(std::move(column)) {}
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreFilterState>(*this);
  }
  const std::shared_ptr<const SelectionColumns::Column> column;
};

framework::Status StatusOf(Outcome outcome) {
  static const framework::FixedReasons kEnforced(kErrReasonEnforced);
  static const framework::FixedReasons kPodMismatch(kErrReasonPod);
  switch (outcome) {
    case Outcome::kFits:
      return framework::Status::Success();
    case Outcome::kEnforcedMismatch:
      return framework::Status::Unresolvable(kEnforced);
    case Outcome::kPodMismatch:
      return framework::Status::Unresolvable(kPodMismatch);
  }
  return framework::Status::Error("NodeAffinity: unknown outcome");
}

Outcome Decide(const AddedAffinity& added, const api::Pod& pod, const api::Node& node) {
  if (!AddedRequiredMatches(added, node)) return Outcome::kEnforcedMismatch;
  if (!RequiredNodeAffinityMatches(pod, node)) return Outcome::kPodMismatch;
  return Outcome::kFits;
}

bool SameSelection(const api::Pod& a, const api::Pod& b) {
  return a.spec.node_selector == b.spec.node_selector &&
         SameRequiredAffinity(PodRequiredAffinity(a), PodRequiredAffinity(b));
}

api::Pod SelectionOf(const api::Pod& pod) {
  api::Pod selection;
  selection.spec.node_selector = pod.spec.node_selector;
  if (const api::NodeSelector* required = PodRequiredAffinity(pod)) {
    selection.spec.affinity.emplace().node_affinity.emplace().required = *required;
  }
  return selection;
}

}  // namespace

Outcome SelectionColumns::Evaluate(const api::Pod& selection,
                                   const framework::NodeInfo& info) const {
  // Filter answers a NodeInfo without a node before reading the column.
  return info.node() != nullptr ? Decide(added_, selection, *info.node()) : Outcome::kFits;
}

std::shared_ptr<const SelectionColumns::Column> SelectionColumns::Get(
    const api::Pod& pod, const std::vector<framework::NodeInfoPtr>& nodes) {
  tracker_.Sync(nodes);
  const uint64_t epoch = tracker_.epoch();
  for (auto& column : columns_) {
    column->outcomes.resize(nodes.size(), Outcome::kFits);
    for (size_t i : tracker_.changed_now()) {
      column->outcomes[i] = Evaluate(column->selection, *nodes[i]);
    }
  }
  for (auto& column : columns_) {
    if (!SameSelection(column->selection, pod)) continue;
    column->last_used = epoch;
    return column;
  }
  auto once = std::find_if(seen_once_.begin(), seen_once_.end(),
                           [&](const api::Pod& seen) { return SameSelection(seen, pod); });
  if (once == seen_once_.end()) {
    if (seen_once_.size() == kMaxColumns) seen_once_.erase(seen_once_.begin());
    seen_once_.push_back(SelectionOf(pod));
    return nullptr;
  }
  seen_once_.erase(once);
  if (columns_.size() == kMaxColumns) {
    columns_.erase(
        std::min_element(columns_.begin(), columns_.end(),
                         [](const auto& a, const auto& b) { return a->last_used < b->last_used; }));
  }
  auto column = std::make_shared<Column>();
  column->selection = SelectionOf(pod);
  column->last_used = epoch;
  column->outcomes.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); i++) {
    column->outcomes[i] = Evaluate(column->selection, *nodes[i]);
  }
  columns_.push_back(column);
  return column;
}

AddedAffinity ParseArgs(const json& args) {
  AddedAffinity added;
  framework::ArgsErrors errors;
  const std::string field = "addedAffinity";
  const json* affinity =
      errors.CheckObject(args, {"addedAffinity"}) ? Member(args, field) : nullptr;
  if (affinity != nullptr && errors.CheckObject(*affinity,
                                                {"requiredDuringSchedulingIgnoredDuringExecution",
                                                 "preferredDuringSchedulingIgnoredDuringExecution"},
                                                field)) {
    if (const json* required =
            Member(*affinity, "requiredDuringSchedulingIgnoredDuringExecution")) {
      added.required = ParseRequired(
          *required, field + ".requiredDuringSchedulingIgnoredDuringExecution", errors);
    }
    if (const json* preferred =
            Member(*affinity, "preferredDuringSchedulingIgnoredDuringExecution")) {
      added.preferred = ParsePreferred(
          *preferred, field + ".preferredDuringSchedulingIgnoredDuringExecution", errors);
    }
  }
  errors.ThrowIfAny();
  return added;
}

bool RequiredNodeAffinityMatches(const api::Pod& pod, const api::Node& node) {
  for (const auto& [key, value] : pod.spec.node_selector) {
    const std::string* label = node.meta.labels.Find(key);
    if (label == nullptr || *label != value) return false;
  }
  const api::NodeSelector* required = PodRequiredAffinity(pod);
  return required == nullptr || required->Matches(node.meta.labels, node.Name());
}

framework::Status NodeAffinity::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                          const std::vector<framework::NodeInfoPtr>& nodes,
                                          framework::PreFilterResult* result) {
  const api::NodeSelector* required = PodRequiredAffinity(pod);
  if (required == nullptr && !added_.required && pod.spec.node_selector.empty()) {
    return framework::Status::Skip();
  }
  // Pods pinned to a few nodes by name filter those alone: a column would cost more.
  auto keep_column = [&] {
    state.Write(PreFilterKey(), std::make_shared<PreFilterState>(columns_.Get(pod, nodes)));
    return framework::Status::Success();
  };
  if (required == nullptr || required->terms.empty()) return keep_column();

  // Terms are ORed, the requirements of one term ANDed: the candidates are the union over terms
  // of the intersection of each term's metadata.name In values. One term without such a
  // requirement admits every node.
  std::set<std::string> node_names;
  for (const api::NodeSelectorTerm& term : required->terms) {
    std::optional<std::set<std::string>> term_names;
    for (const api::Requirement& r : term.match_fields) {
      if (r.key != kNodeNameField || r.op != api::SelectorOperator::kIn) continue;
      std::set<std::string> values(r.values.begin(), r.values.end());
      if (!term_names) {
        term_names = std::move(values);
      } else {
        std::set<std::string> both;
        std::set_intersection(term_names->begin(), term_names->end(), values.begin(), values.end(),
                              std::inserter(both, both.end()));
        term_names = std::move(both);
      }
    }
    if (!term_names) return keep_column();
    node_names.merge(*term_names);
  }
  if (node_names.empty()) return framework::Status::Unresolvable(std::string(kErrReasonConflict));
  if (result != nullptr) result->node_names = std::move(node_names);
  return framework::Status::Success();
}

framework::Status NodeAffinity::Filter(const framework::CycleState&, const api::Pod& pod,
                                       const framework::NodeInfo& node_info) {
  const api::Node* node = node_info.node();
  if (node == nullptr) return framework::Status::Error("node not found");
  return StatusOf(Decide(added_, pod, *node));
}

void NodeAffinity::FilterNodes(const framework::CycleState& state, const api::Pod& pod,
                               std::span<const framework::NodeInfo* const> nodes,
                               std::span<framework::Status> statuses) {
  const auto* s = state.Read<PreFilterState>(PreFilterKey());
  const SelectionColumns::Column* column = s != nullptr ? s->column.get() : nullptr;
  const helper::NodeListTracker& tracker = columns_.tracker();
  thread_local std::vector<size_t> by_labels_scratch;
  std::vector<size_t>& by_labels = by_labels_scratch;
  by_labels.clear();
  for (size_t i = 0; i < nodes.size(); i++) {
    const framework::NodeInfo& info = *nodes[i];
    if (column != nullptr && info.node() != nullptr && tracker.Listed(info)) {
      const Outcome outcome = column->outcomes[info.list_index()];
      if (outcome != Outcome::kFits) statuses[i] = StatusOf(outcome);
    } else {
      by_labels.push_back(i);
    }
  }
  // A node's labels are an allocation of their own that no cycle has touched since the last one
  // read them: looked up node by node, each lookup waited for memory in turn.
  for (size_t i : by_labels) {
    if (const api::Node* node = nodes[i]->node()) node->meta.labels.Prefetch();
  }
  for (size_t i : by_labels) {
    framework::Status status = Filter(state, pod, *nodes[i]);
    if (!status.IsSuccess()) statuses[i] = std::move(status);
  }
}

framework::Status NodeAffinity::PreScore(framework::CycleState&, const api::Pod& pod,
                                         std::span<const framework::NodeInfo* const>) {
  if (PodPreferredAffinity(pod) == nullptr && added_.preferred.empty()) {
    return framework::Status::Skip();
  }
  return framework::Status::Success();
}

framework::Status NodeAffinity::Score(const framework::CycleState&, const api::Pod& pod,
                                      const framework::NodeInfo& node_info, int64_t* score) {
  const api::Node* node = node_info.node();
  if (node == nullptr) return framework::Status::Error("node not found");
  int64_t sum = SumMatchingWeights(added_.preferred, *node);
  if (const auto* preferred = PodPreferredAffinity(pod))
    sum += SumMatchingWeights(*preferred, *node);
  *score = sum;
  return framework::Status::Success();
}

framework::Status NodeAffinity::NormalizeScore(const framework::CycleState&, const api::Pod&,
                                               framework::NodeScoreList& scores) {
  helper::DefaultNormalizeScore(framework::kMaxNodeScore, /*reverse=*/false, scores);
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> NodeAffinity::EventsToRegister() const {
  // The hint may outlive this plugin inside the queue, so it holds its own copy of the args.
  auto added = std::make_shared<const AddedAffinity>(added_);
  return {
      {{framework::EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel,
        "NodeAddOrUpdateNodeLabel"},
       [added](const api::Pod& pod, const framework::EventObjects& event) {
         return NodeChangeHint(*added, pod, event);
       }},
      {{framework::EventResource::kUnscheduledPod, framework::kUpdate, "UnscheduledPodUpdate"},
       IsSchedulableAfterPodChange},
  };
}

framework::QueueingHint NodeAffinity::IsSchedulableAfterNodeChange(
    const api::Pod& pod, const framework::EventObjects& event) const {
  return NodeChangeHint(added_, pod, event);
}

framework::QueueingHint IsSchedulableAfterPodChange(const api::Pod& pod,
                                                    const framework::EventObjects& event) {
  if (!event.new_pod) return framework::QueueingHint::kQueue;
  const api::Pod& updated = *event.new_pod;
  if (updated.meta.uid != pod.meta.uid) return framework::QueueingHint::kSkip;
  const api::Pod& before = event.old_pod ? *event.old_pod : pod;
  const bool changed =
      before.spec.node_selector != updated.spec.node_selector ||
      !SameRequiredAffinity(PodRequiredAffinity(before), PodRequiredAffinity(updated));
  return changed ? framework::QueueingHint::kQueue : framework::QueueingHint::kSkip;
}

framework::PluginPtr New(const json& args, framework::Handle&) {
  return std::make_shared<NodeAffinity>(ParseArgs(args));
}

}  // namespace berth::plugins::nodeaffinity
