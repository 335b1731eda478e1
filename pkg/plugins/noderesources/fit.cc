#include "pkg/plugins/noderesources/fit.h"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>
#include <utility>

#include "pkg/api/requests.h"
#include "pkg/framework/args.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/dynamicresources/class_devices.h"
#include "pkg/plugins/helper/extended_resources.h"

namespace berth::plugins::noderesources {
namespace {

constexpr std::string_view kLeastAllocated = "LeastAllocated";
constexpr std::string_view kMostAllocated = "MostAllocated";
constexpr std::string_view kRequestedToCapacityRatio = "RequestedToCapacityRatio";
constexpr int64_t kMaxResourceWeight = 100;

// The pod's requests as computed at decode time (containers summed, init containers as a max,
// sidecars, pod-level resources and overhead accounted for). Immutable once written.
class PreFilterState final : public framework::StateData {
 public:
  PreFilterState(api::ResourceList request, std::vector<std::string> delegated)
      : request_(std::move(request)), delegated_(std::move(delegated)) {}
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreFilterState>(*this);
  }
  const api::ResourceList& request() const { return request_; }
  // The requested extended resources a DeviceClass serves from devices: on a node that does not
  // offer one as allocatable, DynamicResources decides, not this plugin.
  const std::vector<std::string>& delegated() const { return delegated_; }

