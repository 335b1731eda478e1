// Informers of the resources plugins read besides pods and nodes, made by SharedInformerFactory
// as a plugin's lister would make them, against the real apiserver: the first list, watched adds,
// updates and deletes, a relist after 410, and a Forbidden list reported as the informer's error.

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/client/client.h"
#include "pkg/informer/factory.h"
#include "test/testing/cluster.h"
#include "test/testing/stale_watch_client.h"

namespace berth::informer {
namespace {

using namespace std::chrono_literals;
using testing::AdminClient;
using testing::Eventually;
using testing::TestNamespace;

// The keys the handlers saw, per kind of event.
template <typename T>
class Seen {
 public:
  EventHandler<T> Handler() {
    EventHandler<T> h;
    h.on_add = [this](const auto& o) { Record(&added_, o->meta.Key()); };
    h.on_update = [this](const auto&, const auto& o) { Record(&updated_, o->meta.Key()); };
    h.on_delete = [this](const auto& o) { Record(&deleted_, o->meta.Key()); };
    return h;
  }
  bool Added(const std::string& key) { return Has(added_, key); }
  bool Updated(const std::string& key) { return Has(updated_, key); }
  bool Deleted(const std::string& key) { return Has(deleted_, key); }

 private:
  void Record(std::vector<std::string>* into, const std::string& key) {
    std::lock_guard lock(mu_);
    into->push_back(key);
  }
  bool Has(const std::vector<std::string>& list, const std::string& key) {
    std::lock_guard lock(mu_);
    return std::find(list.begin(), list.end(), key) != list.end();
  }
  std::mutex mu_;
  std::vector<std::string> added_, updated_, deleted_;
};

// Creates "<prefix>-a" before the informer starts and "<prefix>-b" after it synced, labels b,
// deletes a; the informer must list a, then see b added and updated and a deleted, and its store
// must hold b with the label. `manifest(name)` builds a valid object; `ns` is empty for
// cluster-scoped resources. A plain delete: the controller-manager finishes it where a finalizer
// holds the object (the garbage collector for an orphaning delete, the pvc- and pv-protection
// controllers for a claim or volume nothing uses, the namespace controller for a namespace).
template <typename T>
void ListsAndWatches(const client::Resource& resource, const std::string& ns,
                     const std::function<nlohmann::json(const std::string& name)>& manifest) {
  auto client = AdminClient();
  const std::string prefix = "inf-" + testing::UniqueSuffix();
  const std::string collection = resource.Path(ns);
  auto key = [&](const std::string& name) { return ns.empty() ? name : ns + "/" + name; };
  struct Cleanup {
    std::shared_ptr<client::Client> client;
    std::vector<std::string> paths;
    ~Cleanup() {
      for (const auto& path : paths) {
        try {
          client->Delete(path);
        } catch (const std::exception&) {
        }
      }
    }
  } cleanup{client, {resource.Path(ns, prefix + "-a"), resource.Path(ns, prefix + "-b")}};

  client->Post(collection, manifest(prefix + "-a"));
  SharedInformerFactory factory(client);
  Informer<T>& informer = factory.For<T>();
  Seen<T> seen;
  informer.AddEventHandler(seen.Handler());
  factory.Start();
  ASSERT_TRUE(factory.WaitForCacheSync(30s)) << informer.reflector().last_error();
  // The first list is served from the apiserver's watch cache (resourceVersion "0"), which may
  // not hold an object created a moment before; the watch then delivers it.
  EXPECT_TRUE(Eventually([&] { return seen.Added(key(prefix + "-a")); }, 20s));
  EXPECT_NE(factory.ListerFor<T>().Get(ns, prefix + "-a"), nullptr);

  client->Post(collection, manifest(prefix + "-b"));
  EXPECT_TRUE(Eventually([&] { return seen.Added(key(prefix + "-b")); }, 20s));
  client->Patch(resource.Path(ns, prefix + "-b"), {{"metadata", {{"labels", {{"seen", "yes"}}}}}},
                client::PatchType::kMerge);
  EXPECT_TRUE(Eventually([&] { return seen.Updated(key(prefix + "-b")); }, 20s));
  // A controller may update the object too (the persistentvolume-binder writes a new volume's
  // phase), so the first update seen need not be this patch: wait for the label itself.
  EXPECT_TRUE(Eventually(
      [&] {
        auto b = factory.ListerFor<T>().Get(ns, prefix + "-b");
        return b != nullptr && b->meta.labels.Find("seen") != nullptr;
      },
      20s));
  client->Delete(resource.Path(ns, prefix + "-a"));
  // A minute: the namespace controller starts on a deleted namespace only 5 s after its deletion,
  // and retries with a growing delay while an apiserver an earlier test restarted still refuses
  // it, as its authorizer catches up.
  EXPECT_TRUE(Eventually([&] { return seen.Deleted(key(prefix + "-a")); }, 60s));
  EXPECT_EQ(factory.ListerFor<T>().Get(ns, prefix + "-a"), nullptr);
}

nlohmann::json Meta(const std::string& name) { return {{"name", name}}; }

nlohmann::json PodTemplate() {
  return {{"metadata", {{"labels", {{"app", "inf"}}}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}}}}}};
}

