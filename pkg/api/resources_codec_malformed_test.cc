// Every slim decoder rejects a malformed field with a DecodeError naming the field's path.

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "pkg/api/errors.h"
#include "pkg/api/resources_codec.h"
#include "test/testing/resources_testdata.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using namespace testdata;  // NOLINT(google-build-using-namespace)

// ---- Malformed fields are reported with their path ----

struct MalformedCase {
  const char* kind;
  std::function<void(const json&)> decode;
  const char* base;
  const char* pointer;  // JSON pointer of the member to replace.
  json value;           // Its replacement; a discarded value removes the member.
  const char* want_field;
};

void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.kind << " " << c.pointer; }

class MalformedFieldTest : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedFieldTest, ThrowsDecodeErrorNamingTheField) {
  const MalformedCase& c = GetParam();
  const json base = json::parse(c.base);
  // The unmodified object decodes, so the error comes from the one field changed.
  ASSERT_NO_THROW(c.decode(base));

  json object = base;
  const json::json_pointer pointer(c.pointer);
  if (c.value.is_discarded()) {
    object[pointer.parent_pointer()].erase(pointer.back());
  } else {
    object[pointer] = c.value;
  }
  try {
    c.decode(object);
    ADD_FAILURE() << c.kind << ": no DecodeError for " << c.pointer << " = " << c.value.dump();
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.field(), c.want_field) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.want_field), std::string::npos) << e.what();
  }
}

void DecodeNamespaceVoid(const json& j) { DecodeNamespace(j); }
void DecodePdbVoid(const json& j) { DecodePodDisruptionBudget(j); }
void DecodePvcVoid(const json& j) { DecodePersistentVolumeClaim(j); }
void DecodePvVoid(const json& j) { DecodePersistentVolume(j); }
void DecodeScVoid(const json& j) { DecodeStorageClass(j); }
void DecodeCsiNodeVoid(const json& j) { DecodeCSINode(j); }
void DecodeCsiDriverVoid(const json& j) { DecodeCSIDriver(j); }
void DecodeCapacityVoid(const json& j) { DecodeCSIStorageCapacity(j); }
void DecodeAttachmentVoid(const json& j) { DecodeVolumeAttachment(j); }
void DecodeServiceVoid(const json& j) { DecodeService(j); }
void DecodeRsVoid(const json& j) { DecodeReplicaSet(j); }
void DecodeSsVoid(const json& j) { DecodeStatefulSet(j); }
void DecodeRcVoid(const json& j) { DecodeReplicationController(j); }
void DecodeUnstructuredVoid(const json& j) { DecodeUnstructured(j); }

const json kRemove = json(json::value_t::discarded);

