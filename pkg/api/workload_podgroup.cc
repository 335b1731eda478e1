#include "pkg/api/workload_podgroup.h"

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

// Whether the member is present with a value that asks for something: not null, not empty.
bool Asks(const json& parent, const Path& field) {
  const json* value = Member(parent, field);
  if (value == nullptr) return false;
  if (value->is_string()) return !value->get_ref<const std::string&>().empty();
  return !value->empty();
}

void DecodePolicy(const json& spec, const Path& spec_path, WorkloadPodGroupSpec* out) {
  const Path path = spec_path.Field("schedulingPolicy");
  const json* policy = GetObject(spec, path);
  const Path gang_path = path.Field("gang");
  const json* gang = policy != nullptr ? GetObject(*policy, gang_path) : nullptr;
  const bool basic = policy != nullptr && GetObject(*policy, path.Field("basic")) != nullptr;
  if (gang != nullptr && basic) FailAt(path, "only one of basic and gang may be set");
  if (gang == nullptr && !basic) FailAt(path, "one of basic and gang is required");
  if (basic) return;
  const Path min_count_path = gang_path.Field("minCount");
  int32_t min_count = 0;
  ReadInt32(*gang, min_count_path, &min_count);
  if (min_count < 1) FailAt(min_count_path, "must be at least 1, got " + std::to_string(min_count));
  out->gang = true;
  out->min_count = min_count;
}

WorkloadPodGroupSpec DecodeSpec(const json& object, const Path& root) {
  WorkloadPodGroupSpec spec;
  const Path spec_path = root.Field("spec");
  const json* value = GetObject(object, spec_path);
  if (value == nullptr) FailAt(spec_path, "required");
  DecodePolicy(*value, spec_path, &spec);
  ReadInt32(*value, spec_path.Field("priority"), &spec.priority);
  const Path policy_path = spec_path.Field("preemptionPolicy");
  std::string policy;
  if (ReadString(*value, policy_path, &policy)) {
    PreemptionPolicy parsed;
    if (!ParsePreemptionPolicy(policy, &parsed))
      FailAt(policy_path, "unknown value \"" + policy + "\"");
    spec.preemption_policy = parsed;
  }
  // Served only behind feature gates beyond GenericWorkload; each changes where the group's pods
  // may go, so a group using one Berth cannot honour is not placed as if it were absent.
  spec.topology = DecodeSchedulingConstraints(*value, spec_path, 1, false);
  const Path claims = spec_path.Field("resourceClaims");
  if (Asks(*value, claims)) {
    FailAt(claims, "resource claims shared by a pod group are not supported by berth-scheduler");
  }
  // disruptionMode: `single` (the default) or `all`, an empty object whose presence is the whole
  // request: a preemption takes all of the group's placed pods or none, whatever its policy (a
  // basic group's pods are still placed one by one).
  const Path disruption = spec_path.Field("disruptionMode");
  if (const json* mode = GetObject(*value, disruption); mode != nullptr) {
    const json* all = Member(*mode, disruption.Field("all"));
    const json* single = Member(*mode, disruption.Field("single"));
    const bool wants_all = all != nullptr && !all->is_null();
    if (wants_all && single != nullptr && !single->is_null()) {
      FailAt(disruption, "only one of single and all may be set");
    }
    spec.disrupted_as_whole = wants_all;
  }
  const Path parent = spec_path.Field("parentCompositePodGroupName");
  if (Asks(*value, parent)) {
    FailAt(parent, "composite pod groups are not supported by berth-scheduler");
  }
  return spec;
}

std::optional<WorkloadPodGroupCondition> DecodeCondition(const json& object, const Path& root) {
  const Path status_path = root.Field("status");
  const json* status = GetObject(object, status_path);
  if (status == nullptr) return std::nullopt;
  const Path conditions_path = status_path.Field("conditions");
  const json* conditions = Member(*status, conditions_path);
  if (conditions == nullptr) return std::nullopt;
  if (!conditions->is_array()) FailType(conditions_path, "array", *conditions);
  for (size_t i = 0; i < conditions->size(); i++) {
    const json& item = (*conditions)[i];
    const Path path = conditions_path.Index(i);
    ExpectObject(item, path);
    std::string type;
    ReadString(item, path.Field("type"), &type);
    if (type != kPodGroupInitiallyScheduled) continue;
    WorkloadPodGroupCondition condition;
    ReadString(item, path.Field("status"), &condition.status);
    ReadString(item, path.Field("reason"), &condition.reason);
    ReadString(item, path.Field("message"), &condition.message);
    ReadInt64(item, path.Field("observedGeneration"), &condition.observed_generation);
    return condition;
  }
  return std::nullopt;
}

}  // namespace

WorkloadPodGroup DecodeWorkloadPodGroup(const json& object) {
  const Path root("");
  WorkloadPodGroup group;
  group.meta = DecodeObjectMeta(object);
  try {
    group.spec = DecodeSpec(object, root);
  } catch (const DecodeError& e) {
    group.spec = WorkloadPodGroupSpec();
    group.problem = e.what();
  }
  try {
    group.initially_scheduled = DecodeCondition(object, root);
  } catch (const DecodeError&) {
    group.initially_scheduled.reset();
  }
  return group;
}

}  // namespace berth::api
