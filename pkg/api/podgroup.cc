#include "pkg/api/podgroup.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/field_path.h"
#include "pkg/api/json_read.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using Path = FieldPath;
using namespace json_read;  // NOLINT(google-build-using-namespace): the decoders' vocabulary.

// A node-label key as the apiserver accepts one: an optional DNS-subdomain prefix and "/", then a
// name of at most 63 characters. The bound matters more than the grammar here: the key is only
// ever looked up in node labels.
bool LabelKeyShaped(const std::string& key) {
  const size_t slash = key.rfind('/');
  const size_t name = slash == std::string::npos ? key.size() : key.size() - slash - 1;
  const size_t prefix = slash == std::string::npos ? 0 : slash;
  if (name == 0 || name > 63 || prefix > 253 || (slash != std::string::npos && prefix == 0)) {
    return false;
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

PodGroupSpec DecodeSpec(const json& object, const Path& root) {
  PodGroupSpec spec;
  const Path spec_path = root.Field("spec");
  const json* value = GetObject(object, spec_path);
  if (value == nullptr) return spec;

  const Path min_member_path = spec_path.Field("minMember");
  int32_t min_member = 0;
  if (ReadInt32(*value, min_member_path, &min_member)) {
    if (min_member < 0) {
      FailAt(min_member_path, "must not be negative, got " + std::to_string(min_member));
    }
    spec.min_member = std::max(min_member, 1);
  }

  const Path resources_path = spec_path.Field("minResources");
  if (const json* resources = Member(*value, resources_path)) {
    spec.min_resources = DecodeResourceList(*resources, resources_path.str());
  }

  const Path timeout_path = spec_path.Field("scheduleTimeoutSeconds");
  int32_t timeout = 0;
  if (ReadInt32(*value, timeout_path, &timeout)) {
    if (timeout < 0) {
      FailAt(timeout_path, "must not be negative, got " + std::to_string(timeout));
    }
    if (timeout > 0) spec.schedule_timeout_seconds = timeout;
  }
  spec.topology = DecodeSchedulingConstraints(*value, spec_path, kMaxTopologyLevels, true);
  return spec;
}

PodGroupStatus DecodeStatus(const json& object, const Path& root) {
  PodGroupStatus status;
  const Path path = root.Field("status");
  const json* value = GetObject(object, path);
  if (value == nullptr) return status;
  ReadString(*value, path.Field("phase"), &status.phase);
  ReadString(*value, path.Field("occupiedBy"), &status.occupied_by);
  ReadInt32(*value, path.Field("running"), &status.running);
  ReadInt32(*value, path.Field("succeeded"), &status.succeeded);
  ReadInt32(*value, path.Field("failed"), &status.failed);
  ReadString(*value, path.Field("scheduleStartTime"), &status.schedule_start_time);
  return status;
}

}  // namespace

std::optional<PodGroupTopology> DecodeSchedulingConstraints(const json& spec, const Path& spec_path,
                                                            size_t levels, bool policy) {
  const Path path = spec_path.Field("schedulingConstraints");
  const json* constraints = GetObject(spec, path);
  if (constraints == nullptr) return std::nullopt;
  const Path topology_path = path.Field("topology");
  const json* topology = Member(*constraints, topology_path);
  PodGroupTopology out;
  if (topology != nullptr && !topology->is_null()) {
    if (!topology->is_array()) FailType(topology_path, "array", *topology);
    if (topology->size() > levels) {
      FailAt(topology_path, "at most " + std::to_string(levels) +
                                (levels == 1 ? " entry" : " entries") + " may be given, got " +
                                std::to_string(topology->size()));
    }
    for (size_t i = 0; i < topology->size(); i++) {
      const Path item = topology_path.Index(i);
      ExpectObject((*topology)[i], item);
      const Path key_path = item.Field("key");
      std::string key;
      if (!ReadString((*topology)[i], key_path, &key) || key.empty()) FailAt(key_path, "required");
      if (!LabelKeyShaped(key)) FailAt(key_path, "\"" + key + "\" is not a valid label key");
      if (std::find(out.keys.begin(), out.keys.end(), key) != out.keys.end()) {
        FailAt(key_path, "duplicate key \"" + key + "\"");
      }
      out.keys.push_back(std::move(key));
    }
  }
  const Path policy_path = path.Field("topologyPolicy");
  std::string value;
  if (policy && ReadString(*constraints, policy_path, &value) && !value.empty()) {
    if (value != "Required" && value != "Preferred") {
      FailAt(policy_path, "unknown value \"" + value + "\"; expected Required or Preferred");
    }
    if (out.keys.empty()) FailAt(policy_path, "needs at least one topology key");
    out.preferred = value == "Preferred";
  }
  if (out.keys.empty()) return std::nullopt;
  return out;
}

PodGroup DecodePodGroup(const json& object) {
  const Path root("");
  PodGroup group;
  group.meta = DecodeObjectMeta(object);
  try {
    group.spec = DecodeSpec(object, root);
  } catch (const DecodeError& e) {
    group.spec = PodGroupSpec();
    group.problem = e.what();
  }
  try {
    group.status = DecodeStatus(object, root);
  } catch (const DecodeError&) {
    // Rewritten by the scheduler from what it observes; the old value is not needed.
    group.status = PodGroupStatus();
  }
  return group;
}

}  // namespace berth::api
