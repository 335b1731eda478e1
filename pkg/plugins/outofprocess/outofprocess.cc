#include "pkg/plugins/outofprocess/outofprocess.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include "pkg/log/log.h"

namespace berth::plugins::outofprocess {
namespace {

using framework::Code;
using framework::Status;
using json = nlohmann::json;

// The framework's own deadline on a wait comes this long after the last endpoint's, so that the
// poller's rejection, which names the endpoint, comes first.
constexpr std::chrono::seconds kFrameworkWaitSlack{2};

const framework::StateKey& FilterKey() {
  static const framework::StateKey key("OutOfProcess/filter");
  return key;
}
const framework::StateKey& ScoreKey() {
  static const framework::StateKey key("OutOfProcess/score");
  return key;
}

// The Filter endpoints' verdicts of one cycle: only the rejected nodes are kept.
struct FilterState final : framework::StateData {
  std::unordered_map<std::string, Status> rejected;
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<FilterState>(*this);
  }
};

// The Score endpoints' combined score of each node they scored, in [0, 100].
struct ScoreState final : framework::StateData {
  std::unordered_map<std::string, int64_t> scores;
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<ScoreState>(*this);
  }
};

Status Rejection(const Endpoint& endpoint, Code code, const std::string& reason,
                 std::string_view what) {
  return {code, Named(endpoint) +
                    (reason.empty() ? " rejected the " + std::string(what) : ": " + reason)};
}

void LogIgnored(const Endpoint& endpoint, const api::Pod& pod, const std::string& error) {
  log::Warn("an ignorable out-of-process endpoint failed; it has no say in this decision",
            {{"endpoint", endpoint.name()}, {"pod", pod.meta.Key()}, {"error", error}});
}

// The decoded answer of a reply, or the error that stands for it (the reply's failure, or what
// is wrong with the answer).
template <typename Answer, typename Decode>
std::optional<Answer> Decoded(const Endpoint& endpoint, Verb verb, const Endpoint::Reply& reply,
                              Decode decode, std::string* error) {
  if (!reply.ok()) {
    *error = reply.error;
    return std::nullopt;
  }
  try {
    return decode(*reply.answer);
  } catch (const ProtocolError& e) {
    *error = Named(endpoint) + " (" + std::string(VerbLabel(verb)) + "): " + e.what();
    return std::nullopt;
  }
}

}  // namespace

OutOfProcess::OutOfProcess(const Args& args, framework::Handle& handle) : handle_(handle) {
  for (const EndpointArgs& endpoint : args.endpoints) {
    endpoints_.push_back(
        std::make_unique<Endpoint>(endpoint, handle.ProfileName(), handle.MetricsRegistry()));
    for (size_t i = 0; i < kPoints; i++) {
      if (endpoint.points[i]) by_point_[i].push_back(endpoints_.back().get());
    }
  }
  if (!At(Point::kPermit).empty()) {
    poller_ = std::make_unique<PermitPoller>(handle_, std::string(kName));
  }
}

OutOfProcess::~OutOfProcess() = default;

std::vector<Endpoint::Reply> OutOfProcess::CallAll(Point point, Verb verb, const api::Pod& pod,
                                                   const std::string& node) const {
  const std::string encoded = EndpointPod(pod);
  std::vector<Endpoint::Pending> pending;
  pending.reserve(At(point).size());
  for (const Endpoint* endpoint : At(point)) {
    pending.push_back(endpoint->Start(
        verb,
        RequestBody(verb, endpoint->name(), handle_.ProfileName(), encoded, {}, node, false)));
  }
  std::vector<Endpoint::Reply> replies;
  replies.reserve(pending.size());
  for (Endpoint::Pending& call : pending) replies.push_back(call.Wait());
  return replies;
}

