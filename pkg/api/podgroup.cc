#include "pkg/api/podgroup.h"

#include <algorithm>
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