TEST(ResourceInformers, Namespaces) {
  ListsAndWatches<api::Namespace>(client::NamespacesResource(), "", [](const std::string& name) {
    return nlohmann::json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", Meta(name)}};
  });
}

TEST(ResourceInformers, Services) {
  TestNamespace ns(AdminClient(), "inf-svc");
  ListsAndWatches<api::Service>(client::ServicesResource(), ns.name(), [](const auto& name) {
    return nlohmann::json{{"apiVersion", "v1"},
                          {"kind", "Service"},
                          {"metadata", Meta(name)},
                          {"spec", {{"selector", {{"app", "inf"}}}, {"ports", {{{"port", 80}}}}}}};
  });
}

TEST(ResourceInformers, ReplicationControllers) {
  TestNamespace ns(AdminClient(), "inf-rc");
  ListsAndWatches<api::ReplicationController>(
      client::ReplicationControllersResource(), ns.name(), [](const auto& name) {
        return nlohmann::json{
            {"apiVersion", "v1"},
            {"kind", "ReplicationController"},
            {"metadata", Meta(name)},
            {"spec",
             {{"replicas", 0}, {"selector", {{"app", "inf"}}}, {"template", PodTemplate()}}}};
      });
}

TEST(ResourceInformers, ReplicaSets) {
  TestNamespace ns(AdminClient(), "inf-rs");
  ListsAndWatches<api::ReplicaSet>(client::ReplicaSetsResource(), ns.name(), [](const auto& name) {
    return nlohmann::json{{"apiVersion", "apps/v1"},
                          {"kind", "ReplicaSet"},
                          {"metadata", Meta(name)},
                          {"spec",
                           {{"replicas", 0},
                            {"selector", {{"matchLabels", {{"app", "inf"}}}}},
                            {"template", PodTemplate()}}}};
  });
}

TEST(ResourceInformers, StatefulSets) {
  TestNamespace ns(AdminClient(), "inf-sts");
  ListsAndWatches<api::StatefulSet>(
      client::StatefulSetsResource(), ns.name(), [](const auto& name) {
        return nlohmann::json{{"apiVersion", "apps/v1"},
                              {"kind", "StatefulSet"},
                              {"metadata", Meta(name)},
                              {"spec",
                               {{"replicas", 0},
                                {"serviceName", "inf"},
                                {"selector", {{"matchLabels", {{"app", "inf"}}}}},
                                {"template", PodTemplate()}}}};
      });
}

TEST(ResourceInformers, PodDisruptionBudgets) {
  TestNamespace ns(AdminClient(), "inf-pdb");
  ListsAndWatches<api::PodDisruptionBudget>(
      client::PodDisruptionBudgetsResource(), ns.name(), [](const auto& name) {
        return nlohmann::json{
            {"apiVersion", "policy/v1"},
            {"kind", "PodDisruptionBudget"},
            {"metadata", Meta(name)},
            {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "inf"}}}}}}}};
      });
}

