#include "pkg/plugins/noderesources/balanced_allocation.h"

#include <memory>
#include <set>
#include <string>
#include <utility>

#include "pkg/informer/factory.h"

namespace berth::plugins::noderesources {
namespace {

using PreScoreState = PodRequestsState;

// Built once: Score reads it for every node.
const framework::StateKey& PreScoreKey() {
  static const framework::StateKey key(kBalancedAllocationPreScoreStateKey);
  return key;
}

}  // namespace

BalancedAllocationArgs ParseBalancedAllocationArgs(const nlohmann::json& args) {
  framework::ArgsErrors errors;
  BalancedAllocationArgs parsed;
  if (errors.CheckObject(args, {"resources"})) {
    auto resources = args.find("resources");
    parsed.resources =
        ParseResourceSpecs(resources == args.end() ? nullptr : &*resources, "resources", errors);
    std::set<std::string> seen;
    for (size_t i = 0; i < parsed.resources.size(); i++) {
      const ResourceSpec& spec = parsed.resources[i];
      const std::string path = framework::IndexField("resources", i);
      if (!spec.name.empty() && !seen.insert(spec.name).second) {
        errors.Duplicate(path + ".name", spec.name);
      }
      if (spec.weight != 1) {
        errors.Invalid(path + ".weight", spec.weight, "must be 1");
      }
    }
  }
  errors.ThrowIfAny();
  return parsed;
}

BalancedAllocation::BalancedAllocation(BalancedAllocationArgs args, DeviceSources devices)
    : args_(std::move(args)),
      scorer_(args_.resources, /*use_requested=*/true, BalancedScorer(), std::move(devices)) {}

framework::Status BalancedAllocation::PreScore(framework::CycleState& state, const api::Pod& pod,
                                               std::span<const framework::NodeInfo* const>) {
  std::vector<int64_t> pod_requests = scorer_.PodRequests(pod);
  if (ResourceAllocationScorer::RequestsNothing(pod_requests)) {
    return framework::Status::Skip();
  }
  std::shared_ptr<const DeviceServedResources> devices = scorer_.DevicesFor(pod_requests);
  state.Write(PreScoreKey(),
              std::make_shared<PreScoreState>(std::move(pod_requests), std::move(devices)));
  return framework::Status::Success();
}

framework::Status BalancedAllocation::Score(const framework::CycleState& state, const api::Pod& pod,
                                            const framework::NodeInfo& node, int64_t* score) {
  return ScoreAsRunOfOne(state, pod, node, score);
}

framework::Status BalancedAllocation::ScoreNodes(const framework::CycleState& state,
                                                 const api::Pod& pod,
                                                 std::span<const framework::NodeInfo* const> nodes,
                                                 std::span<framework::NodeScore> scores) {
  if (const auto* data = state.Read<PreScoreState>(PreScoreKey())) {
    scorer_.ScoreNodes(data->pod_requests(), nodes, scores, data->devices());
    return framework::Status::Success();
  }
  // Without PreScore (a caller scoring directly) the requests are computed here, and a pod that
  // requests nothing scores 0 everywhere, as upstream.
  std::vector<int64_t> pod_requests = scorer_.PodRequests(pod);
  if (ResourceAllocationScorer::RequestsNothing(pod_requests)) {
    for (size_t i = 0; i < nodes.size(); i++) scores[i].score = 0;
    return framework::Status::Success();
  }
  std::shared_ptr<const DeviceServedResources> devices = scorer_.DevicesFor(pod_requests);
  scorer_.ScoreNodes(pod_requests, nodes, scores, devices.get());
  return framework::Status::Success();
}

framework::PluginPtr NewBalancedAllocation(const nlohmann::json& args, framework::Handle& handle) {
  BalancedAllocationArgs parsed = ParseBalancedAllocationArgs(args);
  DeviceSources devices;
  devices.devices = DevicesToScore(parsed.resources, handle);
  if (devices.devices != nullptr) {
    informer::Lister<api::DeviceClass> classes =
        handle.SharedInformerFactory().ListerFor<api::DeviceClass>();
    devices.classes = [classes] { return classes.List(); };
  }
  return std::make_shared<BalancedAllocation>(std::move(parsed), std::move(devices));
}

}  // namespace berth::plugins::noderesources
