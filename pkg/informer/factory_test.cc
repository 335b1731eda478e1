// SharedInformerFactory without an apiserver: one informer per resource, listers over it, and
// the client-less mode benchmarks and offline runs use (synced at once, filled by the caller).

#include "pkg/informer/factory.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/resources.h"

namespace berth::informer {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const api::Namespace> Namespace(const std::string& name,
                                                const std::string& label = "") {
  auto ns = std::make_shared<api::Namespace>();
  ns->meta.name = name;
  ns->meta.resource_version = "1";
  if (!label.empty()) ns->meta.labels.Set(label, "true");
  return ns;
}

std::shared_ptr<const api::PersistentVolumeClaim> Claim(const std::string& ns,
                                                        const std::string& name) {
  auto claim = std::make_shared<api::PersistentVolumeClaim>();
  claim->meta.namespace_ = ns;
  claim->meta.name = name;
  return claim;
}

TEST(SharedInformerFactory, OneInformerPerResourceCreatedOnlyWhenAskedFor) {
  SharedInformerFactory factory(nullptr);
  EXPECT_TRUE(factory.States().empty());
  Informer<api::Namespace>& first = factory.For<api::Namespace>();
  EXPECT_EQ(&first, &factory.For<api::Namespace>());
  factory.ListerFor<api::PersistentVolumeClaim>();
  auto states = factory.States();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].resource, "namespaces");
  EXPECT_EQ(states[1].resource, "persistentvolumeclaims");
}

TEST(SharedInformerFactory, ResourceNamesCarryTheirGroup) {
  SharedInformerFactory factory(nullptr);
  factory.For<api::PodDisruptionBudget>();
  factory.For<api::CSINode>();
  factory.ForCustom({"scheduling.x-k8s.io", "v1alpha1", "podgroups", true});
  std::vector<std::string> names;
  for (const auto& state : factory.States()) names.push_back(state.resource);
  EXPECT_EQ(names,
            (std::vector<std::string>{"csinodes.storage.k8s.io", "poddisruptionbudgets.policy",
                                      "podgroups.scheduling.x-k8s.io"}));
}

TEST(SharedInformerFactory, DynamicResourceAllocationKindsAreResourceK8sIoV1) {
  SharedInformerFactory factory(nullptr);
  factory.For<api::ResourceSlice>();
  factory.For<api::DeviceClass>();
  factory.For<api::ResourceClaim>();
  factory.For<api::ResourceClaimTemplate>();
  factory.For<api::DeviceTaintRule>();
  std::vector<std::string> names;
  for (const auto& state : factory.States()) names.push_back(state.resource);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "deviceclasses.resource.k8s.io", "devicetaintrules.resource.k8s.io",
                       "resourceclaims.resource.k8s.io", "resourceclaimtemplates.resource.k8s.io",
                       "resourceslices.resource.k8s.io"}));

  // Claims are namespaced and listed by namespace and name like any other object.
  auto& claims = factory.For<api::ResourceClaim>();
  claims.Upsert(std::make_shared<const api::ResourceClaim>(
      ResourceTraits<api::ResourceClaim>::Decode(nlohmann::json::parse(R"({
        "metadata": {"name": "gpu", "namespace": "ml", "resourceVersion": "5"},
        "spec": {"devices": {"requests": [
          {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}})"))));
  const auto claim = factory.ListerFor<api::ResourceClaim>().Get("ml", "gpu");
  ASSERT_NE(claim, nullptr);
  EXPECT_EQ(claim->spec.requests.at(0).exactly->device_class_name, "gpu.example.com");
}

TEST(ResourceTraits, DeviceTaintRulesAreListedOnlyWhenServed) {
  // The kind is served only behind a feature gate; the others are GA in resource.k8s.io/v1.
  ReflectorOptions options;
  ResourceTraits<api::DeviceTaintRule>::Configure(options);
  EXPECT_TRUE(options.discover);
  EXPECT_EQ(ResourceTraits<api::DeviceTaintRule>::Resource().Path(),
            "/apis/resource.k8s.io/v1/devicetaintrules");
  EXPECT_FALSE(ResourceTraits<api::ResourceSlice>::Resource().namespaced);
  EXPECT_FALSE(ResourceTraits<api::DeviceClass>::Resource().namespaced);
  EXPECT_TRUE(ResourceTraits<api::ResourceClaimTemplate>::Resource().namespaced);
}

TEST(ResourceTraits, OnlyThePodWatchRidesTheConnectionOfTheBindings) {
  ReflectorOptions pods;
  ResourceTraits<api::Pod>::Configure(pods);
  EXPECT_TRUE(pods.busy_watch) << "every binding comes back as a pod event";
  ReflectorOptions taint_rules;
  ResourceTraits<api::DeviceTaintRule>::Configure(taint_rules);
  EXPECT_FALSE(taint_rules.busy_watch);
}

TEST(SharedInformerFactory, AResourceAskedForAsAnotherTypeIsRefused) {
  SharedInformerFactory factory(nullptr);
  factory.For<api::Namespace>();
  EXPECT_THROW(factory.ForCustom(client::NamespacesResource()), std::logic_error);
}

TEST(SharedInformerFactory, WithoutAClientInformersAreSyncedAndHoldWhatIsPutIn) {
  SharedInformerFactory factory(nullptr);
  auto& informer = factory.For<api::Namespace>();
  factory.Start();
  EXPECT_TRUE(factory.WaitForCacheSync(1ms));
  EXPECT_TRUE(factory.HasSynced());
  std::vector<std::string> seen;
  EventHandler<api::Namespace> handler;
  handler.on_add = [&](const auto& ns) { seen.push_back("add " + ns->meta.name); };
  handler.on_update = [&](const auto&, const auto& ns) {
    seen.push_back("update " + ns->meta.name);
  };
  handler.on_delete = [&](const auto& ns) { seen.push_back("delete " + ns->meta.name); };
  informer.AddEventHandler(handler);
  informer.Upsert(Namespace("a"));
  informer.Upsert(Namespace("a", "team"));
  informer.Remove("a");
  informer.Remove("never-there");
  EXPECT_EQ(seen, (std::vector<std::string>{"add a", "update a", "delete a"}));
}

TEST(Lister, GetsByNamespaceAndNameAndListsOneNamespace) {
  SharedInformerFactory factory(nullptr);
  auto& claims = factory.For<api::PersistentVolumeClaim>();
  claims.Upsert(Claim("ns1", "data"));
  claims.Upsert(Claim("ns1", "logs"));
  claims.Upsert(Claim("ns2", "data"));
  auto lister = factory.ListerFor<api::PersistentVolumeClaim>();
  ASSERT_NE(lister.Get("ns2", "data"), nullptr);
  EXPECT_EQ(lister.Get("ns2", "data")->meta.namespace_, "ns2");
  EXPECT_EQ(lister.Get("ns3", "data"), nullptr);
  EXPECT_EQ(lister.List().size(), 3u);
  EXPECT_EQ(lister.List("ns1").size(), 2u);
  auto named_data =
      lister.ListIf([](const api::PersistentVolumeClaim& c) { return c.meta.name == "data"; });
  EXPECT_EQ(named_data.size(), 2u);

  auto& namespaces = factory.For<api::Namespace>();
  namespaces.Upsert(Namespace("ns1", "team"));
  auto ns = factory.ListerFor<api::Namespace>().Get("ns1");
  ASSERT_NE(ns, nullptr);
  EXPECT_TRUE(ns->meta.labels.Contains("team"));
}

}  // namespace
}  // namespace berth::informer