 private:
  api::ResourceList request_;
  std::vector<std::string> delegated_;
};

using PreScoreState = PodRequestsState;

// CycleState keys built once: Filter and Score read them for every node.
const framework::StateKey& PreFilterKey() {
  static const framework::StateKey key(kPreFilterStateKey);
  return key;
}

const framework::StateKey& PreScoreKey() {
  static const framework::StateKey key(kPreScoreStateKey);
  return key;
}

framework::Status MissingPreFilterState() {
  return framework::Status::Error("error reading \"" + PreFilterKey().str() +
                                  "\" from cycleState: not found");
}

bool IsIgnored(const std::string& name, const IgnoredResources& ignored) {
  // Checked first: classifying the name allocates, and most configurations ignore nothing.
  if (ignored.names.empty() && ignored.groups.empty()) {
    return false;
  }
  if (!IsExtendedResourceName(name)) {
    return false;
  }
  if (ignored.names.count(name)) {
    return true;
  }
  return ignored.groups.count(name.substr(0, name.find('/'))) > 0;
}

bool RequestsNothing(const api::ResourceList& request) {
  return request.milli_cpu == 0 && request.memory == 0 && request.ephemeral_storage == 0 &&
         request.scalar.empty();
}

// True when `modified` has more of something the pod asks for than `original`, or admits more
// pods (upstream haveAnyRequestedResourcesIncreased).
bool AnyRequestedResourceIncreased(const api::ResourceList& pod_request,
                                   const api::ResourceList& original,
                                   const api::ResourceList& modified) {
  if (modified.pods > original.pods) {
    return true;
  }
  if (RequestsNothing(pod_request)) {
    return false;
  }
  if ((pod_request.milli_cpu > 0 && modified.milli_cpu > original.milli_cpu) ||
      (pod_request.memory > 0 && modified.memory > original.memory) ||
      (pod_request.ephemeral_storage > 0 &&
       modified.ephemeral_storage > original.ephemeral_storage)) {
    return true;
  }
  for (const auto& [name, quantity] : pod_request.scalar) {
    if (quantity == 0) {
      continue;
    }
    if (modified.Get(name) > original.Get(name)) {
      return true;
    }
  }
  return false;
}

// Upstream isSchedulableAfterPodScaleDown: the pod's own scale-down, or a scheduled pod giving
// back some of a resource the pending pod requests.
bool ScaleDownMayHelp(const api::Pod& pod, const api::Pod& original, const api::Pod& modified) {
  if (modified.meta.uid == pod.meta.uid) {
    return true;
  }
  if (modified.spec.node_name.empty()) {
    return false;
  }
  const api::ResourceList& wanted = pod.requests;
  const api::ResourceList& before = original.requests;
  const api::ResourceList& after = modified.requests;
  if (wanted.milli_cpu != 0 && before.milli_cpu > after.milli_cpu) {
    return true;
  }
  if (wanted.memory != 0 && before.memory > after.memory) {
    return true;
  }
  if (wanted.ephemeral_storage != 0 && before.ephemeral_storage > after.ephemeral_storage) {
    return true;
  }
  for (const auto& [name, quantity] : wanted.scalar) {
    if (quantity == 0 || !IsScalarResourceName(name)) {
      continue;
    }
    if (before.Get(name) > after.Get(name)) {
      return true;
    }
  }
  return false;
}

framework::QueueingHint HintAfterPodEvent(const api::Pod& pod,
                                          const framework::EventObjects& event) {
  if (event.new_pod == nullptr) {
    if (event.old_pod == nullptr) {
      return framework::QueueingHint::kQueue;
    }
    // A pod that was neither bound nor nominated held no room on any node.
    if (event.old_pod->spec.node_name.empty() &&
        event.old_pod->status.nominated_node_name.empty()) {
      return framework::QueueingHint::kSkip;
    }
    return framework::QueueingHint::kQueue;
  }
  if (event.old_pod == nullptr) {
    return framework::QueueingHint::kQueue;
  }
  return ScaleDownMayHelp(pod, *event.old_pod, *event.new_pod) ? framework::QueueingHint::kQueue
                                                               : framework::QueueingHint::kSkip;
}

framework::QueueingHint HintAfterNodeChange(const IgnoredResources& ignored, const api::Pod& pod,
                                            const framework::EventObjects& event) {
  if (event.new_node == nullptr) {
    return framework::QueueingHint::kQueue;
  }
  const api::ResourceList& allocatable = event.new_node->status.allocatable;
  // Whether the pod fits the node were it empty: if not, no amount of room helps.
  if (!FitsRequest(pod.requests, allocatable, api::ResourceList{}, 0, ignored).empty()) {
    return framework::QueueingHint::kSkip;
  }
  if (event.old_node == nullptr) {
    return framework::QueueingHint::kQueue;
  }
  return AnyRequestedResourceIncreased(pod.requests, event.old_node->status.allocatable,
                                       allocatable)
             ? framework::QueueingHint::kQueue
             : framework::QueueingHint::kSkip;
}

ResourceScorer BuildScorer(const ScoringStrategy& strategy) {
  switch (strategy.type) {
    case ScoringStrategyType::kMostAllocated:
      return MostAllocatedScorer(strategy.resources);
    case ScoringStrategyType::kRequestedToCapacityRatio:
      return RequestedToCapacityRatioScorer(strategy.resources, strategy.shape);
    case ScoringStrategyType::kLeastAllocated:
      break;
  }
  return LeastAllocatedScorer(strategy.resources);
}

// Reads a list of strings at `field`; entries that are not strings are reported.
std::vector<std::string> ParseStringList(const nlohmann::json& args, const char* field,
                                         framework::ArgsErrors& errors) {
  std::vector<std::string> values;
  auto it = args.find(field);
  if (it == args.end() || it->is_null()) {
    return values;
  }
  if (!it->is_array()) {
    errors.Invalid(field, *it, "must be a list");
    return values;
  }
  for (size_t i = 0; i < it->size(); i++) {
    const nlohmann::json& entry = (*it)[i];
    if (!entry.is_string()) {
      errors.Invalid(framework::IndexField(field, i), entry, "must be a string");
      continue;
    }
    values.push_back(entry.get<std::string>());
  }
  return values;
}

std::vector<UtilizationShapePoint> ParseShape(const nlohmann::json& ratio, const std::string& path,
                                              framework::ArgsErrors& errors) {
  if (!errors.CheckObject(ratio, {"shape"}, path)) {
    return {};
  }
  auto list = ratio.find("shape");
  return ParseShapePoints(list == ratio.end() ? nlohmann::json() : *list,
                          framework::ChildField(path, "shape"), errors);
}

ScoringStrategy ParseScoringStrategy(const nlohmann::json& json, framework::ArgsErrors& errors) {
  const std::string path = "scoringStrategy";
  ScoringStrategy strategy;
  if (!errors.CheckObject(json, {"type", "resources", "requestedToCapacityRatio"}, path)) {
    return strategy;
  }

  // Like upstream's v1 API, a given scoringStrategy must name its type.
  auto type = json.find("type");
  std::string type_name;
  if (type != json.end() && type->is_string()) {
    type_name = type->get<std::string>();
  }
  if (type_name == kLeastAllocated) {
    strategy.type = ScoringStrategyType::kLeastAllocated;
  } else if (type_name == kMostAllocated) {
    strategy.type = ScoringStrategyType::kMostAllocated;
  } else if (type_name == kRequestedToCapacityRatio) {
    strategy.type = ScoringStrategyType::kRequestedToCapacityRatio;
  } else {
    errors.NotSupported(path + ".type", type == json.end() ? nlohmann::json("") : *type,
                        {kLeastAllocated, kMostAllocated, kRequestedToCapacityRatio});
  }

  auto resources = json.find("resources");
  strategy.resources = ParseResourceSpecs(resources == json.end() ? nullptr : &*resources,
                                          path + ".resources", errors);
  for (size_t i = 0; i < strategy.resources.size(); i++) {
    const ResourceSpec& spec = strategy.resources[i];
    if (spec.weight <= 0 || spec.weight > kMaxResourceWeight) {
      errors.Invalid(framework::IndexField(path + ".resources", i) + ".weight", spec.weight,
                     "resource weight of " + spec.name + " not in valid range (0, " +
                         std::to_string(kMaxResourceWeight) + "]");
    }
  }

  auto ratio = json.find("requestedToCapacityRatio");
  const std::string ratio_path = path + ".requestedToCapacityRatio";
  const bool has_ratio = ratio != json.end() && !ratio->is_null();
  if (strategy.type == ScoringStrategyType::kRequestedToCapacityRatio) {
    if (has_ratio) {
      strategy.shape = ParseShape(*ratio, ratio_path, errors);
    } else {
      errors.Required(ratio_path, "must be specified when type is RequestedToCapacityRatio");
    }
  } else if (has_ratio && (type_name == kLeastAllocated || type_name == kMostAllocated)) {
    errors.Forbidden(ratio_path, "must be nil when type is not RequestedToCapacityRatio");
  }
  return strategy;
}

}  // namespace