Status OutOfProcess::Verdicts(Point point, Verb verb, const api::Pod& pod,
                              const std::string& node) const {
  if (At(point).empty()) return {};
  const std::vector<Endpoint::Reply> replies = CallAll(point, verb, pod, node);
  for (size_t i = 0; i < replies.size(); i++) {
    const Endpoint& endpoint = *At(point)[i];
    std::string error;
    const std::optional<Verdict> verdict =
        Decoded<Verdict>(endpoint, verb, replies[i], DecodeVerdict, &error);
    if (!verdict) {
      if (!endpoint.args().ignorable) return Status::Error(error);
      LogIgnored(endpoint, pod, error);
      continue;
    }
    if (verdict->code != Code::kSuccess) {
      return Rejection(endpoint, verdict->code, verdict->reason, "pod");
    }
  }
  return {};
}

Status OutOfProcess::PreFilter(framework::CycleState& state, const api::Pod& pod,
                               const std::vector<framework::NodeInfoPtr>& nodes,
                               framework::PreFilterResult* result) {
  const auto& pre_filter = At(Point::kPreFilter);
  const auto& filter = At(Point::kFilter);
  if (pre_filter.empty() && filter.empty()) return Status::Skip();

  const std::string encoded = EndpointPod(pod);
  std::vector<std::string_view> names;
  names.reserve(nodes.size());
  for (const auto& node : nodes) names.push_back(node->name());
  // Every endpoint is asked at once: the cycle waits for the slowest, not for their sum.
  std::vector<Endpoint::Pending> pending;
  pending.reserve(pre_filter.size());
  for (const Endpoint* endpoint : pre_filter) {
    pending.push_back(endpoint->Start(
        Verb::kPreFilter, RequestBody(Verb::kPreFilter, endpoint->name(), handle_.ProfileName(),
                                      encoded, names, "", state.dry_run)));
  }
  for (const Endpoint* endpoint : filter) {
    pending.push_back(endpoint->Start(
        Verb::kFilter, RequestBody(Verb::kFilter, endpoint->name(), handle_.ProfileName(), encoded,
                                   names, "", state.dry_run)));
  }
  std::vector<Endpoint::Reply> replies;
  replies.reserve(pending.size());
  for (Endpoint::Pending& call : pending) replies.push_back(call.Wait());

  std::optional<std::set<std::string>> allowed;
  for (size_t i = 0; i < pre_filter.size(); i++) {
    const Endpoint& endpoint = *pre_filter[i];
    std::string error;
    std::optional<PreFilterAnswer> answer =
        Decoded<PreFilterAnswer>(endpoint, Verb::kPreFilter, replies[i], DecodePreFilter, &error);
    if (!answer) {
      if (!endpoint.args().ignorable) return Status::Error(error);
      LogIgnored(endpoint, pod, error);
      continue;
    }
    if (answer->verdict.code != Code::kSuccess) {
      return Rejection(endpoint, answer->verdict.code, answer->verdict.reason, "pod");
    }
    if (answer->node_names) {
      std::set<std::string> named(answer->node_names->begin(), answer->node_names->end());
      if (allowed) {
        std::set<std::string> both;
        std::set_intersection(allowed->begin(), allowed->end(), named.begin(), named.end(),
                              std::inserter(both, both.end()));
        allowed = std::move(both);
      } else {
        allowed = std::move(named);
      }
    }
  }

  auto verdicts = std::make_shared<FilterState>();
  for (size_t i = 0; i < filter.size(); i++) {
    const Endpoint& endpoint = *filter[i];
    std::string error;
    std::optional<FilterAnswer> answer = Decoded<FilterAnswer>(
        endpoint, Verb::kFilter, replies[pre_filter.size() + i], DecodeFilter, &error);
    if (!answer) {
      if (!endpoint.args().ignorable) return Status::Error(error);
      LogIgnored(endpoint, pod, error);
      continue;
    }
    for (auto& [node, verdict] : answer->rejected) {
      Status rejection = Rejection(endpoint, verdict.code, verdict.reason, "node");
      auto [it, added] = verdicts->rejected.try_emplace(node, rejection);
      if (added) continue;
      // A node several endpoints reject carries every reason; it is unresolvable when one says so.
      std::vector<std::string> reasons = it->second.reasons();
      reasons.push_back(rejection.Message());
      const Code code = it->second.code() == Code::kUnschedulableAndUnresolvable ? it->second.code()
                                                                                 : verdict.code;
      it->second = Status(code, std::move(reasons));
    }
  }
  if (allowed) result->node_names = std::move(allowed);
  if (filter.empty()) return result->AllNodes() ? Status::Skip() : Status();
  state.Write(FilterKey(), std::move(verdicts));
  return {};
}

