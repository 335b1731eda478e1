#include "pkg/plugins/imagelocality/image_locality.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "pkg/api/requests.h"
#include "pkg/framework/args.h"

namespace berth::plugins::imagelocality {
namespace {

// What Score needs about the pod and the cluster, computed once per cycle. Immutable once
// written.
class PreScoreState final : public framework::StateData {
 public:
  std::shared_ptr<framework::StateData> Clone() const override {
    return std::make_shared<PreScoreState>(*this);
  }

  // Normalized images of the init containers, then the containers; a repeated image counts once
  // per container, as upstream.
  std::vector<std::string> image_names;
  int64_t num_containers = 0;
  int total_num_nodes = 0;
  // Set when the NodeInfos carry no image states (built without a snapshot): images are then
  // read from each node's status, and `num_nodes_with_image` holds the spread of the pod's
  // images. With a snapshot the decision costs one node, not a pass over the cluster.
  bool read_node_status = false;
  std::unordered_map<std::string, int> num_nodes_with_image;
};

// Built once: Score reads it for every node.
const framework::StateKey& PreScoreKey() {
  static const framework::StateKey key(kPreScoreStateKey);
  return key;
}

// The size of `normalized_name` on `node` (node image names normalized the same way), or -1
// when the node does not report it.
int64_t ImageSizeOnNode(const api::Node& node, const std::string& normalized_name) {
  for (const api::ContainerImage& image : node.status.images) {
    for (const std::string& name : image.names) {
      if (NormalizedImageName(name) == normalized_name) {
        return image.size_bytes;
      }
    }
  }
  return -1;
}

std::shared_ptr<PreScoreState> BuildState(const api::Pod& pod,
                                          const std::vector<framework::NodeInfoPtr>& all) {
  auto state = std::make_shared<PreScoreState>();
  for (const auto* containers : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const api::Container& container : *containers) {
      state->image_names.push_back(NormalizedImageName(container.image));
    }
  }
  state->num_containers = static_cast<int64_t>(state->image_names.size());
  state->total_num_nodes = static_cast<int>(all.size());
  state->read_node_status =
      std::none_of(all.begin(), all.end(), [](const framework::NodeInfoPtr& info) {
        return info != nullptr && info->image_states_known();
      });
  if (!state->read_node_status) {
    return state;
  }

  for (const std::string& name : state->image_names) {
    state->num_nodes_with_image.emplace(name, 0);
  }
  for (const framework::NodeInfoPtr& info : all) {
    if (info == nullptr || info->node() == nullptr) {
      continue;
    }
    for (auto& [name, count] : state->num_nodes_with_image) {
      if (ImageSizeOnNode(*info->node(), name) >= 0) {
        count++;
      }
    }
  }
  return state;
}

// The cycle's PreScore state; for a caller scoring without PreScore, the same data derived here
// into `*built`.
const PreScoreState& StateFor(const framework::CycleState& state, const api::Pod& pod,
                              framework::Handle& handle,
                              std::shared_ptr<const PreScoreState>* built) {
  if (const PreScoreState* data = state.Read<PreScoreState>(PreScoreKey())) return *data;
  *built = BuildState(pod, handle.SnapshotSharedLister().List());
  return **built;
}

int64_t ScoreNode(const PreScoreState& data, const framework::NodeInfo& node) {
  // Exact: a node may report sizes near 2^63 for several of the pod's images. Any sum past int64
  // is past every threshold, so the clamped sum scores as the exact one.
  api::WideInt sum = 0;
  for (const std::string& name : data.image_names) {
    if (!data.read_node_status) {
      auto it = node.image_states().find(name);
      if (it == node.image_states().end()) {
        continue;
      }
      sum += ScaledImageScore(it->second.size_bytes, it->second.num_nodes, data.total_num_nodes);
      continue;
    }
    if (node.node() == nullptr) {
      continue;
    }
    int64_t size = ImageSizeOnNode(*node.node(), name);
    if (size < 0) {
      continue;
    }
    sum += ScaledImageScore(size, data.num_nodes_with_image.at(name), data.total_num_nodes);
  }
  return CalculatePriority(api::ClampToInt64(sum), data.num_containers);
}

}  // namespace

std::string NormalizedImageName(std::string_view name) {
  size_t last_colon = name.rfind(':');
  size_t last_slash = name.rfind('/');
  // npos stands for "absent" and must compare below every position.
  bool has_tag = last_colon != std::string_view::npos &&
                 (last_slash == std::string_view::npos || last_colon > last_slash);
  std::string normalized(name);
  if (!has_tag) {
    normalized += ":latest";
  }
  return normalized;
}

int64_t CalculatePriority(int64_t sum_scores, int64_t num_containers) {
  // In 128 bits, where neither product can overflow (num_containers is not bounded by type).
  const api::WideInt max_threshold =
      static_cast<api::WideInt>(kMaxContainerThreshold) * num_containers;
  api::WideInt sum = sum_scores;
  if (sum < kMinThreshold) {
    sum = kMinThreshold;
  } else if (sum > max_threshold) {
    sum = max_threshold;
  }
  return static_cast<int64_t>(
      api::MulDiv(framework::kMaxNodeScore, sum - kMinThreshold, max_threshold - kMinThreshold));
}

int64_t ScaledImageScore(int64_t size_bytes, int num_nodes, int total_num_nodes) {
  if (total_num_nodes <= 0) {
    return 0;
  }
  double spread = static_cast<double>(num_nodes) / static_cast<double>(total_num_nodes);
  const double scaled = static_cast<double>(size_bytes) * spread;
  // Converting a double outside the int64 range is undefined, and the largest int64 rounds up
  // to 2^63 as a double: saturate first. 2^63 and -2^63 are exact doubles.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (scaled >= kTwoTo63) return std::numeric_limits<int64_t>::max();
  if (scaled < -kTwoTo63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(scaled);
}

framework::Status ImageLocality::PreScore(framework::CycleState& state, const api::Pod& pod,
                                          std::span<const framework::NodeInfo* const>) {
  state.Write(PreScoreKey(), BuildState(pod, handle_.SnapshotSharedLister().List()));
  return framework::Status::Success();
}

framework::Status ImageLocality::Score(const framework::CycleState& state, const api::Pod& pod,
                                       const framework::NodeInfo& node, int64_t* score) {
  std::shared_ptr<const PreScoreState> built;
  *score = ScoreNode(StateFor(state, pod, handle_, &built), node);
  return framework::Status::Success();
}

framework::Status ImageLocality::ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                                            std::span<const framework::NodeInfo* const> nodes,
                                            std::span<framework::NodeScore> scores) {
  std::shared_ptr<const PreScoreState> built;
  const PreScoreState& data = StateFor(state, pod, handle_, &built);
  for (size_t i = 0; i < nodes.size(); i++) scores[i].score = ScoreNode(data, *nodes[i]);
  return framework::Status::Success();
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle) {
  // Upstream ImageLocality has no args type; only the pluginConfig envelope fields may appear.
  framework::ExpectNoArgs(args);
  return std::make_shared<ImageLocality>(handle);
}

}  // namespace berth::plugins::imagelocality
