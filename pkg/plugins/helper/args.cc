#include "pkg/plugins/helper/args.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace berth::plugins::helper {

void ExpectArgsFields(const nlohmann::json& args, std::initializer_list<std::string_view> fields) {
  if (args.is_null()) return;
  if (!args.is_object()) {
    throw std::invalid_argument(std::string("args: expected object, got ") + args.type_name());
  }
  for (auto it = args.begin(); it != args.end(); ++it) {
    const std::string& key = it.key();
    if (key == "apiVersion" || key == "kind") continue;
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) {
      throw std::invalid_argument(key + ": unknown field");
    }
  }
}

}  // namespace berth::plugins::helper