FitArgs ParseFitArgs(const nlohmann::json& args) {
  framework::ArgsErrors errors;
  FitArgs parsed;
  if (errors.CheckObject(args, {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"})) {
    std::vector<std::string> names = ParseStringList(args, "ignoredResources", errors);
    for (size_t i = 0; i < names.size(); i++) {
      if (!IsQualifiedName(names[i])) {
        errors.Invalid(framework::IndexField("ignoredResources", i), names[i],
                       "must be a qualified name");
      }
      parsed.ignored_resources.insert(names[i]);
    }
    std::vector<std::string> groups = ParseStringList(args, "ignoredResourceGroups", errors);
    for (size_t i = 0; i < groups.size(); i++) {
      const std::string path = framework::IndexField("ignoredResourceGroups", i);
      if (groups[i].find('/') != std::string::npos) {
        errors.Invalid(path, groups[i], "resource group name can't contain '/'");
      } else if (!IsQualifiedName(groups[i])) {
        errors.Invalid(path, groups[i], "must be a qualified name");
      }
      parsed.ignored_resource_groups.insert(groups[i]);
    }
    auto strategy = args.find("scoringStrategy");
    if (strategy != args.end() && !strategy->is_null()) {
      parsed.scoring_strategy = ParseScoringStrategy(*strategy, errors);
    }
  }
  errors.ThrowIfAny();
  return parsed;
}

namespace {

std::string InsufficientReason(std::string_view name, std::string_view fixed_reason) {
  return fixed_reason.empty() ? std::string(kErrReasonInsufficientPrefix) + std::string(name)
                              : std::string(fixed_reason);
}

// The first-class resources' reasons, in the order ForEachShortfall reports them; bit i of a
// shortfall mask stands for kFirstClassReasons[i].
enum FirstClass : size_t { kPodsShort, kCpuShort, kMemoryShort, kEphemeralStorageShort };
constexpr std::array<std::string_view, 4> kFirstClassReasons = {
    kErrReasonTooManyPods, kErrReasonInsufficientCPU, kErrReasonInsufficientMemory,
    kErrReasonInsufficientEphemeralStorage};

// Calls on_short(name, fixed_reason, first_class_bit, requested, used, capacity, unresolvable) for
// each resource the request lacks, first-class ones first. For extended resources fixed_reason is
// empty (their reason is built from the name) and first_class_bit is 0. unresolvable: even the
// empty node could not hold the request (never for the pod count, as upstream). Nothing is
// allocated here: this runs for every node of every cycle, and with a pod that fits nowhere, for
// every node of the cluster.
template <typename OnShort>
void ForEachShortfall(const api::ResourceList& pod_request, const api::ResourceList& allocatable,
                      const api::ResourceList& node_requested, size_t pods_on_node,
                      const IgnoredResources& ignored, OnShort&& on_short,
                      const std::vector<std::string>& delegated = {}) {
  const auto pod_count = static_cast<int64_t>(pods_on_node);
  if (pod_count + 1 > allocatable.pods) {
    on_short(api::kResourcePods, kFirstClassReasons[kPodsShort], 1U << kPodsShort, 1, pod_count,
             allocatable.pods, false);
  }
  if (RequestsNothing(pod_request)) {
    return;
  }
  auto check = [&](std::string_view name, std::string_view reason, unsigned first_class_bit,
                   int64_t requested, int64_t used, int64_t capacity) {
    // In 128 bits: capacity - used is outside int64 for a negative capacity (which nothing
    // validates in a node's status) below a use near 2^63, and must not wrap into room. A
    // saturated request is more than int64 holds and is short everywhere (kSaturatedAmount).
    const bool saturated = requested == api::kSaturatedAmount;
    if (requested > 0 && (saturated || requested > static_cast<api::WideInt>(capacity) - used)) {
      on_short(name, reason, first_class_bit, requested, used, capacity,
               saturated || requested > capacity);
    }
  };
  auto check_first_class = [&](std::string_view name, FirstClass resource, int64_t requested,
                               int64_t used, int64_t capacity) {
    check(name, kFirstClassReasons[resource], 1U << resource, requested, used, capacity);
  };
  check_first_class(api::kResourceCPU, kCpuShort, pod_request.milli_cpu, node_requested.milli_cpu,
                    allocatable.milli_cpu);
  check_first_class(api::kResourceMemory, kMemoryShort, pod_request.memory, node_requested.memory,
                    allocatable.memory);
  check_first_class(api::kResourceEphemeralStorage, kEphemeralStorageShort,
                    pod_request.ephemeral_storage, node_requested.ephemeral_storage,
                    allocatable.ephemeral_storage);
  for (const auto& [name, quantity] : pod_request.scalar) {
    if (quantity == 0 || IsIgnored(name, ignored)) {
      continue;
    }
    // Scalar names never alias the first-class fields, so Get() reads the scalar entry.
    const int64_t capacity = allocatable.Get(name);
    if (capacity == 0 && std::find(delegated.begin(), delegated.end(), name) != delegated.end()) {
      continue;
    }
    check(name, {}, 0, quantity, node_requested.Get(name), capacity);
  }
}

// The reasons of every combination of first-class shortfalls, made once: a pod that fits nowhere
// is rejected by every node of the cluster in every cycle, with one of these few lists.
const framework::FixedReasons& FirstClassReasons(unsigned mask) {
  static const auto kTable = [] {
    std::array<std::unique_ptr<const framework::FixedReasons>, 1U << kFirstClassReasons.size()>
        table;
    for (unsigned m = 0; m < table.size(); m++) {
      std::vector<std::string> reasons;
      for (size_t i = 0; i < kFirstClassReasons.size(); i++) {
        if ((m & (1U << i)) != 0) reasons.emplace_back(kFirstClassReasons[i]);
      }
      table[m] = std::make_unique<const framework::FixedReasons>(std::move(reasons));
    }
    return table;
  }();
  return *kTable[mask];
}

}  // namespace

std::vector<InsufficientResource> FitsRequest(const api::ResourceList& pod_request,
                                              const api::ResourceList& allocatable,
                                              const api::ResourceList& node_requested,
                                              size_t pods_on_node,
                                              const IgnoredResources& ignored) {
  std::vector<InsufficientResource> insufficient;
  ForEachShortfall(
      pod_request, allocatable, node_requested, pods_on_node, ignored,
      [&](std::string_view name, std::string_view fixed_reason, unsigned, int64_t requested,
          int64_t used, int64_t capacity, bool unresolvable) {
        insufficient.push_back({std::string(name), InsufficientReason(name, fixed_reason),
                                requested, used, capacity, unresolvable});
      });
  return insufficient;
}

std::vector<InsufficientResource> Fits(const api::Pod& pod, const framework::NodeInfo& node) {
  return FitsRequest(pod.requests, node.allocatable(), node.requested(), node.pods().size(),
                     IgnoredResources{});
}

Fit::Fit(FitArgs args, std::function<std::vector<api::DeviceClassPtr>()> classes,
         std::shared_ptr<dynamicresources::ClassDevices> devices)
    : args_(std::move(args)),
      classes_(std::move(classes)),
      ignored_(std::make_shared<const IgnoredResources>(
          IgnoredResources{args_.ignored_resources, args_.ignored_resource_groups})),
      scorer_(args_.scoring_strategy.resources, /*use_requested=*/false,
              BuildScorer(args_.scoring_strategy), DeviceSources{classes_, std::move(devices)}) {}

framework::Status Fit::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                 const std::vector<framework::NodeInfoPtr>&,
                                 framework::PreFilterResult*) {
  std::vector<std::string> delegated;
  if (classes_) {
    std::vector<api::DeviceClassPtr> classes;
    for (const auto& [name, quantity] : pod.requests.scalar) {
      if (quantity == 0 || !IsDraExtendedResourceName(name)) {
        continue;
      }
      if (classes.empty()) classes = classes_();
      if (helper::DeviceClassForExtendedResource(name, classes) != nullptr) {
        delegated.push_back(name);
      }
    }
  }
  state.Write(PreFilterKey(), std::make_shared<PreFilterState>(pod.requests, std::move(delegated)));
  return framework::Status::Success();
}

framework::Status Fit::Filter(const framework::CycleState& state, const api::Pod&,
                              const framework::NodeInfo& node) {
  const auto* data = state.Read<PreFilterState>(PreFilterKey());
  if (data == nullptr) return MissingPreFilterState();
  framework::Status rejection;
  FitsNode(data->request(), data->delegated(), node, &rejection);
  return rejection;
}

void Fit::FilterNodes(const framework::CycleState& state, const api::Pod&,
                      std::span<const framework::NodeInfo* const> nodes,
                      std::span<framework::Status> statuses) {
  const auto* data = state.Read<PreFilterState>(PreFilterKey());
  for (size_t i = 0; i < nodes.size(); i++) {
    if (data == nullptr) {
      statuses[i] = MissingPreFilterState();
    } else {
      FitsNode(data->request(), data->delegated(), *nodes[i], &statuses[i]);
    }
  }
}

bool Fit::FitsNode(const api::ResourceList& request, const std::vector<std::string>& delegated,
                   const framework::NodeInfo& node, framework::Status* rejection) const {
  framework::Code code = framework::Code::kUnschedulable;
  unsigned first_class = 0;
  // Only when an extended resource is short, whose reason names it: first-class shortfalls are
  // reported before any extended one, so they are already in first_class then.
  std::vector<std::string> reasons;
  ForEachShortfall(
      request, node.allocatable(), node.requested(), node.pods().size(), *ignored_,
      [&](std::string_view name, std::string_view fixed_reason, unsigned first_class_bit, int64_t,
          int64_t, int64_t, bool unresolvable) {
        if (unresolvable) code = framework::Code::kUnschedulableAndUnresolvable;
        if (first_class_bit != 0) {
          first_class |= first_class_bit;
          return;
        }
        if (reasons.empty()) reasons = FirstClassReasons(first_class).reasons();
        reasons.push_back(InsufficientReason(name, fixed_reason));
      },
      delegated);
  if (!reasons.empty()) {
    *rejection = framework::Status(code, std::move(reasons));
    return false;
  }
  if (first_class == 0) return true;
  *rejection = framework::Status(code, FirstClassReasons(first_class));
  return false;
}

std::vector<framework::ClusterEventWithHint> Fit::EventsToRegister() const {
  std::shared_ptr<const IgnoredResources> ignored = ignored_;
  return {
      {{framework::EventResource::kPod, framework::kDelete | framework::kUpdatePodScaleDown,
        "AssignedPodDelete|UpdatePodScaleDown"},
       &HintAfterPodEvent},
      {{framework::EventResource::kNode, framework::kAdd | framework::kUpdateNodeAllocatable,
        "NodeAdd|UpdateNodeAllocatable"},
       [ignored](const api::Pod& pod, const framework::EventObjects& event) {
         return HintAfterNodeChange(*ignored, pod, event);
       }},
  };
}

framework::Status Fit::PreScore(framework::CycleState& state, const api::Pod& pod,
                                std::span<const framework::NodeInfo* const>) {
  std::vector<int64_t> pod_requests = scorer_.PodRequests(pod);
  std::shared_ptr<const DeviceServedResources> devices = scorer_.DevicesFor(pod_requests);
  state.Write(PreScoreKey(),
              std::make_shared<PreScoreState>(std::move(pod_requests), std::move(devices)));
  return framework::Status::Success();
}

framework::Status Fit::Score(const framework::CycleState& state, const api::Pod& pod,
                             const framework::NodeInfo& node, int64_t* score) {
  return ScoreAsRunOfOne(state, pod, node, score);
}

framework::Status Fit::ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                                  std::span<const framework::NodeInfo* const> nodes,
                                  std::span<framework::NodeScore> scores) {
  const auto* data = state.Read<PreScoreState>(PreScoreKey());
  if (data != nullptr) {
    scorer_.ScoreNodes(data->pod_requests(), nodes, scores, data->devices());
  } else {
    // Without PreScore (a caller scoring directly) the requests and devices are found here, as
    // upstream.
    std::vector<int64_t> pod_requests = scorer_.PodRequests(pod);
    std::shared_ptr<const DeviceServedResources> devices = scorer_.DevicesFor(pod_requests);
    scorer_.ScoreNodes(pod_requests, nodes, scores, devices.get());
  }
  return framework::Status::Success();
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle) {
  informer::Lister<api::DeviceClass> classes =
      handle.SharedInformerFactory().ListerFor<api::DeviceClass>();
  FitArgs parsed = ParseFitArgs(args);
  return std::make_shared<Fit>(
      parsed, [classes] { return classes.List(); },
      DevicesToScore(parsed.scoring_strategy.resources, handle));
}

}  // namespace berth::plugins::noderesources
