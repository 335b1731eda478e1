#include "test/outoftree/namespace_label_gate.h"

#include <stdexcept>

#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"

namespace berth::example {

framework::Status NamespaceLabelGate::PreFilter(framework::CycleState&, const api::Pod& pod,
                                                const std::vector<framework::NodeInfoPtr>&,
                                                framework::PreFilterResult*) {
  const api::NamespacePtr ns = namespaces_.Get(pod.meta.namespace_);
  if (ns && Admits(*ns)) return {};
  return framework::Status::Unresolvable("namespace " + pod.meta.namespace_ + " lacks label " +
                                         label_);
}

std::vector<framework::ClusterEventWithHint> NamespaceLabelGate::EventsToRegister() const {
  return {{{framework::EventResource::kNamespace, framework::kAdd | framework::kUpdate, ""},
           [this](const api::Pod& pod, const framework::EventObjects& event) {
             const api::NamespacePtr ns = event.NewAs<api::Namespace>();
             return ns && ns->meta.name == pod.meta.namespace_ && Admits(*ns)
                        ? framework::QueueingHint::kQueue
                        : framework::QueueingHint::kSkip;
           }}};
}

framework::PluginPtr NewNamespaceLabelGate(const nlohmann::json& args, framework::Handle& handle) {
  if (!args.is_object() || !args.contains("label") || !args["label"].is_string() ||
      args["label"].get<std::string>().empty()) {
    throw std::invalid_argument("label: required, a namespace label key");
  }
  return std::make_shared<NamespaceLabelGate>(
      args["label"].get<std::string>(), handle.SharedInformerFactory().ListerFor<api::Namespace>());
}

namespace {
const plugins::registry::Registration kRegistration(std::string(kNamespaceLabelGateName),
                                                    NewNamespaceLabelGate);
}  // namespace

}  // namespace berth::example
