#ifndef BERTH_PKG_PLUGINS_PRIORITYSORT_PRIORITYSORT_H_
#define BERTH_PKG_PLUGINS_PRIORITYSORT_PRIORITYSORT_H_

// PrioritySort: the default QueueSort plugin. Orders activeQ by pod priority, highest first, and
// among equal priorities by the time the pod entered the queue, oldest first (FIFO).

#include <nlohmann/json.hpp>
#include <string_view>

#include "pkg/framework/interface.h"

namespace berth::plugins::prioritysort {

inline constexpr std::string_view kName = "PrioritySort";

// Stateless, so Less is safe to call from any thread.
class PrioritySort final : public framework::QueueSortPlugin {
 public:
  std::string_view Name() const override { return kName; }
  bool Less(const framework::QueuedPodInfo& a, const framework::QueuedPodInfo& b) const override;
};

// Takes no args: see framework::ExpectNoArgs.
framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::prioritysort

#endif  // BERTH_PKG_PLUGINS_PRIORITYSORT_PRIORITYSORT_H_
