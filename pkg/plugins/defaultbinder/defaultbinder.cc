#include "pkg/plugins/defaultbinder/defaultbinder.h"

#include <exception>
#include <memory>
#include <stdexcept>

#include "pkg/api/binding.h"
#include "pkg/client/client.h"

namespace berth::plugins::defaultbinder {

framework::Status DefaultBinder::Bind(framework::CycleState&, const api::Pod& pod,
                                      const std::string& node) {
  client::Client* client = handle_.ClientSet();
  if (client == nullptr) return framework::Status::Error(std::string(kErrNoClient));
  const std::string path =
      client::PodsResource().Path(pod.meta.namespace_, pod.meta.name, "binding");
  try {
    client->PostRaw(path, api::EncodeBinding(pod, node));
  } catch (const client::ApiError& e) {
    return framework::Status::Error(e.what());
  } catch (const std::exception& e) {
    // Bind runs on a binding thread that must report, not propagate, a failure.
    return framework::Status::Error(std::string("binding pod: ") + e.what());
  }
  return framework::Status::Success();
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle) {
  if (!args.is_null() && !args.empty()) {
    throw std::invalid_argument(std::string(kName) + ": plugin takes no args");
  }
  return std::make_shared<DefaultBinder>(handle);
}

}  // namespace berth::plugins::defaultbinder