nlohmann::json Claim(const std::string& name) {
  return {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolumeClaim"},
      {"metadata", Meta(name)},
      {"spec",
       {{"accessModes", {"ReadWriteOnce"}}, {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
}

TEST(ResourceInformers, PersistentVolumeClaims) {
  TestNamespace ns(AdminClient(), "inf-pvc");
  ListsAndWatches<api::PersistentVolumeClaim>(client::PersistentVolumeClaimsResource(), ns.name(),
                                              Claim);
}

TEST(ResourceInformers, PersistentVolumes) {
  ListsAndWatches<api::PersistentVolume>(
      client::PersistentVolumesResource(), "", [](const auto& name) {
        return nlohmann::json{{"apiVersion", "v1"},
                              {"kind", "PersistentVolume"},
                              {"metadata", Meta(name)},
                              {"spec",
                               {{"capacity", {{"storage", "1Gi"}}},
                                {"accessModes", {"ReadWriteOnce"}},
                                {"hostPath", {{"path", "/tmp/" + name}}}}}};
      });
}

TEST(ResourceInformers, StorageClasses) {
  ListsAndWatches<api::StorageClass>(client::StorageClassesResource(), "", [](const auto& name) {
    return nlohmann::json{{"apiVersion", "storage.k8s.io/v1"},
                          {"kind", "StorageClass"},
                          {"metadata", Meta(name)},
                          {"provisioner", "example.com/inf"},
                          {"volumeBindingMode", "WaitForFirstConsumer"}};
  });
}

TEST(ResourceInformers, CSINodes) {
  ListsAndWatches<api::CSINode>(client::CSINodesResource(), "", [](const auto& name) {
    return nlohmann::json{
        {"apiVersion", "storage.k8s.io/v1"},
        {"kind", "CSINode"},
        {"metadata", Meta(name)},
        {"spec",
         {{"drivers",
           {{{"name", "inf.example.com"}, {"nodeID", name}, {"allocatable", {{"count", 1}}}}}}}}};
  });
}

TEST(ResourceInformers, CSIDrivers) {
  ListsAndWatches<api::CSIDriver>(client::CSIDriversResource(), "", [](const auto& name) {
    return nlohmann::json{{"apiVersion", "storage.k8s.io/v1"},
                          {"kind", "CSIDriver"},
                          {"metadata", Meta(name)},
                          {"spec", {{"attachRequired", false}}}};
  });
}

// A relist after 410 finds what changed while no watch was open, for a resource besides pods.
TEST(ResourceInformers, PersistentVolumeClaimsRelistAfterGone) {
  testing::RunClusterScript("restart-apiserver");  // See informer_integration_test: a 410 needs it.
  auto real = AdminClient();
  TestNamespace ns(real, "inf-pvc-gone");
  const std::string claims = client::PersistentVolumeClaimsResource().Path(ns.name());
  real->Post(claims, Claim("before"));
  // Admission gives every claim the pvc-protection finalizer, which only kube-controller-manager
  // lifts, and it may still be reconnecting after the restart: without the finalizer the delete
  // below removes the claim at once, so what the relist must miss is gone before it runs.
  real->Patch(claims + "/before", {{"metadata", {{"finalizers", nullptr}}}},
              client::PatchType::kMerge);
  auto stale = std::make_shared<testing::StaleWatchClient>(real);
  SharedInformerFactory factory(stale);
  auto& informer = factory.For<api::PersistentVolumeClaim>();
  factory.Start();
  ASSERT_TRUE(factory.WaitForCacheSync(30s)) << informer.reflector().last_error();
  ASSERT_TRUE(Eventually([&] { return stale->watching(); }, 10s));
  stale->ArmAndBreakWatch();
  real->Delete(claims + "/before");
  real->Post(claims, Claim("during"));
  ASSERT_TRUE(Eventually([&] { return informer.reflector().lists() >= 2; }, 30s))
      << informer.reflector().last_error();
  EXPECT_EQ(stale->gone_watches(), 1);
  auto lister = factory.ListerFor<api::PersistentVolumeClaim>();
  EXPECT_TRUE(Eventually(
      [&] { return lister.Get(ns.name(), "during") && !lister.Get(ns.name(), "before"); }, 30s));
}

TEST(ResourceInformers, ForbiddenListIsTheInformersErrorAndItNeverSyncs) {
  SharedInformerFactory factory(client::NewClient(testing::VariantConfig("noperms")));
  factory.For<api::PersistentVolumeClaim>();
  factory.Start();
  EXPECT_FALSE(factory.WaitForCacheSync(3s));
  auto states = factory.States();
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].resource, "persistentvolumeclaims");
  EXPECT_FALSE(states[0].synced);
  EXPECT_NE(states[0].last_error.find("forbidden"), std::string::npos) << states[0].last_error;
}

}  // namespace
}  // namespace berth::informer
