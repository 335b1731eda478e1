// PreScore, Score and NormalizeScore: the ScheduleAnyway constraints.

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pkg/plugins/podtopologyspread/common.h"
#include "pkg/plugins/podtopologyspread/podtopologyspread.h"

namespace berth::plugins::podtopologyspread {
namespace {

// Marks an ignored node's score between the two passes of NormalizeScore (no real score is
// negative).
constexpr int64_t kInvalidScore = -1;

const framework::StateKey& PreScoreKey() {
  static const framework::StateKey key(kPreScoreStateKey);
  return key;
}

// One ScheduleAnyway constraint's counts. Per-node counts (the hostname key) are taken in Score
// from the node's own pods, so `pods` stays empty for them.
struct ScoreCounts {
  KeyColumnPtr key;
  bool per_node = false;
  // By the key column's value id: matching pods over the counted nodes with that value.
  std::vector<int64_t> pods;
  // By value id: some scored node has the value (upstream's entries of the count map).
  std::vector<char> scored;
  // The log-scaled number of domains among the scored nodes: counts in a topology with few
  // domains are not watered down by one with many.
  double weight = 0;

  void Grow(size_t size) {
    if (pods.size() < size) {
      pods.resize(size, 0);
      scored.resize(size, 0);
    }
  }
};

// Written by PreScore; Score and NormalizeScore only read it.
struct PreScoreState final : framework::StateData {
  std::vector<Constraint> constraints;
  std::vector<ScoreCounts> counts;
  std::string namespace_;
  // Nodes that lack one of the topology keys when every key is required: scored 0.
  std::unordered_set<std::string> ignored;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreScoreState>(*this);
  }
};

framework::Status MissingState() {
  return framework::Status::Error("reading \"" + PreScoreKey().str() +
                                  "\" from cycleState: not found");
}

double TopologyWeight(size_t domains) { return std::log(static_cast<double>(domains + 2)); }

framework::Status ScoreNode(const PreScoreState& s, const framework::NodeInfo& info,
                            int64_t* score) {
  const api::Node* node = info.node();
  if (node == nullptr) return framework::Status::Error("node not found");
  if (!s.ignored.empty() && s.ignored.count(node->meta.name) > 0) {
    *score = 0;
    return framework::Status::Success();
  }
  double sum = 0;
  for (size_t c = 0; c < s.constraints.size(); c++) {
    const Constraint& constraint = s.constraints[c];
    const std::string* value = node->meta.labels.Find(constraint.topology_key);
    if (value == nullptr) continue;
    const ScoreCounts& counts = s.counts[c];
    int64_t count = 0;
    if (counts.per_node) {
      if (constraint.selector) {
        count = CountMatchingPods(info.pods(), s.namespace_, *constraint.selector);
      }
    } else {
      const int32_t id = counts.key->Find(*value);
      if (id >= 0 && static_cast<size_t>(id) < counts.pods.size()) {
        count = counts.pods[static_cast<size_t>(id)];
      }
    }
    // maxSkew - 1 added to every node flattens the differences a skew within maxSkew makes.
    sum +=
        static_cast<double>(count) * counts.weight + static_cast<double>(constraint.max_skew - 1);
  }
  *score = std::llround(sum);
  return framework::Status::Success();
}

}  // namespace

