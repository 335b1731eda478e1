#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_INFORMER_SOURCE_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_INFORMER_SOURCE_H_

// What every GangSource that reads one kind of gang object through an informer shares: whether
// the API is served (discovered at start, said once in the log when not), the lookup, the events
// that requeue a gang's pods, the object events are recorded on, and change notifications. A
// source adds how a pod names its gang, how the object reads as a GangSpec, and its status.
//
// T has `meta` (api::ObjectMeta), `spec` (comparable) and `problem` (empty when usable).

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/informer/factory.h"
#include "pkg/log/log.h"
#include "pkg/plugins/coscheduling/gang_source.h"
#include "pkg/util/time.h"

namespace berth::plugins::coscheduling {

// Patches a gang object's status subresource at `path`; an object deleted meanwhile is no error.
void PatchStatus(client::Client& client, const std::string& path, const nlohmann::json& body,
                 client::PatchType type);

// What tells one gang API from another.
struct GangApi {
  std::string kind;         // "PodGroup"
  std::string api_version;  // "scheduling.x-k8s.io/v1alpha1"
  framework::EventResource resource;
  // The gang a pod names through this API, a view into the pod; empty for none.
  std::string_view (*gang_of)(const api::Pod& pod);
  // Why its gangs cannot be read while it is not served, for the pods that name one.
  std::string not_served;
  // Logged once per process when discovery finds the API not served; a warning when `warn`.
  std::string off_log;
  bool warn = false;
};

template <typename T>
class InformerSource : public GangSource {
 public:
  const std::string& Kind() const override { return api_.kind; }
  std::string_view GangOf(const api::Pod& pod) const override { return api_.gang_of(pod); }

  Lookup Get(const std::string& namespace_, const std::string& name, GangSpec* spec,
             std::string* why) const override {
    const int served = served_->load();
    if (served == 0) {
      *why = api_.not_served;
      return Lookup::kUnavailable;
    }
    if (served < 0 || !informer_.HasSynced()) {
      *why = api_.kind + "s are not listed yet";
      return Lookup::kUnavailable;
    }
    auto object = Find(namespace_, name);
    if (!object) return Lookup::kNotFound;
    *spec = GangSpec();
    Translate(*object, spec);
    spec->uid = object->meta.uid;
    // The epoch (unset) when the creation time cannot be read.
    spec->created = util::ParseRfc3339(object->meta.creation_timestamp)
                        .value_or(std::chrono::system_clock::time_point());
    spec->problem = object->problem;
    return Lookup::kFound;
  }

  std::vector<framework::ClusterEventWithHint> Events() const override {
    // Holds nothing of this object: the queue may keep hints longer than the plugin lives.
    auto same_gang = [gang_of = api_.gang_of](const api::Pod& pod,
                                              const framework::EventObjects& objects) {
      auto object = objects.NewAs<T>();
      if (!object || object->meta.namespace_ != pod.meta.namespace_ ||
          object->meta.name != gang_of(pod)) {
        return framework::QueueingHint::kSkip;
      }
      // The scheduler's own status writes change nothing a pod waits for.
      auto old_object = objects.OldAs<T>();
      if (old_object && old_object->meta.uid == object->meta.uid &&
          old_object->spec == object->spec && old_object->problem == object->problem) {
        return framework::QueueingHint::kSkip;
      }
      return framework::QueueingHint::kQueue;
    };
    return {{{api_.resource, framework::kAdd | framework::kUpdate, api_.kind + "AddOrUpdate"},
             same_gang}};
  }

  api::ObjectReference Reference(const std::string& namespace_,
                                 const std::string& name) const override {
    api::ObjectReference ref{api_.api_version, api_.kind, namespace_, name, "", ""};
    if (auto object = Find(namespace_, name)) {
      ref.uid = object->meta.uid;
      ref.resource_version = object->meta.resource_version;
    }
    return ref;
  }

  void OnChange(
      std::function<void(const std::string& namespace_, const std::string& name)> fn) override {
    using Ptr = std::shared_ptr<const T>;
    informer::EventHandler<T> handler;
    handler.on_add = [fn](const Ptr& object) { fn(object->meta.namespace_, object->meta.name); };
    handler.on_update = [fn](const Ptr&, const Ptr& object) {
      fn(object->meta.namespace_, object->meta.name);
    };
    handler.on_delete = [fn](const Ptr& object) { fn(object->meta.namespace_, object->meta.name); };
    informer_.AddEventHandler(std::move(handler));
  }

 protected:
  // Takes the informer of T from `informers`; it is listed only when discovery finds the API.
  InformerSource(informer::SharedInformerFactory& informers, GangApi api)
      : informer_(informers.For<T>()), api_(std::move(api)) {
    informer_.OnServed(
        [served = served_, message = api_.off_log, warn = api_.warn](bool is_served) {
          served->store(is_served ? 1 : 0);
          if (is_served) return;
          // Once per process and API, though every profile's plugin has a source of its own.
          static std::once_flag logged;
          std::call_once(logged, [&] { warn ? log::Warn(message) : log::Info(message); });
        });
    informer::EventHandler<T> invalid;
    auto report = [kind = api_.kind](const T& object) {
      log::Warn(kind + " is invalid: its pods are not scheduled",
                {{"object", object.meta.Key()}, {"err", object.problem}});
    };
    invalid.on_add = [report](const std::shared_ptr<const T>& object) {
      if (!object->problem.empty()) report(*object);
    };
    invalid.on_update = [report](const std::shared_ptr<const T>& old_object,
                                 const std::shared_ptr<const T>& object) {
      if (!object->problem.empty() && object->problem != old_object->problem) report(*object);
    };
    informer_.AddEventHandler(std::move(invalid));
  }

  // Fills what `object` says of its gang beyond uid, creation and problem.
  virtual void Translate(const T& object, GangSpec* spec) const = 0;

  // The object namespace/name as last listed; null when there is none.
  std::shared_ptr<const T> Find(const std::string& namespace_, const std::string& name) const {
    return informer_.store().Get(namespace_ + "/" + name);
  }

 private:
  informer::Informer<T>& informer_;
  const GangApi api_;
  // -1 until discovery answered, then 0 or 1. Shared with the informer's callback, which may
  // outlive this object.
  std::shared_ptr<std::atomic<int>> served_ = std::make_shared<std::atomic<int>>(-1);
};

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_INFORMER_SOURCE_H_
