#include "pkg/plugins/nodedeclaredfeatures/nodedeclaredfeatures.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "pkg/framework/args.h"

namespace berth::plugins::nodedeclaredfeatures {
namespace {

// Bit i of a FeatureSet stands for kFeatures[i].
constexpr std::array<std::string_view, 3> kFeatures = {
    kRestartAllContainersOnContainerExits,
    kUserNamespacesHostNetworkSupport,
    kVolumeBindMountOptions,
};

constexpr FeatureSet Bit(std::string_view feature) {
  for (size_t i = 0; i < kFeatures.size(); i++) {
    if (kFeatures[i] == feature) return FeatureSet{1} << i;
  }
  return 0;
}

const framework::StateKey& PreFilterKey() {
  static const framework::StateKey key(kPreFilterStateKey);
  return key;
}

// The pod's required features; immutable once written, so Filter reads it from many threads.
struct PreFilterState final : framework::StateData {
  FeatureSet required = 0;

  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreFilterState>(*this);
  }
};

bool AnyContainer(const api::Pod& pod, bool api::Container::*flag) {
  auto set = [flag](const api::Container& c) { return c.*flag; };
  return std::any_of(pod.spec.containers.begin(), pod.spec.containers.end(), set) ||
         std::any_of(pod.spec.init_containers.begin(), pod.spec.init_containers.end(), set);
}

}  // namespace

FeatureSet RequiredFeatures(const api::Pod& pod) {
  FeatureSet required = 0;
  if (AnyContainer(pod, &api::Container::restarts_all_containers)) {
    required |= Bit(kRestartAllContainersOnContainerExits);
  }
  if (pod.spec.host_network && pod.spec.host_users.has_value() && !*pod.spec.host_users) {
    required |= Bit(kUserNamespacesHostNetworkSupport);
  }
  if (AnyContainer(pod, &api::Container::bind_mount_options) ||
      pod.spec.ephemeral_bind_mount_options) {
    required |= Bit(kVolumeBindMountOptions);
  }
  return required;
}

FeatureSet DeclaredFeatures(const api::Node& node) {
  FeatureSet declared = 0;
  for (const std::string& feature : node.status.declared_features) declared |= Bit(feature);
  return declared;
}

framework::Status NodeDeclaredFeatures::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                                  const std::vector<framework::NodeInfoPtr>&,
                                                  framework::PreFilterResult*) {
  const FeatureSet required = RequiredFeatures(pod);
  if (required == 0) return framework::Status::Skip();
  auto data = std::make_shared<PreFilterState>();
  data->required = required;
  state.Write(PreFilterKey(), std::move(data));
  return framework::Status::Success();
}

framework::Status NodeDeclaredFeatures::Filter(const framework::CycleState& state, const api::Pod&,
                                               const framework::NodeInfo& node) {
  const auto* data = state.Read<PreFilterState>(PreFilterKey());
  if (data == nullptr) {
    return framework::Status::Error("reading \"" + PreFilterKey().str() +
                                    "\" from cycleState: not found");
  }
  const FeatureSet declared = node.node() == nullptr ? 0 : DeclaredFeatures(*node.node());
  if ((data->required & ~declared) == 0) return framework::Status::Success();
  static const framework::FixedReasons kUnsatisfied(kErrReasonUnsatisfiedRequirements);
  return framework::Status::Unresolvable(kUnsatisfied);
}

std::vector<framework::ClusterEventWithHint> NodeDeclaredFeatures::EventsToRegister() const {
  return {
      {{framework::EventResource::kNode, framework::kAdd | framework::kUpdateNodeDeclaredFeature,
        "NodeAddOrUpdateNodeDeclaredFeature"},
       IsSchedulableAfterNodeChange},
      {{framework::EventResource::kUnscheduledPod, framework::kUpdate, "UnscheduledPodUpdate"},
       IsSchedulableAfterPodUpdate},
  };
}

framework::QueueingHint IsSchedulableAfterNodeChange(const api::Pod&,
                                                     const framework::EventObjects& event) {
  // A missing object is a malformed event; queueing is the safe answer.
  if (!event.new_node) return framework::QueueingHint::kQueue;
  if (event.old_node &&
      event.old_node->status.declared_features == event.new_node->status.declared_features) {
    return framework::QueueingHint::kSkip;
  }
  return framework::QueueingHint::kQueue;
}

framework::QueueingHint IsSchedulableAfterPodUpdate(const api::Pod& pod,
                                                    const framework::EventObjects& event) {
  if (!event.new_pod || !event.old_pod) return framework::QueueingHint::kQueue;
  if (event.new_pod->meta.uid != pod.meta.uid) return framework::QueueingHint::kSkip;
  return RequiredFeatures(*event.old_pod) == RequiredFeatures(*event.new_pod)
             ? framework::QueueingHint::kSkip
             : framework::QueueingHint::kQueue;
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle&) {
  framework::ExpectNoArgs(args);
  return std::make_shared<NodeDeclaredFeatures>();
}

}  // namespace berth::plugins::nodedeclaredfeatures