const MalformedCase kMalformedCases[] = {
    {"Namespace", DecodeNamespaceVoid, kNamespaceJson, "/metadata/labels/team", 5,
     "metadata.labels.team"},
    {"Namespace", DecodeNamespaceVoid, kNamespaceJson, "/metadata/name", kRemove, "metadata.name"},
    {"Namespace", DecodeNamespaceVoid, kNamespaceJson, "/metadata", "shop", "metadata"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/maxUnavailable", "a quarter",
     "spec.maxUnavailable"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/minAvailable", 1.5,
     "spec.minAvailable"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/selector/matchLabels",
     json::array({"checkout"}), "spec.selector.matchLabels"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/spec/selector/matchExpressions",
     json::parse(R"([{"key": "app", "operator": "Near", "values": ["a"]}])"),
     "spec.selector.matchExpressions[0].operator"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/status/disruptionsAllowed", "1",
     "status.disruptionsAllowed"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/status/expectedPods", int64_t{1} << 40,
     "status.expectedPods"},
    {"PodDisruptionBudget", DecodePdbVoid, kPdbJson, "/status/disruptedPods",
     json::array({"checkout-7c9d6b5f8-zq2x9"}), "status.disruptedPods"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/resources/requests/storage", "20Gx",
     "spec.resources.requests.storage"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/resources/requests", "20Gi",
     "spec.resources.requests"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/accessModes/1", "ReadWriteSometimes",
     "spec.accessModes[1]"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/accessModes", "ReadWriteOnce",
     "spec.accessModes"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/volumeMode", "Raw",
     "spec.volumeMode"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/volumeName", 3, "spec.volumeName"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/spec/selector", "app=db", "spec.selector"},
    {"PersistentVolumeClaim", DecodePvcVoid, kPvcJson, "/status/phase", "Gone", "status.phase"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/capacity/storage", "lots",
     "spec.capacity.storage"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/claimRef/uid", 7, "spec.claimRef.uid"},
    {"PersistentVolume", DecodePvVoid, kPvJson,
     "/spec/nodeAffinity/required/nodeSelectorTerms/0/matchExpressions/0/operator", "Like",
     "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/nodeAffinity/required/nodeSelectorTerms",
     json::object(), "spec.nodeAffinity.required.nodeSelectorTerms"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/persistentVolumeReclaimPolicy", "Keep",
     "spec.persistentVolumeReclaimPolicy"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/accessModes/0", 1, "spec.accessModes[0]"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/csi", "ebs.csi.aws.com", "spec.csi"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/csi/volumeHandle", json::object(),
     "spec.csi.volumeHandle"},
    // Object members are visited in name order, so the second source seen is "nfs".
    {"PersistentVolume", DecodePvVoid, kPvJson, "/spec/nfs",
     json::parse(R"({"server": "10.0.0.5", "path": "/exports"})"), "spec.nfs"},
    {"PersistentVolume", DecodePvVoid, kGcePdPvJson, "/spec/gcePersistentDisk/pdName", false,
     "spec.gcePersistentDisk.pdName"},
    {"PersistentVolume", DecodePvVoid, kPvJson, "/status/phase", "Lost", "status.phase"},
    {"StorageClass", DecodeScVoid, kStorageClassJson, "/volumeBindingMode", "Later",
     "volumeBindingMode"},
    {"StorageClass", DecodeScVoid, kStorageClassJson, "/provisioner", json::array(), "provisioner"},
    {"StorageClass", DecodeScVoid, kStorageClassJson,
     "/allowedTopologies/0/matchLabelExpressions/0/key", kRemove,
     "allowedTopologies[0].matchLabelExpressions[0].key"},
    {"StorageClass", DecodeScVoid, kStorageClassJson,
     "/allowedTopologies/0/matchLabelExpressions/0/values/1", 1,
     "allowedTopologies[0].matchLabelExpressions[0].values[1]"},
    {"CSINode", DecodeCsiNodeVoid, kCsiNodeJson, "/spec/drivers/0/allocatable/count", "25",
     "spec.drivers[0].allocatable.count"},
    {"CSINode", DecodeCsiNodeVoid, kCsiNodeJson, "/spec/drivers/1/name", kRemove,
     "spec.drivers[1].name"},
    {"CSINode", DecodeCsiNodeVoid, kCsiNodeJson, "/spec/drivers/0/topologyKeys", "zone",
     "spec.drivers[0].topologyKeys"},
    {"CSIDriver", DecodeCsiDriverVoid, kCsiDriverJson, "/spec/storageCapacity", "true",
     "spec.storageCapacity"},
    {"CSIDriver", DecodeCsiDriverVoid, kCsiDriverJson, "/spec/attachRequired", 0,
     "spec.attachRequired"},
    {"CSIStorageCapacity", DecodeCapacityVoid, kCsiStorageCapacityJson, "/capacity", "plenty",
     "capacity"},
    {"CSIStorageCapacity", DecodeCapacityVoid, kCsiStorageCapacityJson, "/maximumVolumeSize", true,
     "maximumVolumeSize"},
    {"CSIStorageCapacity", DecodeCapacityVoid, kCsiStorageCapacityJson,
     "/nodeTopology/matchLabels/topology.topolvm.io~1node", 1,
     "nodeTopology.matchLabels.topology.topolvm.io/node"},
    {"VolumeAttachment", DecodeAttachmentVoid, kVolumeAttachmentJson,
     "/spec/source/persistentVolumeName", json::object(), "spec.source.persistentVolumeName"},
    {"VolumeAttachment", DecodeAttachmentVoid, kVolumeAttachmentJson, "/spec/nodeName", 1,
     "spec.nodeName"},
    {"Service", DecodeServiceVoid, kServiceJson, "/spec/selector/tier", json::array(),
     "spec.selector.tier"},
    {"Service", DecodeServiceVoid, kServiceJson, "/spec", "ClusterIP", "spec"},
    {"ReplicaSet", DecodeRsVoid, kReplicaSetJson, "/spec/selector/matchLabels", "app",
     "spec.selector.matchLabels"},
    {"ReplicaSet", DecodeRsVoid, kReplicaSetJson, "/spec/replicas", 2.5, "spec.replicas"},
    {"StatefulSet", DecodeSsVoid, kStatefulSetJson, "/spec/replicas", int64_t{5000000000},
     "spec.replicas"},
    {"StatefulSet", DecodeSsVoid, kStatefulSetJson, "/spec/selector/matchExpressions/0/values",
     json::array(), "spec.selector.matchExpressions[0].values"},
    {"ReplicationController", DecodeRcVoid, kReplicationControllerJson, "/spec/selector",
     json::array({"app"}), "spec.selector"},
    {"ReplicationController", DecodeRcVoid, kReplicationControllerJson, "/spec/replicas", "4",
     "spec.replicas"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/kind", 3, "kind"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/apiVersion", json::object(),
     "apiVersion"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/metadata/name", kRemove,
     "metadata.name"},
    {"Unstructured", DecodeUnstructuredVoid, kPodGroupJson, "/metadata/annotations", "a=b",
     "metadata.annotations"},
};

INSTANTIATE_TEST_SUITE_P(AllKinds, MalformedFieldTest, testing::ValuesIn(kMalformedCases));

TEST(ResourcesCodecTest, EveryDecoderRejectsANonObject) {
  const std::function<void(const json&)> decoders[] = {
      DecodeNamespaceVoid,  DecodePdbVoid,          DecodePvcVoid,       DecodePvVoid,
      DecodeScVoid,         DecodeCsiNodeVoid,      DecodeCsiDriverVoid, DecodeCapacityVoid,
      DecodeAttachmentVoid, DecodeServiceVoid,      DecodeRsVoid,        DecodeSsVoid,
      DecodeRcVoid,         DecodeUnstructuredVoid,
  };
  for (const auto& decode : decoders) {
    for (const json& bad : {json::array(), json("pod"), json(nullptr)}) {
      try {
        decode(bad);
        ADD_FAILURE() << "accepted " << bad.dump();
      } catch (const DecodeError& e) {
        EXPECT_EQ(e.field(), "(object)") << bad.dump();
      }
    }
  }
}

}  // namespace
}  // namespace berth::api
