#include "pkg/plugins/tainttoleration/tainttoleration.h"

#include <memory>
#include <stdexcept>

#include "pkg/framework/args.h"
#include "pkg/plugins/helper/normalize_score.h"

namespace berth::plugins::tainttoleration {
namespace {

// Built once: Filter and Score read it for every node.
const framework::StateKey& PreScoreKey() {
  static const framework::StateKey key(kPreScoreStateKey);
  return key;
}

// The pod's tolerations that can tolerate a PreferNoSchedule taint: those with that effect or
// with an empty effect (which matches every effect). Immutable once written, so Score reads it
// from many threads without copying.
struct PreScoreState final : framework::StateData {
  std::vector<api::Toleration> prefer_no_schedule_tolerations;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreScoreState>(*this);
  }
};

bool IsDoNotScheduleTaint(const api::Taint& taint) {
  return taint.effect == api::TaintEffect::kNoSchedule ||
         taint.effect == api::TaintEffect::kNoExecute;
}

// Filter's result on one node. The reason names no taint, as upstream's: the scheduler's
// FailedScheduling message counts nodes per reason, and per-taint reasons would split the count.
framework::Status FilterNode(const api::Pod& pod, const framework::NodeInfo& node) {
  if (node.node() == nullptr) return framework::Status::Error("node not found");
  if (!FindUntoleratedTaint(node.node()->spec.taints, pod.spec.tolerations)) {
    return framework::Status::Success();
  }
  static const framework::FixedReasons kUntolerated(kErrReasonUntoleratedTaint);
  return framework::Status::Unresolvable(kUntolerated);
}

framework::Status MissingPreScoreState() {
  return framework::Status::Error("reading \"" + PreScoreKey().str() +
                                  "\" from cycleState: not found");
}

// Score's result on one node: its PreferNoSchedule taints that the pod does not tolerate.
framework::Status ScoreNode(const PreScoreState& data, const framework::NodeInfo& node,
                            int64_t* score) {
  if (node.node() == nullptr) return framework::Status::Error("node not found");
  int64_t untolerated = 0;
  for (const api::Taint& taint : node.node()->spec.taints) {
    if (taint.effect != api::TaintEffect::kPreferNoSchedule) continue;
    if (!api::TolerationsTolerate(data.prefer_no_schedule_tolerations, taint)) untolerated++;
  }
  *score = untolerated;
  return framework::Status::Success();
}

bool HasUntoleratedTaint(const api::Node& node, const api::Pod& pod) {
  return FindUntoleratedTaint(node.spec.taints, pod.spec.tolerations).has_value();
}

}  // namespace

std::optional<api::Taint> FindUntoleratedTaint(const std::vector<api::Taint>& taints,
                                               const std::vector<api::Toleration>& tolerations) {
  for (const api::Taint& taint : taints) {
    if (IsDoNotScheduleTaint(taint) && !api::TolerationsTolerate(tolerations, taint)) return taint;
  }
  return std::nullopt;
}

framework::Status TaintToleration::Filter(const framework::CycleState&, const api::Pod& pod,
                                          const framework::NodeInfo& node) {
  return FilterNode(pod, node);
}

void TaintToleration::FilterNodes(const framework::CycleState&, const api::Pod& pod,
                                  std::span<const framework::NodeInfo* const> nodes,
                                  std::span<framework::Status> statuses) {
  for (size_t i = 0; i < nodes.size(); i++) {
    const api::Node* node = nodes[i]->node();
    // The common case, a node with no taints, decided without building a status.
    if (node != nullptr && node->spec.taints.empty()) continue;
    framework::Status s = FilterNode(pod, *nodes[i]);
    if (!s.IsSuccess()) statuses[i] = std::move(s);
  }
}

framework::Status TaintToleration::PreScore(framework::CycleState& state, const api::Pod& pod,
                                            std::span<const framework::NodeInfo* const>) {
  auto data = std::make_shared<PreScoreState>();
  for (const api::Toleration& toleration : pod.spec.tolerations) {
    if (toleration.effect == api::TaintEffect::kAll ||
        toleration.effect == api::TaintEffect::kPreferNoSchedule) {
      data->prefer_no_schedule_tolerations.push_back(toleration);
    }
  }
  state.Write(PreScoreKey(), std::move(data));
  return framework::Status::Success();
}

framework::Status TaintToleration::Score(const framework::CycleState& state, const api::Pod&,
                                         const framework::NodeInfo& node, int64_t* score) {
  const auto* data = state.Read<PreScoreState>(PreScoreKey());
  if (data == nullptr) return MissingPreScoreState();
  return ScoreNode(*data, node, score);
}

framework::Status TaintToleration::ScoreNodes(const framework::CycleState& state, const api::Pod&,
                                              std::span<const framework::NodeInfo* const> nodes,
                                              std::span<framework::NodeScore> scores) {
  const auto* data = state.Read<PreScoreState>(PreScoreKey());
  if (data == nullptr) return MissingPreScoreState();
  for (size_t i = 0; i < nodes.size(); i++) {
    framework::Status s = ScoreNode(*data, *nodes[i], &scores[i].score);
    if (!s.IsSuccess()) return s;
  }
  return framework::Status::Success();
}

framework::Status TaintToleration::NormalizeScore(const framework::CycleState&, const api::Pod&,
                                                  framework::NodeScoreList& scores) {
  helper::DefaultNormalizeScore(framework::kMaxNodeScore, /*reverse=*/true, scores);
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> TaintToleration::EventsToRegister() const {
  return {
      {{framework::EventResource::kNode, framework::kAdd | framework::kUpdateNodeTaint,
        "NodeAddOrUpdateNodeTaint"},
       IsSchedulableAfterNodeChange},
      {{framework::EventResource::kUnscheduledPod, framework::kUpdatePodTolerations,
        "UnscheduledPodUpdatePodTolerations"},
       IsSchedulableAfterPodTolerationChange},
  };
}

framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod& pod,
                                                     const framework::EventObjects& event) {
  // A missing object is a malformed event; queueing is the safe answer.
  if (!event.new_node) return framework::QueueingHint::kQueue;
  const bool was_untolerated = !event.old_node || HasUntoleratedTaint(*event.old_node, pod);
  const bool is_untolerated = HasUntoleratedTaint(*event.new_node, pod);
  return was_untolerated && !is_untolerated ? framework::QueueingHint::kQueue
                                            : framework::QueueingHint::kSkip;
}

framework::QueueingHint IsSchedulableAfterPodTolerationChange(
    const api::Pod& pod, const framework::EventObjects& event) {
  if (!event.new_pod) return framework::QueueingHint::kQueue;
  // Any new toleration of the rejected pod itself may tolerate the taint that rejected it; which
  // node's taint that was is not recorded, so the hint cannot be narrower.
  return event.new_pod->meta.uid == pod.meta.uid ? framework::QueueingHint::kQueue
                                                 : framework::QueueingHint::kSkip;
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle&) {
  framework::ExpectNoArgs(args);
  return std::make_shared<TaintToleration>();
}

}  // namespace berth::plugins::tainttoleration
