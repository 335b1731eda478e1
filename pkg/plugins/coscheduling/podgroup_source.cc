#include "pkg/plugins/coscheduling/podgroup_source.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string>

#include "pkg/util/time.h"

namespace berth::plugins::coscheduling {
namespace {

using json = nlohmann::json;

std::string_view LabelOf(const api::Pod& pod) {
  const std::string* name = pod.meta.labels.Find(api::kPodGroupLabel);
  return name == nullptr ? std::string_view() : std::string_view(*name);
}

GangApi Api() {
  return {
      .kind = "PodGroup",
      .api_version = "scheduling.x-k8s.io/v1alpha1",
      .resource = framework::EventResource::kPodGroup,
      .gang_of = LabelOf,
      .not_served =
          "the PodGroup API (scheduling.x-k8s.io/v1alpha1) is not served: its CRD is "
          "not installed",
      .off_log =
          "gang scheduling is off: the PodGroup API (scheduling.x-k8s.io/v1alpha1) is not "
          "served, so its CRD is not installed; pods labelled "
          "scheduling.x-k8s.io/pod-group stay pending, every other pod is scheduled",
      .warn = true,
  };
}

std::string StringAt(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& ObjectAt(const json& object, const char* key) {
  static const json kEmpty = json::object();
  if (!object.is_object()) return kEmpty;
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

json StatusJson(const api::PodGroupStatus& status) {
  json out = {{"phase", status.phase},
              {"running", status.running},
              {"succeeded", status.succeeded},
              {"failed", status.failed}};
  // A merge patch removes a member set to null.
  out["occupiedBy"] = status.occupied_by.empty() ? json(nullptr) : json(status.occupied_by);
  if (!status.schedule_start_time.empty()) out["scheduleStartTime"] = status.schedule_start_time;
  return out;
}

}  // namespace

PodGroupSource::PodGroupSource(informer::SharedInformerFactory& informers, client::Client* client)
    : InformerSource(informers, Api()), client_(client) {}

void PodGroupSource::Translate(const api::PodGroup& group, GangSpec* spec) const {
  spec->min_member = group.spec.min_member;
  spec->min_resources = group.spec.min_resources;
  spec->topology = group.spec.topology;
  if (group.spec.schedule_timeout_seconds) {
    // Capped as the framework caps every Permit wait, so that a timeout is reported as one.
    spec->wait = std::min<std::chrono::seconds>(
        std::chrono::seconds(*group.spec.schedule_timeout_seconds),
        std::chrono::duration_cast<std::chrono::seconds>(framework::kMaxPermitTimeout));
  }
}

api::PodGroupStatus PodGroupSource::StatusFor(const json& pods, int32_t min_member,
                                              const GangProgress& progress,
                                              const api::PodGroupStatus& current) {
  api::PodGroupStatus status;
  std::set<std::string> owners;
  const json* items = pods.is_object() && pods.contains("items") ? &pods["items"] : nullptr;
  if (items != nullptr && items->is_array()) {
    for (const json& pod : *items) {
      const std::string phase = StringAt(ObjectAt(pod, "status"), "phase");
      if (phase == "Succeeded") {
        status.succeeded++;
      } else if (phase == "Failed") {
        status.failed++;
      } else if (!StringAt(ObjectAt(pod, "spec"), "nodeName").empty()) {
        status.running++;
      }
      const json& meta = ObjectAt(pod, "metadata");
      auto refs = meta.find("ownerReferences");
      if (refs == meta.end() || !refs->is_array()) continue;
      for (const json& ref : *refs) {
        const std::string owner = StringAt(ref, "name");
        if (!owner.empty()) owners.insert(StringAt(meta, "namespace") + "/" + owner);
      }
    }
  }
  for (const std::string& owner : owners) {
    status.occupied_by += (status.occupied_by.empty() ? "" : ",") + owner;
  }
  // Bound pods that have not finished count as running: Berth has no controller waiting for the
  // kubelet, and what a gang needs is its members placed.
  const int32_t min = min_member;
  if (status.succeeded >= min) {
    status.phase = "Finished";
  } else if (status.failed > 0 && status.failed + status.running + status.succeeded >= min) {
    status.phase = "Failed";
  } else if (status.running + status.succeeded >= min) {
    status.phase = "Running";
  } else if (progress.assumed > 0) {
    status.phase = "Scheduling";
  } else {
    status.phase = "Pending";
  }
  status.schedule_start_time = current.schedule_start_time;
  if (status.schedule_start_time.empty() && progress.schedule_start) {
    status.schedule_start_time = util::FormatRfc3339(*progress.schedule_start);
  }
  return status;
}

void PodGroupSource::WriteStatus(const std::string& namespace_, const std::string& name,
                                 const GangProgress& progress) const {
  if (client_ == nullptr) return;
  auto group = Find(namespace_, name);
  if (!group) return;
  // Label values are [A-Za-z0-9._-]: only the key's "/" and the "=" need escaping. Served from
  // the apiserver's cache (resourceVersion=0) rather than read through from etcd.
  const json pods = client_->Get(client::PodsResource().Path(namespace_) +
                                 "?labelSelector=scheduling.x-k8s.io%2Fpod-group%3D" + name +
                                 "&resourceVersion=0");
  const api::PodGroupStatus status =
      StatusFor(pods, group->spec.min_member, progress, group->status);
  if (status == group->status) return;
  PatchStatus(*client_, client::PodGroupsResource().Path(namespace_, name, "status"),
              {{"status", StatusJson(status)}}, client::PatchType::kMerge);
}

}  // namespace berth::plugins::coscheduling