Status OutOfProcess::Filter(const framework::CycleState& state, const api::Pod&,
                            const framework::NodeInfo& node) {
  const FilterState* verdicts = state.Read<FilterState>(FilterKey());
  if (verdicts == nullptr) return {};
  auto it = verdicts->rejected.find(node.name());
  return it == verdicts->rejected.end() ? Status() : it->second;
}

Status OutOfProcess::PreScore(framework::CycleState& state, const api::Pod& pod,
                              std::span<const framework::NodeInfo* const> nodes) {
  const auto& scorers = At(Point::kScore);
  if (scorers.empty()) return Status::Skip();
  const std::string encoded = EndpointPod(pod);
  std::vector<std::string_view> names;
  names.reserve(nodes.size());
  for (const framework::NodeInfo* node : nodes) names.push_back(node->name());
  std::vector<Endpoint::Pending> pending;
  pending.reserve(scorers.size());
  for (const Endpoint* endpoint : scorers) {
    pending.push_back(endpoint->Start(
        Verb::kScore, RequestBody(Verb::kScore, endpoint->name(), handle_.ProfileName(), encoded,
                                  names, "", state.dry_run)));
  }
  std::vector<Endpoint::Reply> replies;
  replies.reserve(pending.size());
  for (Endpoint::Pending& call : pending) replies.push_back(call.Wait());

  // Each node's score is the weighted mean of the answering endpoints' scores (a node an
  // endpoint did not score counts 0 there), so it stays in [0, 100] as a plugin's must.
  std::unordered_map<std::string, int64_t> weighted;
  int64_t total_weight = 0;
  for (size_t i = 0; i < scorers.size(); i++) {
    const Endpoint& endpoint = *scorers[i];
    std::string error;
    auto scores = Decoded<std::vector<std::pair<std::string, int64_t>>>(
        endpoint, Verb::kScore, replies[i], DecodeScores, &error);
    if (!scores) {
      if (!endpoint.args().ignorable) return Status::Error(error);
      LogIgnored(endpoint, pod, error);
      continue;
    }
    total_weight += endpoint.args().score_weight;
    for (const auto& [node, score] : *scores) {
      weighted[node] += score * endpoint.args().score_weight;
    }
  }
  if (total_weight == 0) return Status::Skip();
  auto out = std::make_shared<ScoreState>();
  out->scores.reserve(weighted.size());
  for (const auto& [node, sum] : weighted) out->scores[node] = sum / total_weight;
  state.Write(ScoreKey(), std::move(out));
  return {};
}

Status OutOfProcess::Score(const framework::CycleState& state, const api::Pod&,
                           const framework::NodeInfo& node, int64_t* score) {
  *score = 0;
  const ScoreState* scores = state.Read<ScoreState>(ScoreKey());
  if (scores == nullptr) return {};
  auto it = scores->scores.find(node.name());
  if (it != scores->scores.end()) *score = it->second;
  return {};
}

Status OutOfProcess::Reserve(framework::CycleState&, const api::Pod& pod, const std::string& node) {
  return Verdicts(Point::kReserve, Verb::kReserve, pod, node);
}