framework::Status PodTopologySpread::PreScore(framework::CycleState& state, const api::Pod& pod,
                                              std::span<const framework::NodeInfo* const> nodes) {
  const std::vector<framework::NodeInfoPtr>& all = handle_.SnapshotSharedLister().List();
  if (all.empty()) return framework::Status::Skip();
  std::vector<Constraint> constraints =
      GetConstraints(pod, api::WhenUnsatisfiable::kScheduleAnyway);
  if (constraints.empty()) return framework::Status::Skip();
  // The system defaults do not require every key, so that nodes without a zone label still get
  // hostname spreading.
  const bool require_all_keys = !pod.spec.topology_spread_constraints.empty() || !system_defaulted_;

  auto s = std::make_shared<PreScoreState>();
  s->constraints = std::move(constraints);
  s->namespace_ = pod.meta.namespace_;
  const std::vector<Constraint>& cs = s->constraints;
  s->counts.resize(cs.size());
  {
    std::lock_guard lock(index_mu_);
    index_.Sync(all);
    std::vector<const std::vector<int32_t>*> pods(cs.size(), nullptr);
    std::vector<size_t> domains(cs.size(), 0);
    for (size_t c = 0; c < cs.size(); c++) {
      ScoreCounts& counts = s->counts[c];
      counts.key = index_.Key(cs[c].topology_key);
      counts.per_node = cs[c].topology_key == kHostnameKey;
      counts.Grow(counts.key->size());
      if (!counts.per_node && cs[c].selector && !cs[c].selector->Empty()) {
        pods[c] = &index_.Counts(pod.meta.namespace_, *cs[c].selector);
      }
    }
    // The domains of the scored nodes. A missing label reads as the empty value, as a Go map
    // lookup does; interning here is safe, no Filter or Score of this cycle runs meanwhile.
    for (const framework::NodeInfo* info : nodes) {
      const api::Node* node = info->node();
      if (node == nullptr) continue;
      if (require_all_keys && !NodeHasAllKeys(node->meta.labels, cs)) {
        s->ignored.insert(node->meta.name);
        continue;
      }
      for (size_t c = 0; c < cs.size(); c++) {
        ScoreCounts& counts = s->counts[c];
        if (counts.per_node) continue;
        const std::string* value = node->meta.labels.Find(cs[c].topology_key);
        const auto id = static_cast<size_t>(counts.key->Intern(value ? *value : ""));
        counts.Grow(id + 1);
        if (!counts.scored[id]) {
          counts.scored[id] = 1;
          domains[c]++;
        }
      }
    }
    for (size_t c = 0; c < cs.size(); c++) {
      const size_t size = s->counts[c].per_node ? nodes.size() - s->ignored.size() : domains[c];
      s->counts[c].weight = TopologyWeight(size);
    }
    // Matching pods per domain, over every node of the snapshot the constraint counts.
    std::vector<int32_t> empty_value(cs.size());
    for (size_t c = 0; c < cs.size(); c++) empty_value[c] = s->counts[c].key->Find("");
    const NodeInclusion inclusion(pod, cs, index_);
    for (size_t i = 0; i < index_.size(); i++) {
      if (require_all_keys) {
        bool has_all_keys = true;
        for (const ScoreCounts& counts : s->counts) {
          if (counts.key->node_values[i] < 0) has_all_keys = false;
        }
        if (!has_all_keys) continue;
      }
      for (size_t c = 0; c < cs.size(); c++) {
        if (pods[c] == nullptr || !inclusion.Includes(cs[c], i)) continue;
        ScoreCounts& counts = s->counts[c];
        int32_t id = counts.key->node_values[i];
        if (id < 0) id = empty_value[c];
        if (id < 0 || !counts.scored[static_cast<size_t>(id)]) continue;
        counts.pods[static_cast<size_t>(id)] += (*pods[c])[i];
      }
    }
  }
  state.Write(PreScoreKey(), std::move(s));
  return framework::Status::Success();
}

framework::Status PodTopologySpread::Score(const framework::CycleState& state, const api::Pod&,
                                           const framework::NodeInfo& node, int64_t* score) {
  const auto* s = state.Read<PreScoreState>(PreScoreKey());
  if (s == nullptr) return MissingState();
  return ScoreNode(*s, node, score);
}

framework::Status PodTopologySpread::ScoreNodes(const framework::CycleState& state, const api::Pod&,
                                                std::span<const framework::NodeInfo* const> nodes,
                                                std::span<framework::NodeScore> scores) {
  const auto* s = state.Read<PreScoreState>(PreScoreKey());
  if (s == nullptr) return MissingState();
  for (size_t i = 0; i < nodes.size(); i++) {
    framework::Status status = ScoreNode(*s, *nodes[i], &scores[i].score);
    if (!status.IsSuccess()) return status;
  }
  return framework::Status::Success();
}

framework::Status PodTopologySpread::NormalizeScore(const framework::CycleState& state,
                                                    const api::Pod&,
                                                    framework::NodeScoreList& scores) {
  const auto* s = state.Read<PreScoreState>(PreScoreKey());
  if (s == nullptr) return MissingState();
  int64_t min_score = std::numeric_limits<int64_t>::max();
  int64_t max_score = 0;
  for (framework::NodeScore& score : scores) {
    if (!s->ignored.empty() && s->ignored.count(std::string(score.name)) > 0) {
      score.score = kInvalidScore;
      continue;
    }
    min_score = std::min(min_score, score.score);
    max_score = std::max(max_score, score.score);
  }
  for (framework::NodeScore& score : scores) {
    if (score.score == kInvalidScore) {
      score.score = 0;
    } else if (max_score == 0) {
      score.score = framework::kMaxNodeScore;
    } else {
      // The node with the fewest matching pods gets the most.
      score.score = framework::kMaxNodeScore * (max_score + min_score - score.score) / max_score;
    }
  }
  return framework::Status::Success();
}

}  // namespace berth::plugins::podtopologyspread
