#include "pkg/plugins/prioritysort/prioritysort.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "pkg/framework/args.h"

namespace berth::plugins::prioritysort {

bool PrioritySort::Less(const framework::QueuedPodInfo& a,
                        const framework::QueuedPodInfo& b) const {
  const int32_t priority_a = a.pod().spec.priority;
  const int32_t priority_b = b.pod().spec.priority;
  if (priority_a != priority_b) return priority_a > priority_b;
  return a.timestamp < b.timestamp;
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle&) {
  framework::ExpectNoArgs(args);
  return std::make_shared<PrioritySort>();
}

}  // namespace berth::plugins::prioritysort
