#ifndef BERTH_PKG_PLUGINS_IMAGELOCALITY_IMAGE_LOCALITY_H_
#define BERTH_PKG_PLUGINS_IMAGELOCALITY_IMAGE_LOCALITY_H_

// ImageLocality: favours nodes that already hold the pod's container images, weighting each
// image by its size and by how widely it has spread across the cluster (to avoid piling pods on
// the few nodes that pulled an image first), following upstream kube-scheduler v1.34
// imagelocality/image_locality.go.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::plugins::imagelocality {

inline constexpr std::string_view kName = "ImageLocality";
inline constexpr std::string_view kPreScoreStateKey = "PreScoreImageLocality";

inline constexpr int64_t kMB = 1024 * 1024;
// Image sizes below this sum score 0 (small images are cheap to pull anyway).
inline constexpr int64_t kMinThreshold = 23 * kMB;
// Per container: a sum at or above this times the container count scores kMaxNodeScore.
inline constexpr int64_t kMaxContainerThreshold = 1000 * kMB;

// The CRI form of an image reference: ":latest" is appended when the name has no tag (no ':'
// after the last '/'). Digest references ("name@sha256:...") are kept as they are.
std::string NormalizedImageName(std::string_view name);

// Maps the summed, spread-scaled image sizes to [0, kMaxNodeScore] for a pod with
// `num_containers` containers (init containers included). Exact for any arguments.
int64_t CalculatePriority(int64_t sum_scores, int64_t num_containers);

// An image's size scaled by the fraction of the cluster's nodes that hold it, saturated into
// int64.
int64_t ScaledImageScore(int64_t size_bytes, int num_nodes, int total_num_nodes);

// Stateless apart from the handle: Score runs concurrently on many threads and only reads the
// snapshot and the (read-only) CycleState.
class ImageLocality final : public framework::PreScorePlugin, public framework::ScorePlugin {
 public:
  explicit ImageLocality(framework::Handle& handle) : handle_(handle) {}

  std::string_view Name() const override { return kName; }

  // Normalizes the pod's image names once per cycle and, when the snapshot carries no image
  // states, counts how many nodes hold each of them. Never skips (upstream scores every pod).
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                               std::span<const framework::NodeInfo* const> nodes,
                               std::span<framework::NodeScore> scores) override;

 private:
  framework::Handle& handle_;
};

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::imagelocality

#endif  // BERTH_PKG_PLUGINS_IMAGELOCALITY_IMAGE_LOCALITY_H_