void OutOfProcess::Unreserve(framework::CycleState&, const api::Pod& pod, const std::string& node) {
  if (poller_) poller_->Forget(pod.meta.uid);
  if (At(Point::kReserve).empty()) return;
  const std::vector<Endpoint::Reply> replies =
      CallAll(Point::kReserve, Verb::kUnreserve, pod, node);
  for (size_t i = 0; i < replies.size(); i++) {
    if (replies[i].ok()) continue;
    log::Warn("an out-of-process endpoint failed to undo a reservation",
              {{"endpoint", At(Point::kReserve)[i]->name()},
               {"pod", pod.meta.Key()},
               {"error", replies[i].error}});
  }
}

Status OutOfProcess::Permit(framework::CycleState&, const api::Pod& pod, const std::string& node,
                            std::chrono::milliseconds* timeout) {
  const auto& permitters = At(Point::kPermit);
  if (permitters.empty()) return {};
  const std::vector<Endpoint::Reply> replies = CallAll(Point::kPermit, Verb::kPermit, pod, node);
  std::vector<PermitPoller::Wait> waits;
  std::chrono::milliseconds longest{0};
  const auto now = PermitPoller::Clock::now();
  std::string encoded;
  for (size_t i = 0; i < replies.size(); i++) {
    const Endpoint& endpoint = *permitters[i];
    std::string error;
    std::optional<PermitAnswer> answer =
        Decoded<PermitAnswer>(endpoint, Verb::kPermit, replies[i], DecodePermit, &error);
    if (!answer) {
      if (!endpoint.args().ignorable) return Status::Error(error);
      LogIgnored(endpoint, pod, error);
      continue;
    }
    switch (answer->decision) {
      case PermitAnswer::Decision::kAllow:
        break;
      case PermitAnswer::Decision::kReject:
        return Status::Unschedulable(Named(endpoint) + " rejected the pod" +
                                     (answer->reason.empty() ? "" : ": " + answer->reason));
      case PermitAnswer::Decision::kWait: {
        const std::chrono::milliseconds max_wait = endpoint.args().permit.max_wait;
        const std::chrono::milliseconds wait =
            std::min(answer->timeout.value_or(max_wait), max_wait);
        if (encoded.empty()) encoded = EndpointPod(pod);
        waits.push_back({&endpoint,
                         RequestBody(Verb::kPermitStatus, endpoint.name(), handle_.ProfileName(),
                                     encoded, {}, node, false),
                         now + wait, wait});
        longest = std::max(longest, wait);
        break;
      }
    }
  }
  if (waits.empty()) return {};
  poller_->Add(pod.meta.uid, std::move(waits));
  *timeout = std::min<std::chrono::milliseconds>(longest + kFrameworkWaitSlack,
                                                 framework::kMaxPermitTimeout);
  return Status::Wait();
}

Status OutOfProcess::PreBindPreFlight(framework::CycleState&, const api::Pod&, const std::string&) {
  return At(Point::kPreBind).empty() ? Status::Skip() : Status();
}

Status OutOfProcess::PreBind(framework::CycleState&, const api::Pod& pod, const std::string& node) {
  if (At(Point::kPreBind).empty()) return Status::Skip();
  return Verdicts(Point::kPreBind, Verb::kPreBind, pod, node);
}

void OutOfProcess::PostBind(framework::CycleState&, const api::Pod& pod, const std::string& node) {
  if (At(Point::kPostBind).empty()) return;
  const std::vector<Endpoint::Reply> replies =
      CallAll(Point::kPostBind, Verb::kPostBind, pod, node);
  for (size_t i = 0; i < replies.size(); i++) {
    if (replies[i].ok()) continue;
    log::Warn("an out-of-process endpoint failed at PostBind",
              {{"endpoint", At(Point::kPostBind)[i]->name()},
               {"pod", pod.meta.Key()},
               {"error", replies[i].error}});
  }
}

framework::PluginPtr New(const json& args, framework::Handle& handle) {
  return std::make_shared<OutOfProcess>(ParseArgs(args), handle);
}

}  // namespace berth::plugins::outofprocess
