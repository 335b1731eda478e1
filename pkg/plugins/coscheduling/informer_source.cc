#include "pkg/plugins/coscheduling/informer_source.h"

namespace berth::plugins::coscheduling {

void PatchStatus(client::Client& client, const std::string& path, const nlohmann::json& body,
                 client::PatchType type) {
  try {
    client.Patch(path, body, type);
  } catch (const client::ApiError& e) {
    // Deleted meanwhile: nothing to keep current.
    if (e.reason() != client::ErrorReason::kNotFound) throw;
  }
}

}  // namespace berth::plugins::coscheduling
