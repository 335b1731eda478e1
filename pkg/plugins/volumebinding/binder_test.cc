#include "pkg/plugins/volumebinding/binder.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/informer/factory.h"
#include "pkg/plugins/volumebinding/assume_cache.h"
#include "test/testing/volumes.h"

namespace berth::plugins::volumebinding {
namespace {

using json = nlohmann::json;
using namespace volumetesting;  // NOLINT(google-build-using-namespace): test vocabulary.

std::string NameOf(const PVPtr& pv) { return pv ? pv->meta.name : "<none>"; }

TEST(FindMatchingVolume, TheSmallestVolumeThatQualifies) {
  api::NodePtr node = Node("node-a", {{"disk", "ssd"}});
  auto claim = Claim(ClaimJson("data", "local", "5Gi"));
  std::vector<PVPtr> volumes = {Volume(VolumeJson("big", "local", "20Gi")),
                                Volume(VolumeJson("fits", "local", "6Gi")),
                                Volume(VolumeJson("small", "local", "4Gi"))};
  EXPECT_EQ(NameOf(FindMatchingVolume(*claim, volumes, *node, {})), "fits");
  EXPECT_EQ(NameOf(FindMatchingVolume(*claim, volumes, *node, {"fits"})), "big");
  EXPECT_EQ(NameOf(FindMatchingVolume(*claim, volumes, *node, {"fits", "big"})), "<none>");
}

TEST(FindMatchingVolume, EachRequirementRulesVolumesOut) {
  api::NodePtr node = Node("node-a");
  json claim_json = ClaimJson("data", "local", "1Gi");
  claim_json["spec"]["accessModes"] = {"ReadWriteOnce", "ReadOnlyMany"};
  claim_json["spec"]["selector"] = {{"matchLabels", {{"tier", "gold"}}}};
  auto claim = Claim(claim_json);
  auto base = [] {
    json pv = VolumeJson("pv", "local", "1Gi");
    pv["spec"]["accessModes"] = {"ReadWriteOnce", "ReadOnlyMany"};
    pv["metadata"]["labels"] = {{"tier", "gold"}};
    return pv;
  };
  ASSERT_EQ(NameOf(FindMatchingVolume(*claim, {Volume(base())}, *node, {})), "pv");
  std::vector<std::pair<std::string, json>> spoiled;
  {
    json pv = base();
    pv["spec"]["accessModes"] = {"ReadWriteOnce"};
    spoiled.emplace_back("access modes", pv);
  }
  {
    json pv = base();
    pv["metadata"]["labels"]["tier"] = "silver";
    spoiled.emplace_back("selector", pv);
  }
  {
    json pv = base();
    pv["spec"]["volumeMode"] = "Block";
    spoiled.emplace_back("volume mode", pv);
  }
  {
    json pv = base();
    pv["spec"]["volumeAttributesClassName"] = "fast-iops";
    spoiled.emplace_back("attributes class", pv);
  }
  {
    json pv = base();
    pv["spec"]["storageClassName"] = "other";
    spoiled.emplace_back("class", pv);
  }
  {
    json pv = base();
    pv["status"]["phase"] = "Released";
    spoiled.emplace_back("phase", pv);
  }
  {
    json pv = base();
    pv["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z";
    spoiled.emplace_back("deleting", pv);
  }
  {
    json pv = base();
    pv["spec"]["nodeAffinity"] = HostAffinity("node-b");
    spoiled.emplace_back("node affinity", pv);
  }
  {
    json pv = base();
    pv["spec"]["claimRef"] = {{"namespace", "ns"}, {"name", "someone-else"}};
    spoiled.emplace_back("claimed by another", pv);
  }
  for (const auto& [why, pv] : spoiled) {
    EXPECT_EQ(NameOf(FindMatchingVolume(*claim, {Volume(pv)}, *node, {})), "<none>") << why;
  }
}

TEST(FindMatchingVolume, AVolumePreBoundToTheClaimWinsOrNothingDoes) {
  api::NodePtr node = Node("node-a");
  auto claim = Claim(ClaimJson("data", "local", "1Gi"));
  json prebound = VolumeJson("prebound", "other-class", "1Gi");
  prebound["spec"]["claimRef"] = {{"namespace", "ns"}, {"name", "data"}};
  prebound["status"]["phase"] = "Pending";
  std::vector<PVPtr> volumes = {Volume(VolumeJson("available", "local", "1Gi")), Volume(prebound)};
  // Class and phase do not matter for a volume the user bound to the claim.
  EXPECT_EQ(NameOf(FindMatchingVolume(*claim, volumes, *node, {})), "prebound");
  // Pre-bound but out of the node's reach: no other volume is taken instead.
  prebound["spec"]["nodeAffinity"] = HostAffinity("node-b");
  volumes[1] = Volume(prebound);
  EXPECT_EQ(NameOf(FindMatchingVolume(*claim, volumes, *node, {})), "<none>");
  // A claimRef with another uid is another claim of the same name.
  prebound["spec"]["claimRef"]["uid"] = "uid-old";
  prebound["spec"].erase("nodeAffinity");
  volumes[1] = Volume(prebound);
  EXPECT_EQ(NameOf(FindMatchingVolume(*claim, volumes, *node, {})), "available");
}

TEST(AssumeCache, AnAssumptionLastsUntilTheInformerMovesOn) {
  informer::SharedInformerFactory informers(nullptr);
  auto& pvs = informers.For<api::PersistentVolume>();
  auto cache = PVCache::New(pvs, "persistentvolumes",
                            [](const api::PersistentVolume& pv) { return pv.StorageClassName(); });
  pvs.Upsert(Volume(VolumeJson("pv-a", "local", "1Gi")));
  std::string error;
  ASSERT_NE(cache->Get("pv-a", &error), nullptr);
  EXPECT_EQ(cache->Get("pv-x", &error), nullptr);
  EXPECT_EQ(error, "persistentvolumes \"pv-x\" not found");

  json taken = VolumeJson("pv-a", "local", "1Gi");
  taken["spec"]["claimRef"] = {{"namespace", "ns"}, {"name", "data"}};
  ASSERT_TRUE(cache->Assume(Volume(taken), &error)) << error;
  EXPECT_TRUE(cache->Get("pv-a", nullptr)->spec.claim_ref.has_value());
  EXPECT_FALSE(cache->GetAPIObj("pv-a", nullptr)->spec.claim_ref.has_value());
  ASSERT_EQ(cache->ByIndex("local").size(), 1u);
  EXPECT_TRUE(cache->ByIndex("local")[0]->spec.claim_ref.has_value());

  // A version that is not the informer's cannot be assumed.
  json stale = taken;
  stale["metadata"]["resourceVersion"] = "19";
  EXPECT_FALSE(cache->Assume(Volume(stale), &error));
  EXPECT_EQ(error, "\"pv-a\" is out of sync (stored: 20, assume: 19)");

  // The informer's next version replaces the assumption.
  json newer = VolumeJson("pv-a", "local", "1Gi");
  newer["metadata"]["resourceVersion"] = "21";
  pvs.Upsert(Volume(newer));
  EXPECT_FALSE(cache->Get("pv-a", nullptr)->spec.claim_ref.has_value());

  // Restore drops an assumption of the same version only.
  json again = newer;
  again["spec"]["claimRef"] = {{"namespace", "ns"}, {"name", "data"}};
  ASSERT_TRUE(cache->Assume(Volume(again), &error));
  cache->Restore(*Volume(taken));
  EXPECT_TRUE(cache->Get("pv-a", nullptr)->spec.claim_ref.has_value());
  cache->Restore(*Volume(again));
  EXPECT_FALSE(cache->Get("pv-a", nullptr)->spec.claim_ref.has_value());

  // The class index follows class changes and deletes.
  json moved = newer;
  moved["spec"]["storageClassName"] = "other";
  moved["metadata"]["resourceVersion"] = "22";
  pvs.Upsert(Volume(moved));
  EXPECT_TRUE(cache->ByIndex("local").empty());
  EXPECT_EQ(cache->ByIndex("other").size(), 1u);
  pvs.Remove("pv-a");
  EXPECT_TRUE(cache->ByIndex("other").empty());
}

}  // namespace
}  // namespace berth::plugins::volumebinding
