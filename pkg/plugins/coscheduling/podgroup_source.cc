#include "pkg/plugins/coscheduling/podgroup_source.h"

#include <time.h>

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "pkg/log/log.h"

namespace berth::plugins::coscheduling {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::system_clock;

constexpr char kApiVersion[] = "scheduling.x-k8s.io/v1alpha1";

// metav1.Time as served: "2025-01-02T03:04:05Z". The epoch when it cannot be read.
Clock::time_point ParseTime(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return Clock::time_point();
  return Clock::from_time_t(timegm(&tm));
}

std::string FormatTime(Clock::time_point t) {
  const std::time_t seconds = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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
    : informer_(informers.For<api::PodGroup>()), client_(client) {
  informer_.OnServed([served = served_](bool is_served) {
    served->store(is_served ? 1 : 0);
    if (is_served) return;
    static std::once_flag logged;
    std::call_once(logged, [] {
      log::Warn(
          "gang scheduling is off: the PodGroup API (scheduling.x-k8s.io/v1alpha1) is not "
          "served, so its CRD is not installed; pods labelled scheduling.x-k8s.io/pod-group stay "
          "pending, every other pod is scheduled");
    });
  });
  informer::EventHandler<api::PodGroup> invalid;
  auto report = [](const api::PodGroup& group) {
    log::Warn("PodGroup is invalid: its pods are not scheduled",
              {{"podGroup", group.meta.Key()}, {"err", group.problem}});
  };
  invalid.on_add = [report](const std::shared_ptr<const api::PodGroup>& group) {
    if (!group->problem.empty()) report(*group);
  };
  invalid.on_update = [report](const std::shared_ptr<const api::PodGroup>& old_group,
                               const std::shared_ptr<const api::PodGroup>& group) {
    if (!group->problem.empty() && group->problem != old_group->problem) report(*group);
  };
  informer_.AddEventHandler(std::move(invalid));
}

const std::string& PodGroupSource::Kind() const {
  static const std::string kKind = "PodGroup";
  return kKind;
}

std::string_view PodGroupSource::GangOf(const api::Pod& pod) const {
  const std::string* name = pod.meta.labels.Find(api::kPodGroupLabel);
  return name == nullptr ? std::string_view() : std::string_view(*name);
}

Lookup PodGroupSource::Get(const std::string& namespace_, const std::string& name, GangSpec* spec,
                           std::string* why) const {
  const int served = served_->load();
  if (served == 0) {
    *why =
        "the PodGroup API (scheduling.x-k8s.io/v1alpha1) is not served: its CRD is not installed";
    return Lookup::kUnavailable;
  }
  if (served < 0 || !informer_.HasSynced()) {
    *why = "PodGroups are not listed yet";
    return Lookup::kUnavailable;
  }
  auto group = informer_.store().Get(namespace_ + "/" + name);
  if (!group) return Lookup::kNotFound;
  spec->uid = group->meta.uid;
  spec->min_member = group->spec.min_member;
  spec->min_resources = group->spec.min_resources;
  spec->wait.reset();
  if (group->spec.schedule_timeout_seconds) {
    spec->wait = std::chrono::seconds(*group->spec.schedule_timeout_seconds);
  }
  spec->created = ParseTime(group->meta.creation_timestamp);
  spec->problem = group->problem;
  return Lookup::kFound;
}

std::vector<framework::ClusterEventWithHint> PodGroupSource::Events() const {
  auto same_group = [](const api::Pod& pod, const framework::EventObjects& objects) {
    auto group = objects.NewAs<api::PodGroup>();
    const std::string* name = pod.meta.labels.Find(api::kPodGroupLabel);
    if (!group || !name || group->meta.namespace_ != pod.meta.namespace_ ||
        group->meta.name != *name) {
      return framework::QueueingHint::kSkip;
    }
    // The scheduler's own status writes change nothing a pod waits for.
    auto old_group = objects.OldAs<api::PodGroup>();
    if (old_group && old_group->meta.uid == group->meta.uid && old_group->spec == group->spec &&
        old_group->problem == group->problem) {
      return framework::QueueingHint::kSkip;
    }
    return framework::QueueingHint::kQueue;
  };
  return {{{framework::EventResource::kPodGroup, framework::kAdd | framework::kUpdate,
            "PodGroupAddOrUpdate"},
           same_group}};
}

api::ObjectReference PodGroupSource::Reference(const std::string& namespace_,
                                               const std::string& name) const {
  api::ObjectReference ref{kApiVersion, Kind(), namespace_, name, "", ""};
  if (auto group = informer_.store().Get(namespace_ + "/" + name)) {
    ref.uid = group->meta.uid;
    ref.resource_version = group->meta.resource_version;
  }
  return ref;
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
    status.schedule_start_time = FormatTime(*progress.schedule_start);
  }
  return status;
}

void PodGroupSource::WriteStatus(const std::string& namespace_, const std::string& name,
                                 const GangProgress& progress) const {
  if (client_ == nullptr) return;
  auto group = informer_.store().Get(namespace_ + "/" + name);
  if (!group) return;
  // Label values are [A-Za-z0-9._-]: only the key's "/" and the "=" need escaping. Served from
  // the apiserver's cache (resourceVersion=0) rather than read through from etcd.
  const json pods = client_->Get(client::PodsResource().Path(namespace_) +
                                 "?labelSelector=scheduling.x-k8s.io%2Fpod-group%3D" + name +
                                 "&resourceVersion=0");
  const api::PodGroupStatus status =
      StatusFor(pods, group->spec.min_member, progress, group->status);
  if (status == group->status) return;
  try {
    client_->Patch(client::PodGroupsResource().Path(namespace_, name, "status"),
                   {{"status", StatusJson(status)}}, client::PatchType::kMerge);
  } catch (const client::ApiError& e) {
    // Deleted meanwhile: nothing to keep current.
    if (e.reason() != client::ErrorReason::kNotFound) throw;
  }
}

void PodGroupSource::OnChange(
    std::function<void(const std::string& namespace_, const std::string& name)> fn) {
  using Ptr = std::shared_ptr<const api::PodGroup>;
  informer::EventHandler<api::PodGroup> handler;
  handler.on_add = [fn](const Ptr& group) { fn(group->meta.namespace_, group->meta.name); };
  handler.on_update = [fn](const Ptr&, const Ptr& group) {
    fn(group->meta.namespace_, group->meta.name);
  };
  handler.on_delete = [fn](const Ptr& group) { fn(group->meta.namespace_, group->meta.name); };
  informer_.AddEventHandler(std::move(handler));
}

}  // namespace berth::plugins::coscheduling
